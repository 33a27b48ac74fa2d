/**
 * Workflow run handles: read a run's status and wait for its result. Waiting
 * wakes on the run-terminal notification when a listener is given and polls
 * otherwise (polling decides; a notification only shortens the wait).
 */
import { z } from 'zod';
import { assertDb, type Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { ConflictError, NotFoundError, UnavailableError, ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { MAX_TIMER_MS, timerMs, type JsonValue } from '../validation/primitives.js';
import type { WorkflowRunInput } from './definition.js';
import { enqueueWorkflowRun, type EnqueueWorkflowRunResult } from './enqueue.js';
import { findWorkflowRun } from './reads.js';
import { isTerminalRunStatus, type WorkflowRun, type WorkflowRunStatus } from './rows.js';
import type { WorkflowRunListener } from './run-listener.js';

export const DEFAULT_RESULT_TIMEOUT_MS = 30_000;
const DEFAULT_POLL_INTERVAL_MS = 500;

/** Both feed Node timers, so both are bounded by what a timer can wait (2^31-1 ms). */
const handleOptionsSchema = z.object({ pollIntervalMs: timerMs.min(1, 'must be at least 1').optional() });
const getResultOptionsSchema = z.object({
  timeoutMs: timerMs.optional(),
  // Duck-typed: a signal from another realm or a polyfill is still a signal.
  signal: z
    .custom<AbortSignal>((v) => typeof (v as AbortSignal | null)?.addEventListener === 'function' && typeof (v as AbortSignal).aborted === 'boolean', {
      error: 'must be an AbortSignal',
    })
    .optional(),
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

export interface WorkflowRunHandle {
  readonly workflowRunId: string;
  getRun(): Promise<WorkflowRun>;
  getStatus(): Promise<WorkflowRunStatus>;
  /**
   * The result step's output once the run SUCCEEDED. Throws
   * `workflow.result_not_declared` when the run has no result step,
   * `workflow.result_missing` when the result step succeeded without output
   * (a handler that returned nothing or `null`: there is no result to give),
   * `workflow.result_unsuccessful_terminal` when it ended otherwise,
   * `workflow.result_wait_timeout` when it is still running at the deadline.
   */
  getResult<T extends JsonValue | null = JsonValue | null>(options?: GetResultOptions): Promise<T>;
}

export function workflowRunHandle(db: Db, scope: Scope, workflowRunId: string, options: WorkflowRunHandleOptions = {}): WorkflowRunHandle {
  assertDb(db);
  const pollIntervalMs = parseInput(handleOptionsSchema, { pollIntervalMs: options.pollIntervalMs }, INVALID).pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const getRun = async (): Promise<WorkflowRun> => {
    const run = await findWorkflowRun(db, scope, workflowRunId);
    if (!run) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId } });
    return run;
  };
  return {
    workflowRunId,
    getRun,
    getStatus: async () => (await getRun()).status,
    async getResult<T extends JsonValue | null>(resultOptions: GetResultOptions = {}): Promise<T> {
      // NaN, negative, Infinity or > 2^31-1 would make the deadline never (or at once) come.
      const timeoutMs = parseInput(getResultOptionsSchema, resultOptions, INVALID).timeoutMs ?? DEFAULT_RESULT_TIMEOUT_MS;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Register for the wake-up before reading, so a notification sent
        // between the read and the wait is not missed.
        const wait = startWait(workflowRunId, options.listener, options.listener ? Math.max(pollIntervalMs, 5_000) : pollIntervalMs, deadline, resultOptions.signal);
        try {
          const run = await getRun();
          if (run.resultStepKey === null) {
            throw new ValidationError('workflow.result_not_declared', 'resultStepKey', 'This workflow run declares no result step.', { details: { workflowRunId } });
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
          if (Date.now() >= deadline || resultOptions.signal?.aborted) {
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

/** Enqueues a run and returns its handle. */
export async function enqueueWorkflowRunHandle(
  db: Db,
  input: WorkflowRunInput,
  options: WorkflowRunHandleOptions & { scope?: Scope } = {},
): Promise<WorkflowRunHandle & { enqueued: EnqueueWorkflowRunResult }> {
  const enqueued = await enqueueWorkflowRun(db, input);
  const scope: Scope = options.scope ?? (input.organizationId ? { kind: 'organization', organizationId: input.organizationId } : { kind: 'global' });
  return { ...workflowRunHandle(db, scope, enqueued.workflowRunId, options), enqueued };
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
