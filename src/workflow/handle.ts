/**
 * Workflow run handles: read a run's status and wait for its result. Waiting
 * wakes on the run-terminal notification when a listener is given and polls
 * otherwise (polling decides; a notification only shortens the wait).
 *
 * A handle reads with a root Prisma client, never a transaction client: it is
 * used after the transaction that enqueued the run has ended, when a
 * transaction client only fails (Prisma P2028). Prisma 7 gives no way back
 * from a transaction client to its root (its `$parent` is bound to the same
 * transaction), so the caller names the root (`readWith`); the types require
 * it and a transaction client is refused before anything is written.
 */
import { z } from 'zod';
import { isTransactionClient, type Db, type PrismaClientLike, type PrismaTransactionLike } from '../client/types.js';
import { scopeSchema, type Scope } from '../db/scope.js';
import { ConflictError, NotFoundError, UnavailableError, ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { MAX_TIMER_MS, timerMs } from '../validation/primitives.js';
import type { JsonValue } from '../model/json.js';
import { abortSignalSchema } from '../validation/abort-signal.js';
import type { TypedWorkflowRunInput } from './builder.js';
import type { WorkflowRunInput } from './run-definition.js';
import { enqueueWorkflowRun, type EnqueueWorkflowRunResult } from './enqueue.js';
import { findWorkflowRun, type WorkflowRunWithLineage } from './reads.js';
import { isTerminalRunStatus, type WorkflowRunStatus } from '../model/workflow-rows.js';
import type { WorkflowRunListener } from './run-listener.js';

export const DEFAULT_RESULT_TIMEOUT_MS = 30_000;
const DEFAULT_POLL_INTERVAL_MS = 500;

/** Both feed Node timers, so both are bounded by what a timer can wait (2^31-1 ms). */
const handleOptionsSchema = z.object({
  pollIntervalMs: timerMs.min(1, 'must be at least 1').optional(),
  // Duck-typed like the signal below; checked when the handle is made, not at its first getResult (a raw TypeError before).
  listener: z
    .custom<WorkflowRunListener>(
      (v) => typeof (v as WorkflowRunListener | null)?.wake === 'function' && ['undefined', 'boolean'].includes(typeof (v as WorkflowRunListener).listening),
      {
        error: 'must be a WorkflowRunListener (createWorkflowRunListener)',
      },
    )
    .optional(),
});
const getResultOptionsSchema = z.object({
  timeoutMs: timerMs.optional(),
  signal: abortSignalSchema.optional(),
});
const INVALID = 'workflow.invalid_input';

export interface WorkflowRunHandleOptions {
  /** Wakes `getResult` as soon as the run ends; without it, `getResult` polls. */
  listener?: WorkflowRunListener;
  pollIntervalMs?: number;
}

export interface GetResultOptions {
  /** Give up after this long (default 30 s, at most 2^31-1 ms) with `workflow.result_wait_timeout`. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What `getResult` returns when the handle knows no result type: any JSON value. */
type DefaultResult<R> = unknown extends R ? JsonValue : R;

/**
 * `Result`: the result step's output type, known when the run was built
 * from definitions (`workflow(...).job('ship', ship, ...).resultStep('ship')`);
 * `getResult` then returns it and refuses a type argument that does not fit.
 */
export interface WorkflowRunHandle<Result = unknown> {
  readonly workflowRunId: string;
  /** The run with its recovery lineage (`recoveredFrom`, `recoveries`). */
  getRun(): Promise<WorkflowRunWithLineage>;
  getStatus(): Promise<WorkflowRunStatus>;
  /**
   * The result step's output once the run SUCCEEDED. Throws
   * `workflow.result_not_declared` when the run has no result step,
   * `workflow.result_missing` when the result step succeeded without output
   * (a handler that returned nothing or `null`: there is no result to give),
   * `workflow.result_unsuccessful_terminal` when it ended otherwise,
   * `workflow.result_wait_timeout` when it is still running at the deadline,
   * `workflow.result_wait_aborted` when `options.signal` aborted the wait first.
   */
  getResult<T extends Result = DefaultResult<Result> & Result>(options?: GetResultOptions): Promise<T>;
}

/**
 * A handle on an existing run. `db` must be a root client (see the module
 * comment): to read inside your own transaction, call `getWorkflowRun(tx, ...)`.
 */
export function workflowRunHandle<Result = unknown>(
  db: PrismaClientLike,
  scope: Scope,
  workflowRunId: string,
  options: WorkflowRunHandleOptions = {},
): WorkflowRunHandle<Result> {
  ensureRootClient(db, 'db');
  if (options === null || typeof options !== 'object') throw new ValidationError(INVALID, 'options', 'Expected an options object.');
  const pollIntervalMs =
    parseInput(handleOptionsSchema, { pollIntervalMs: options.pollIntervalMs, listener: options.listener }, INVALID).pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const getRun = async (): Promise<WorkflowRunWithLineage> => {
    const run = await findWorkflowRun(db, { scope, workflowRunId });
    if (!run) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId } });
    return run;
  };
  return {
    workflowRunId,
    getRun,
    getStatus: async () => (await getRun()).status,
    async getResult<T>(resultOptions: GetResultOptions = {}): Promise<T> {
      // NaN, negative, Infinity or > 2^31-1 would make the deadline never (or at once) come.
      const timeoutMs = parseInput(getResultOptionsSchema, resultOptions, INVALID, 'options').timeoutMs ?? DEFAULT_RESULT_TIMEOUT_MS;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Register for the wake-up before reading, so a notification sent
        // between the read and the wait is not missed.
        const wait = startWait(
          workflowRunId,
          options.listener,
          options.listener && options.listener.listening !== false ? Math.max(pollIntervalMs, 5_000) : pollIntervalMs,
          deadline,
          resultOptions.signal,
        );
        try {
          const run = await getRun();
          if (run.resultStepKey === null) {
            throw new ValidationError('workflow.result_not_declared', 'resultStepKey', 'This workflow run declares no result step.', {
              details: { workflowRunId },
            });
          }
          if (run.status === 'SUCCEEDED') {
            // Output null and no output are both stored as SQL NULL: either way there is no result to return.
            if (run.result === null) {
              throw new ConflictError('workflow.result_missing', `The workflow run succeeded but its result step "${run.resultStepKey}" recorded no output.`, {
                details: { workflowRunId, resultStepKey: run.resultStepKey },
              });
            }
            return run.result as T;
          }
          if (isTerminalRunStatus(run.status)) {
            throw new ConflictError('workflow.result_unsuccessful_terminal', `The workflow run ended ${run.status} without a result.`, {
              details: { workflowRunId, status: run.status },
            });
          }
          // The caller's own abort is not a timeout: it names the signal, and carries its reason as the cause.
          if (resultOptions.signal?.aborted) {
            throw new UnavailableError('workflow.result_wait_aborted', 'The wait for the workflow run to finish was aborted by options.signal.', {
              details: { workflowRunId, status: run.status },
              cause: resultOptions.signal.reason,
            });
          }
          if (Date.now() >= deadline) {
            throw new UnavailableError('workflow.result_wait_timeout', `The workflow run did not finish within ${timeoutMs} ms.`, {
              details: { workflowRunId, status: run.status },
            });
          }
          await wait.done;
        } finally {
          wait.cancel();
        }
      }
    },
  };
}

