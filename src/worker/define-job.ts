/**
 * The typed handler registry: `defineJob` ties a job type to the zod schema
 * of its payload and the function that runs it; a worker is given a list of
 * definitions and claims only their job types.
 *
 * A job whose type no handler in the worker is registered for is never
 * claimed by that worker (the claim filters on the registered types), so it
 * waits, PENDING, for a worker that knows it. It is not failed: a rolling
 * deploy may run an old worker next to a new one.
 */
import { z } from 'zod';
import { ValidationError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { parseInput } from '../validation/parse.js';
import { nonBlank } from '../validation/primitives.js';
import type { JobContext } from './job-context.js';

export const WORKER_INVALID_JOB_DEFINITION = 'worker.invalid_job_definition';

/**
 * A job handler: receives the parsed payload and the context of this attempt,
 * returns the job's output (JSON, or undefined for none).
 */
export type JobHandler<P, O> = (payload: P, ctx: JobContext) => Promise<O> | O;

export interface JobDefinition<S extends z.ZodType = z.ZodType, O = unknown> {
  readonly jobType: string;
  /** Parses the stored payload before the handler runs; a failure dead-letters the job (`job.payload_invalid`). */
  readonly schema: S;
  readonly handler: JobHandler<z.output<S>, O>;
}

/** Any definition, whatever its payload and output types (what a worker's `handlers` list holds). */
// The handler's parameter is contravariant, so a precise definition fits only a wide one declared with `any`.
export type AnyJobDefinition = JobDefinition<z.ZodType, unknown> | JobDefinition<any, any>;

const BRAND = Symbol.for('runledger.JobDefinition');

const jobTypeSchema = z.object({ jobType: nonBlank(200) });

/**
 * Defines the handler of one job type.
 *
 * @example
 * const capture = defineJob('billing.capture', z.object({ invoiceId: z.string().uuid() }), async (payload, ctx) => {
 *   const receipt = await payments.capture(payload.invoiceId, { signal: ctx.signal });
 *   return { receiptId: receipt.id };
 * });
 * const worker = createWorker({ db: prisma, handlers: [capture] });
 */
export function defineJob<S extends z.ZodType, O>(
  jobType: string,
  schema: S,
  handler: JobHandler<z.output<S>, O>,
): JobDefinition<S, O> {
  const { jobType: type } = parseInput(jobTypeSchema, { jobType }, WORKER_INVALID_JOB_DEFINITION);
  // Duck-typed rather than `instanceof`, so a schema from another copy of zod fits.
  if (typeof (schema as { safeParseAsync?: unknown } | null)?.safeParseAsync !== 'function') {
    throw new ValidationError(WORKER_INVALID_JOB_DEFINITION, 'schema', 'Invalid schema: must be a zod schema');
  }
  if (typeof handler !== 'function') {
    throw new ValidationError(WORKER_INVALID_JOB_DEFINITION, 'handler', 'Invalid handler: must be a function');
  }
  return Object.freeze({ jobType: type, schema, handler, [BRAND]: true });
}

export function isJobDefinition(value: unknown): value is AnyJobDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** Job type -> definition; refuses a type defined twice. */
export function buildHandlerRegistry(definitions: readonly AnyJobDefinition[], code: ErrorCode): ReadonlyMap<string, AnyJobDefinition> {
  const registry = new Map<string, AnyJobDefinition>();
  definitions.forEach((definition, index) => {
    if (registry.has(definition.jobType)) {
      throw new ValidationError(code, `handlers.${index}`, `Invalid handlers.${index}: job type ${definition.jobType} has two handlers`);
    }
    registry.set(definition.jobType, definition);
  });
  return registry;
}
