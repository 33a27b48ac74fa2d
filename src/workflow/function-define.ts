/**
 * Durable functions (docs/concepts/durable-functions.md): `defineFunction`
 * gives a job definition the worker registers like any other (its job runs
 * the body as the `$function` step of a workflow run) and a `run(input)` that
 * builds that run for `enqueueWorkflowRun`, `enqueueWorkflowRunHandle` or
 * `enqueueOrGetActiveWorkflow`. `runFunctionAttempt` is what the worker runs
 * for each attempt of the body.
 */
import { z } from 'zod';
import { isPrismaClient, isTransactionClient, type Db, type PrismaClientLike } from '../client/types.js';
import { isRunledgerError, ValidationError } from '../errors/runledger-error.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import { continueAfter, type Continuation } from '../job/continuation.js';
import type { JobContext, JobDefinition, JobOutput, TransactionClientOf } from '../job/contract.js';
import { defineJob } from '../job/define-job.js';
import { TerminalError } from '../job/errors.js';
import { retryPolicySchema, type RetryPolicy } from '../job/retry-policy.js';
import type { JsonValue } from '../model/json.js';
import type { JsonInput } from '../validation/json-input.js';
import { parseInput } from '../validation/parse.js';
import { int32, MAX_TIMER_MS, nonBlank, positiveInt } from '../validation/primitives.js';
import { isStandardSchema, type StandardSchemaV1 } from '../validation/standard-schema.js';
import { workflow, type TypedWorkflowRunInput } from './builder.js';
import {
  FUNCTION_CHILD_CANCELED,
  FUNCTION_CHILD_FAILED,
  FUNCTION_INVALID_STEP,
  FUNCTION_NONDETERMINISTIC,
  FunctionAttempt,
  isFunctionSuspended,
  type FunctionContext,
  type TransactionalFunctionContext,
} from './function-context.js';
import { readFunctionRecord } from './function-statements.js';
import { FUNCTION_STEP_KEY } from '../model/constants.js';
import { takeClaimedFunctionRecord } from '../queue/claimed-function-record.js';

export const FUNCTION_INVALID_DEFINITION = 'workflow.invalid_function';
const FUNCTION_OUTSIDE_RUN = 'workflow.function_outside_run';

const FUNCTION = Symbol.for('runledger.DurableFunction');

/** The settings of `defineFunction`. */
export interface FunctionSettings<C extends PrismaClientLike = PrismaClientLike> {
  /**
   * The version of the body's step calls (a positive integer). Its job type becomes `name@v<version>`, so
   * runs started under another version are claimed only by workers that register that version.
   */
  version?: number;
  /** Attempts of the body (each re-execution replays the recorded steps) and their backoff. Default 5 attempts. */
  retry?: RetryPolicy;
  /** How long one attempt of the body may run, steps included. Default 300. */
  timeoutSeconds?: number;
  /** Claim order of the body's job. Default 0. */
  priority?: number;
  /** The host's root Prisma client, for `ctx.transactionalStep` (on the worker's database). */
  transaction?: C;
}

/** A start of a function run: as a workflow run's organization, idempotency key and metadata. */
export interface FunctionRunOptions {
  organizationId?: string | null;
  idempotencyKey?: string;
  metadata?: { [key: string]: JsonValue };
}

/** The result a function run stores: the body's return value as JSON. */
export type FunctionResult<O> = NonNullable<JobOutput<JobDefinition<unknown, O>>>;

/**
 * A durable function: a job definition (register it in a worker's `handlers`)
 * whose job runs the body of a function run.
 */
export interface FunctionDefinition<Payload = unknown, Output = unknown, Input = Payload> extends JobDefinition<Payload, Output, Input> {
  /** The function's name: its runs' workflow type. */
  readonly functionName: string;
  readonly version: number | undefined;
  /**
   * The workflow run that runs this function on `input` (checked against the schema now), for
   * `enqueueWorkflowRun`, `enqueueWorkflowRunHandle` (its result typed) or `enqueueOrGetActiveWorkflow`.
   */
  run(input: Input, options?: FunctionRunOptions): TypedWorkflowRunInput<FunctionResult<Output>>;
}

interface FunctionInternals {
  body: (input: unknown, ctx: TransactionalFunctionContext<unknown>) => unknown;
  transaction: PrismaClientLike | undefined;
}

