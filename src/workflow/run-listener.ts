/**
 * Waiters for run-terminal notifications, on the library's shared LISTEN
 * connection (src/notify/listen-client.ts). Notifications only wake waiters
 * early: callers still read the run from the database (polling is the
 * correctness path), so a missed notification costs latency, never
 * correctness. The shared connection reconnects forever (backoff capped at
 * 2 s) and every waiter is woken once LISTEN is back in effect, to re-read
 * the run in case its notification was sent while the connection was down.
 */
import { WORKFLOW_RUN_TERMINAL_CHANNEL } from '../model/constants.js';
import { UnavailableError, ValidationError, type RunledgerError } from '../errors/runledger-error.js';
import { connectionStringProblem } from '../validation/connection-string.js';
import { listen } from '../notify/listen-client.js';

export interface WorkflowRunListener {
  /** Resolves on the next terminal notification for `workflowRunId`, on a reconnect, or when `signal` aborts. */
  wake(workflowRunId: string, signal: AbortSignal): Promise<void>;
  /** False while LISTEN is not in effect (reconnecting): a waiter then polls at its own pace. */
  readonly listening?: boolean;
  close(): Promise<void>;
}

export interface WorkflowRunListenerOptions {
  /** A postgres:// URL; the connection is shared with every other LISTEN of this process for the same URL. */
  connectionString: string;
  /** Each failure after the listener was created (a `database.unavailable` RunledgerError for a connection fault); it reconnects meanwhile. */
  onError?: (error: RunledgerError) => void;
}

/**
 * Subscribes to the run-terminal channel and resolves once LISTEN is in
 * effect, so a listener you hold has worked at least once.
 *
 * - Bad options (not an object, a connection string that is not a
 *   postgres:// URL, an `onError` that is not a function) throw
 *   `listen.invalid_options` naming the field, connecting nowhere.
 * - The first attempt failing (server unreachable, authentication refused,
 *   no such database) rejects with `listen.connection_failed` (category
 *   unavailable, the driver's error as `cause`) and leaves nothing running:
 *   retry the call when the database is back. Before, it resolved and
 *   reconnected for ever with no error to a caller that gave no `onError`.
 * - Once created, it never gives up: a lost connection reconnects forever
 *   with capped backoff (at most 2 s apart), each failure goes to `onError`,
 *   `listening` is false meanwhile and waiters poll at their own pace.
 *
 * @example
 * const listener = await createWorkflowRunListener({ connectionString: process.env.DATABASE_URL!, onError: (e) => log.warn(e) });
 * const result = await workflowRunHandle(prisma, scope, runId, { listener }).getResult();
 * await listener.close();
 */
export async function createWorkflowRunListener(options: WorkflowRunListenerOptions): Promise<WorkflowRunListener> {
  validateOptions(options);
  const waiters = new Map<string, Set<() => void>>();
  const wakeAll = () => {
    for (const set of [...waiters.values()]) for (const wakeUp of [...set]) wakeUp();
  };
  let created = false;
  let firstError: RunledgerError | undefined;
  const subscription = listen(options.connectionString, WORKFLOW_RUN_TERMINAL_CHANNEL, {
    onNotification(payload) {
      let runId: unknown;
      try {
        runId = (JSON.parse(payload) as { workflow_run_id?: unknown }).workflow_run_id;
      } catch {
        return;
      }
      if (typeof runId !== 'string') return;
      for (const wakeUp of [...(waiters.get(runId) ?? [])]) wakeUp();
    },
    // Anyone waiting across a reconnect re-reads the run now.
    onListening: wakeAll,
    // Before the create call has settled, a failure is its rejection, not a report.
    onError: (error) => {
      if (created) options.onError?.(error);
      else firstError ??= error;
    },
  });
  if (!(await subscription.ready)) {
    await subscription.close();
    throw new UnavailableError('listen.connection_failed', 'Could not connect to the database to listen for workflow runs.', {
      internalMessage: `create workflow run listener: ${firstError?.internalMessage ?? 'the first LISTEN attempt failed'}`,
      cause: firstError,
    });
  }
  created = true;

  return {
    get listening() {
      return subscription.listening;
    },
    wake(workflowRunId, signal) {
      return new Promise<void>((resolve) => {
        const set = waiters.get(workflowRunId) ?? new Set();
        waiters.set(workflowRunId, set);
        const done = () => {
          set.delete(done);
          if (set.size === 0) waiters.delete(workflowRunId);
          signal.removeEventListener('abort', done);
          resolve();
        };
        set.add(done);
        if (signal.aborted) done();
        else signal.addEventListener('abort', done, { once: true });
      });
    },
    async close() {
      wakeAll();
      await subscription.close();
    },
  };
}

function validateOptions(options: unknown): asserts options is WorkflowRunListenerOptions {
  const invalid = (field: string, message: string) => new ValidationError('listen.invalid_options', field, `Invalid ${field}: ${message}.`);
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw invalid('options', 'must be an object with connectionString');
  const { connectionString, onError } = options as Record<string, unknown>;
  const problem = connectionStringProblem(connectionString);
  if (problem) throw invalid('connectionString', problem);
  if (onError !== undefined && typeof onError !== 'function') throw invalid('onError', 'must be a function');
}
