import { z } from 'zod';
import { ValidationError } from '../errors/runledger-error.js';
import { resolveBackoff, retryPolicySchema } from './retry-policy.js';
import { isStandardSchema, type StandardSchemaV1 } from '../validation/standard-schema.js';
import type { JsonInput } from '../validation/json-input.js';
import type { ErrorCode } from '../errors/codes.js';
import { parseInput } from '../validation/parse.js';
import { concurrencyLimit, fairWeight, int32, ratePeriodMs, rateStarts, MAX_TIMER_MS, nonBlank, positiveInt, requestKey } from '../validation/primitives.js';
import type {
  AnyJobDefinition,
  JobDefinition,
  JobHandler,
  JobSettings,
  TransactionClientOf,
  TransactionalJobContext,
  TransactionalJobSettings,
} from './contract.js';
import { isPrismaClient, isTransactionClient, type PrismaClientLike } from '../client/types.js';

export const WORKER_INVALID_JOB_DEFINITION = 'worker.invalid_job_definition';

const BRAND = Symbol.for('runledger.JobDefinition');

const definitionSchema = z.strictObject({
  jobType: nonBlank(200),
  settings: z.strictObject({
    retry: retryPolicySchema.optional(),
    timeoutSeconds: positiveInt.optional(),
    priority: int32.optional(),
    concurrency: z
      .strictObject({
        key: z.union([
          requestKey,
          z.custom<(payload: unknown) => string>((value) => typeof value === 'function', { error: 'must be a non-blank string or a function of the payload' }),
        ]),
        limit: concurrencyLimit,
      })
      .optional(),
    rateLimit: z
      .strictObject({
        key: z.union([
          requestKey,
          z.custom<(payload: unknown) => string>((value) => typeof value === 'function', { error: 'must be a non-blank string or a function of the payload' }),
        ]),
        limit: rateStarts,
        periodMs: ratePeriodMs,
        burst: rateStarts.optional(),
      })
      .optional(),
    fairness: z
      .strictObject({
        key: z.union([
          requestKey,
          z.custom<(payload: unknown, job: { organizationId: string | null }) => string>((value) => typeof value === 'function', {
            error: 'must be a non-blank string or a function of the payload and job',
          }),
        ]),
        weight: fairWeight.optional(),
      })
      .optional(),
    transaction: z.custom<PrismaClientLike>((value) => isPrismaClient(value), { error: 'must be a Prisma client' }).optional(),
  }),
});

/**
 * Defines a transactional job type: every attempt runs inside an interactive
 * transaction of `settings.transaction` (the host's root Prisma client), the
 * handler gets it as `ctx.tx`, typed as that client's own transaction client,
 * and its writes commit with the job's outcome (output, trail, a workflow
 * step's dependents and run status, whatever it enqueues through `ctx.tx`),
 * in one commit whose lease fence is checked inside it. A throw, a timeout, a
 * lost lease or a crash rolls them back; the failure is recorded after, in a
 * transaction of its own.
 *
 * @example
 * const markPaid = defineJob('orders.mark_paid', z.object({ orderId: z.string() }), async (payload, ctx) => {
 *   await ctx.tx.order.update({ where: { id: payload.orderId }, data: { status: 'PAID' } });
 *   await enqueueJob(ctx.tx, sendReceipt, { orderId: payload.orderId }); // commits with it
 * }, { transaction: prisma, timeoutSeconds: 30 });
 */
export function defineJob<S extends StandardSchemaV1, O, C extends PrismaClientLike>(
  jobType: string,
  schema: S & NoInfer<JsonInput<StandardSchemaV1.InferInput<S>>>,
  handler: (payload: StandardSchemaV1.InferOutput<S>, ctx: TransactionalJobContext<TransactionClientOf<C>>) => Promise<O> | O,
  settings: TransactionalJobSettings<C, StandardSchemaV1.InferInput<S>>,
): JobDefinition<StandardSchemaV1.InferOutput<S>, O, StandardSchemaV1.InferInput<S>>;
/**
 * Defines the handler of one job type.
 *
 * @example
 * const capture = defineJob('billing.capture', z.object({ invoiceId: z.string() }), async (payload, ctx) => {
 *   const receipt = await payments.capture(payload.invoiceId, { signal: ctx.signal });
 *   return { receiptId: receipt.id };
 * }, { retry: { maxAttempts: 8, backoff: { baseDelayMs: 5_000 } }, timeoutSeconds: 60 });
 * const worker = createWorker({ db: prisma, handlers: [capture] });
 * await enqueueJob(prisma, capture, { invoiceId }); // payload checked by the compiler
 */
