/**
 * Waiters for run-terminal notifications, on the library's shared LISTEN
 * connection (src/notify/listen-client.ts). Notifications only wake waiters
 * early: callers still read the run from the database (polling is the
 * correctness path), so a missed notification costs latency, never
 * correctness. The shared connection reconnects forever (backoff capped at
 * 2 s) and every waiter is woken once LISTEN is back in effect, to re-read
 * the run in case its notification was sent while the connection was down.
 */
import { WORKFLOW_RUN_TERMINAL_CHANNEL } from '../db/constants.js';
import type { RunledgerError } from '../errors/runledger-error.js';
import { listen } from '../notify/listen-client.js';

export interface WorkflowRunListener {
  /** Resolves on the next terminal notification for `workflowRunId`, on a reconnect, or when `signal` aborts. */
  wake(workflowRunId: string, signal: AbortSignal): Promise<void>;
  /** False while LISTEN is not in effect (reconnecting): a waiter then polls at its own pace. */
  readonly listening?: boolean;
  close(): Promise<void>;
}

/**
 * Subscribes to the run-terminal channel. Resolves after the first attempt
 * to LISTEN, even when it failed: the listener keeps reconnecting (each
 * failure goes to `onError`, a `database.unavailable` RunledgerError for a
 * connection fault), and waiters poll meanwhile.
 */
export async function createWorkflowRunListener(options: { connectionString: string; onError?: (error: RunledgerError) => void }): Promise<WorkflowRunListener> {
  const waiters = new Map<string, Set<() => void>>();
  const wakeAll = () => {
    for (const set of [...waiters.values()]) for (const wakeUp of [...set]) wakeUp();
  };
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
    onError: (error) => options.onError?.(error),
  });
  await subscription.ready;

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