const definitionSchema = z.strictObject({
  name: nonBlank(190).refine((name) => !name.includes('@'), 'must not contain @ (the version is added as @v<version>)'),
  settings: z.strictObject({
    version: positiveInt.max(1_000_000).optional(),
    retry: retryPolicySchema.optional(),
    timeoutSeconds: positiveInt.optional(),
    priority: int32.optional(),
    transaction: z.custom<PrismaClientLike>((value) => isPrismaClient(value), { error: 'must be a Prisma client' }).optional(),
  }),
});

const runOptionsSchema = z.strictObject({
  organizationId: z.string().nullable().optional(),
  idempotencyKey: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/**
 * Defines a durable function: `body` runs as ordinary async code whose
 * `ctx.step(name, fn)` calls are recorded, so a re-execution (after a crash,
 * a failed attempt or a sleep) replays them instead of calling `fn` again.
 * Refuses a blank name or bad settings with `workflow.invalid_function`
 * naming the field.
 *
 * @example
 * const checkout = defineFunction('orders.checkout', z.object({ orderId: z.string() }), async (input, ctx) => {
 *   const reserved = await ctx.step('reserve', () => inventory.reserve(input.orderId));
 *   await ctx.sleep(60_000);
 *   return ctx.step('charge', ({ idempotencyKey }) => payments.charge(input.orderId, { idempotencyKey }));
 * });
 * const worker = createWorker({ db: prisma, handlers: [checkout] });
 * const run = await enqueueWorkflowRunHandle(prisma, checkout.run({ orderId }));
 */
export function defineFunction<S extends StandardSchemaV1, O, C extends PrismaClientLike>(
  name: string,
  schema: S & NoInfer<JsonInput<StandardSchemaV1.InferInput<S>>>,
  body: (input: StandardSchemaV1.InferOutput<S>, ctx: TransactionalFunctionContext<TransactionClientOf<NoInfer<C>>>) => Promise<O> | O,
  settings: FunctionSettings<C> & { transaction: C },
): FunctionDefinition<StandardSchemaV1.InferOutput<S>, O, StandardSchemaV1.InferInput<S>>;
/** A durable function without transactional steps (see the overload above). */
export function defineFunction<S extends StandardSchemaV1, O>(
  name: string,
  schema: S & NoInfer<JsonInput<StandardSchemaV1.InferInput<S>>>,
  body: (input: StandardSchemaV1.InferOutput<S>, ctx: FunctionContext) => Promise<O> | O,
  settings?: Omit<FunctionSettings, 'transaction'>,
): FunctionDefinition<StandardSchemaV1.InferOutput<S>, O, StandardSchemaV1.InferInput<S>>;
export function defineFunction<S extends StandardSchemaV1, O>(
  name: string,
  schema: S & NoInfer<JsonInput<StandardSchemaV1.InferInput<S>>>,
  body: (input: StandardSchemaV1.InferOutput<S>, ctx: never) => Promise<O> | O,
  settings: FunctionSettings = {},
): FunctionDefinition<StandardSchemaV1.InferOutput<S>, O, StandardSchemaV1.InferInput<S>> {
  const parsed = parseInput(definitionSchema, { name, settings }, FUNCTION_INVALID_DEFINITION);
  if (!isStandardSchema(schema)) {
    throw new ValidationError(
      FUNCTION_INVALID_DEFINITION,
      'schema',
      'Invalid schema: must implement Standard Schema v1 (zod 3.24+, zod 4, valibot, arktype, ...)',
    );
  }
  if (typeof body !== 'function') throw new ValidationError(FUNCTION_INVALID_DEFINITION, 'body', 'Invalid body: must be a function');
  if (parsed.settings.transaction && isTransactionClient(parsed.settings.transaction)) {
    throw new ValidationError(
      FUNCTION_INVALID_DEFINITION,
      'settings.transaction',
      'Invalid settings.transaction: must be a root Prisma client, not a transaction client',
    );
  }
  const jobType = parsed.settings.version === undefined ? parsed.name : `${parsed.name}@v${parsed.settings.version}`;
  // The body's job: a plain definition (no `transaction`: each transactional step opens its own), whose
  // handler only the worker can run, since a body needs the worker's database and lease (runFunctionAttempt).
  const job = defineJob(
    jobType,
    schema,
    () => {
      throw new TerminalError('A durable function runs only on a runledger worker (register it in createWorker handlers).', {
        code: FUNCTION_OUTSIDE_RUN,
      });
    },
    {
      ...(settings.retry === undefined ? {} : { retry: settings.retry }),
      ...(settings.timeoutSeconds === undefined ? {} : { timeoutSeconds: settings.timeoutSeconds }),
      ...(settings.priority === undefined ? {} : { priority: settings.priority }),
    },
  );
  const internals: FunctionInternals = { body: body as unknown as FunctionInternals['body'], transaction: parsed.settings.transaction };
  const definition = {
    ...job,
    functionName: parsed.name,
    version: parsed.settings.version,
    run(input: unknown, options: FunctionRunOptions = {}) {
      const given = parseInput(runOptionsSchema, options ?? {}, 'workflow.invalid_input', 'options');
      let builder = workflow(parsed.name, (given.metadata ?? {}) as { [key: string]: JsonValue })
        .job(FUNCTION_STEP_KEY, definition as FunctionDefinition, input, { allowContinuation: true })
        .resultStep(FUNCTION_STEP_KEY)
        .organization(given.organizationId ?? null);
      if (given.idempotencyKey !== undefined) builder = builder.idempotencyKey(given.idempotencyKey);
      return builder.build();
    },
    [FUNCTION]: internals,
  };
  return Object.freeze(definition) as unknown as FunctionDefinition<StandardSchemaV1.InferOutput<S>, O, StandardSchemaV1.InferInput<S>>;
}

function internalsOf(definition: unknown): FunctionInternals | undefined {
  return typeof definition === 'object' && definition !== null ? (definition as { [FUNCTION]?: FunctionInternals })[FUNCTION] : undefined;
}

/** True for a definition made by `defineFunction`. */
export function isFunctionDefinition(definition: unknown): definition is FunctionDefinition {
  return internalsOf(definition) !== undefined;
}

/** Codes a body's uncaught RunledgerError dead-letters with: retrying the same code cannot help. */
const TERMINAL_CODES = new Set<string>([FUNCTION_INVALID_STEP, FUNCTION_NONDETERMINISTIC, FUNCTION_CHILD_FAILED, FUNCTION_CHILD_CANCELED]);

/**
 * One attempt of a function's body (the worker runs it instead of the job's
 * handler): one read of the record, the body, then the attempt's outcome:
 * the body's value, a continuation until the earliest sleep asked for, or a
 * failure (a divergence from the record dead-letters, whatever the body did).
 */
export async function runFunctionAttempt(definition: FunctionDefinition, payload: unknown, job: JobContext, db: Db, lease: ClaimedJob): Promise<unknown> {
  const internals = internalsOf(definition)!;
  if (job.workflowRunId === null) {
    throw new TerminalError('A durable function runs as a workflow run: start it with enqueueWorkflowRun(db, fn.run(input)).', {
      code: FUNCTION_OUTSIDE_RUN,
    });
  }
  // The claim read the record (claimed-function-record.ts); a job claimed some other way reads it here.
  const claimed = takeClaimedFunctionRecord(lease);
  const record = claimed ? { steps: claimed.steps, dbNow: Date.now() + claimed.clockOffset } : await readFunctionRecord(db, job.workflowRunId);
  const attempt = new FunctionAttempt({ db, lease, job, workflowRunId: job.workflowRunId, record, transaction: internals.transaction });
  let result: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    result = { ok: true, value: await internals.body(payload, attempt.context) };
  } catch (error) {
    result = { ok: false, error };
  }
  // Steps started beside a failed or suspended one finish (and record) before the attempt ends.
  await attempt.settle();
  await attempt.endAnnouncements(result.ok && !attempt.diverged && attempt.suspendUntil === undefined);
  if (attempt.diverged) throw terminal(attempt.diverged);
  if (attempt.suspendUntil !== undefined) return sleepContinuation(attempt.suspendUntil - attempt.dbNow());
  if (!result.ok) {
    if (isFunctionSuspended(result.error)) throw new TerminalError('A durable function was suspended without a sleep.', { code: FUNCTION_NONDETERMINISTIC });
    if (isRunledgerError(result.error) && TERMINAL_CODES.has(result.error.code)) throw terminal(result.error);
    throw result.error;
  }
  const unreached = attempt.unreached();
  if (unreached) throw terminal(unreached);
  return result.value;
}

function terminal(error: Error & { code: string }): TerminalError {
  return new TerminalError(error.message, { code: error.code, cause: error });
}

function sleepContinuation(remainingMs: number): Continuation {
  return continueAfter(Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(remainingMs))));
}