export function defineJob<S extends StandardSchemaV1, O>(
  jobType: string,
  // The payload is stored as JSON: a schema whose input is not (a Date, a bigint) would fail every enqueue.
  schema: S & NoInfer<JsonInput<StandardSchemaV1.InferInput<S>>>,
  handler: JobHandler<StandardSchemaV1.InferOutput<S>, O>,
  settings?: JobSettings<StandardSchemaV1.InferInput<S>>,
): JobDefinition<StandardSchemaV1.InferOutput<S>, O, StandardSchemaV1.InferInput<S>>;
export function defineJob<S extends StandardSchemaV1, O>(
  jobType: string,
  schema: S & NoInfer<JsonInput<StandardSchemaV1.InferInput<S>>>,
  handler: (payload: StandardSchemaV1.InferOutput<S>, ctx: TransactionalJobContext<any>) => Promise<O> | O,
  settings: JobSettings & { transaction?: PrismaClientLike } = {},
): JobDefinition<StandardSchemaV1.InferOutput<S>, O, StandardSchemaV1.InferInput<S>> {
  const parsed = parseInput(definitionSchema, { jobType, settings }, WORKER_INVALID_JOB_DEFINITION);
  // Duck-typed rather than `instanceof`, so a schema from any library (or another copy of one) fits.
  if (!isStandardSchema(schema)) {
    throw new ValidationError(
      WORKER_INVALID_JOB_DEFINITION,
      'schema',
      'Invalid schema: must implement Standard Schema v1 (zod 3.24+, zod 4, valibot, arktype, ...)',
    );
  }
  if (typeof handler !== 'function') {
    throw new ValidationError(WORKER_INVALID_JOB_DEFINITION, 'handler', 'Invalid handler: must be a function');
  }
  // The worker opens the attempt's transaction on it: a `$transaction` client cannot open another.
  if (parsed.settings.transaction && isTransactionClient(parsed.settings.transaction)) {
    throw new ValidationError(
      WORKER_INVALID_JOB_DEFINITION,
      'settings.transaction',
      'Invalid settings.transaction: must be a root Prisma client, not a transaction client',
    );
  }
  return Object.freeze({
    jobType: parsed.jobType,
    schema: schema as StandardSchemaV1<StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>>,
    // One stored shape for both forms: the worker hands a transactional definition's handler a context with `tx`
    // (job-execution.ts), which is all the wider parameter type above says.
    handler: handler as JobHandler<StandardSchemaV1.InferOutput<S>, O>,
    maxAttempts: parsed.settings.retry?.maxAttempts,
    timeoutSeconds: parsed.settings.timeoutSeconds,
    priority: parsed.settings.priority,
    backoff: Object.freeze(resolveBackoff(parsed.settings.retry?.backoff)),
    concurrency: parsed.settings.concurrency === undefined ? undefined : Object.freeze({ ...parsed.settings.concurrency }),
    rateLimit: parsed.settings.rateLimit === undefined ? undefined : Object.freeze({ ...parsed.settings.rateLimit }),
    fairness: parsed.settings.fairness === undefined ? undefined : Object.freeze({ ...parsed.settings.fairness }),
    transaction: parsed.settings.transaction,
    [BRAND]: true,
  });
}

/**
 * The fields of a definition as defineJob leaves them, for what writes them to the catalog
 * (syncJobDefinitions): the brand is a global symbol, so a spread or a hand-made object carries it too, and a
 * bad field there would otherwise reach the database as a constraint violation instead of a coded error.
 */
export const storedDefinitionSchema = z.object({
  jobType: nonBlank(200),
  schema: z.custom<StandardSchemaV1>((value) => isStandardSchema(value), { error: 'must be a Standard Schema (zod, valibot, ...)' }),
  maxAttempts: positiveInt.optional(),
  timeoutSeconds: positiveInt.optional(),
  priority: int32.optional(),
  backoff: z
    .object({ baseDelayMs: positiveInt.max(MAX_TIMER_MS), maxDelayMs: positiveInt.max(MAX_TIMER_MS) })
    .refine((b) => b.baseDelayMs <= b.maxDelayMs, { path: ['maxDelayMs'], message: 'must be at least baseDelayMs' }),
});

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