export interface EnqueueWorkflowRunHandleOptions extends WorkflowRunHandleOptions {
  /** Scope the handle reads in; default the run's organization, else no organization. */
  scope?: Scope;
  /**
   * The root client the handle reads with. Required when `db` is a
   * transaction client, so the handle keeps working after that transaction
   * commits (and reports `workflow.run_not_found` if it rolled back).
   */
  readWith?: PrismaClientLike;
}

/**
 * The parameter type of the signature a transaction client without `readWith`
 * falls to: nothing has this property, so the call fails to compile with the
 * property's name as the message.
 */
export interface TransactionClientWithoutReadWith extends PrismaTransactionLike {
  readonly 'a transaction client needs { readWith: prisma } (your root client) in the options': never;
}

export type EnqueuedWorkflowRunHandle<Result = unknown> = WorkflowRunHandle<Result> & { enqueued: EnqueueWorkflowRunResult };

/**
 * Enqueues a run and returns its handle.
 *
 * @example Inside your own transaction: the run commits with your writes, the handle outlives `tx`.
 * ```ts
 * const run = await prisma.$transaction(async (tx) => {
 *   const order = await tx.order.create({ data });
 *   return enqueueWorkflowRunHandle(tx, fulfil(order), { readWith: prisma });
 * });
 * await run.getResult({ timeoutMs: 60_000 });
 * ```
 */
