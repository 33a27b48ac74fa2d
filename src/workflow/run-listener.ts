/**
 * One LISTEN connection on the run-terminal channel, shared by any number of
 * waiters. Notifications only wake waiters early: callers still read the run
 * from the database (polling is the correctness path), so a missed
 * notification (reconnect, listener started late) costs latency, never
 * correctness. Prisma cannot LISTEN, hence a plain `pg` client.
 */
import pg from 'pg';
import { WORKFLOW_RUN_TERMINAL_CHANNEL } from '../db/constants.js';

export interface WorkflowRunListener {
  /** Resolves on the next terminal notification for `workflowRunId`, or when `signal` aborts. */
  wake(workflowRunId: string, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export async function createWorkflowRunListener(options: { connectionString: string; onError?: (error: Error) => void }): Promise<WorkflowRunListener> {
  const waiters = new Map<string, Set<() => void>>();
  let client: pg.Client | undefined;
  let closed = false;
  let reconnectDelayMs = 100;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: options.connectionString });
    next.on('notification', (message) => {
      if (message.channel !== WORKFLOW_RUN_TERMINAL_CHANNEL || !message.payload) return;
      let runId: string | undefined;
      try {
        runId = (JSON.parse(message.payload) as { workflow_run_id?: string }).workflow_run_id;
      } catch {
        return;
      }
      for (const wakeUp of waiters.get(runId ?? '') ?? []) wakeUp();
    });
    next.on('error', (error) => {
      options.onError?.(error);
      void next.end().catch(() => undefined);
      if (client === next) client = undefined;
      if (!closed) setTimeout(() => void connect().catch((e: Error) => options.onError?.(e)), reconnectDelayMs).unref();
      reconnectDelayMs = Math.min(reconnectDelayMs * 2, 10_000);
    });
    await next.connect();
    await next.query(`LISTEN ${WORKFLOW_RUN_TERMINAL_CHANNEL}`);
    reconnectDelayMs = 100;
    if (closed) await next.end();
    else client = next;
    // Anyone waiting across a reconnect re-reads the run now.
    for (const set of waiters.values()) for (const wakeUp of set) wakeUp();
  };
  await connect();

  return {
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
      closed = true;
      for (const set of waiters.values()) for (const wakeUp of set) wakeUp();
      const current = client;
      client = undefined;
      await current?.end();
    },
  };
}