export function enqueueWorkflowRunHandle<Result = unknown>(
  db: PrismaClientLike,
  input: TypedWorkflowRunInput<Result>,
  options?: EnqueueWorkflowRunHandleOptions,
): Promise<EnqueuedWorkflowRunHandle<Result>>;
export function enqueueWorkflowRunHandle<Result = unknown>(
  tx: PrismaTransactionLike,
  input: TypedWorkflowRunInput<Result>,
  options: EnqueueWorkflowRunHandleOptions & { readWith: PrismaClientLike },
): Promise<EnqueuedWorkflowRunHandle<Result>>;
/**
 * Never matches: a transaction client given without `readWith` falls to this
 * last signature, whose error the compiler reports, so it names `readWith`
 * instead of the root client's `$connect` that `tx` lacks.
 */
export function enqueueWorkflowRunHandle<Result = unknown>(
  tx: TransactionClientWithoutReadWith,
  input: TypedWorkflowRunInput<Result>,
  options?: EnqueueWorkflowRunHandleOptions,
): Promise<EnqueuedWorkflowRunHandle<Result>>;
export async function enqueueWorkflowRunHandle(
  db: Db,
  input: WorkflowRunInput,
  options: EnqueueWorkflowRunHandleOptions = {},
): Promise<EnqueuedWorkflowRunHandle> {
  if (options === null || typeof options !== 'object') throw new ValidationError(INVALID, 'options', 'Expected an options object.');
  const { readWith, scope: givenScope, ...handleOptions } = options;
  // Checked before the enqueue, so a handle that could not outlive `tx`, or bad options, are refused with nothing written.
  const reader = ensureRootClient(readWith ?? db, 'readWith');
  parseInput(handleOptionsSchema, { pollIntervalMs: handleOptions.pollIntervalMs, listener: handleOptions.listener }, INVALID);
  if (givenScope !== undefined) parseInput(z.object({ scope: scopeSchema }), { scope: givenScope }, INVALID);
  const enqueued = await enqueueWorkflowRun(db, input);
  const scope: Scope = givenScope ?? (input.organizationId ? { kind: 'organization', organizationId: input.organizationId } : { kind: 'no_organization' });
  return { ...workflowRunHandle(reader, scope, enqueued.workflowRunId, handleOptions), enqueued };
}

/** A handle's reads must not be tied to a transaction that ends before the handle does. */
function ensureRootClient(db: Db, field: string): PrismaClientLike {
  if (!isTransactionClient(db)) return db as PrismaClientLike;
  throw new ValidationError(
    'workflow.handle_requires_root_client',
    field,
    'A workflow run handle reads with a root Prisma client; a transaction client stops working when its transaction ends. Pass { readWith: prisma } when enqueueing inside a transaction.',
  );
}

/** A wait that ends on the run's notification, after `pollMs`, at the deadline, or on abort. */
function startWait(
  workflowRunId: string,
  listener: WorkflowRunListener | undefined,
  pollMs: number,
  deadline: number,
  outer: AbortSignal | undefined,
): { done: Promise<void>; cancel(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), Math.max(0, Math.min(pollMs, deadline - Date.now(), MAX_TIMER_MS)));
  const onOuterAbort = () => controller.abort();
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  const done = listener
    ? listener.wake(workflowRunId, controller.signal)
    : new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
  return {
    done,
    cancel() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
      controller.abort();
    },
  };
}
