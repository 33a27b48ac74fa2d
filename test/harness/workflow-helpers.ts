/** Helpers for workflow tests: drive jobs through the real queue, observe notifications. */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import {
  claimJobs,
  completeJobSuccess,
  failJob,
  noOrganizationScope,
  listWorkflowSteps,
  type ClaimedJob,
  type Db,
  type WorkflowStep,
} from '../../src/index.js';
import { WORKFLOW_RUN_TERMINAL_CHANNEL } from '../../src/db/constants.js';

export type JobOutcome = { ok: true; output?: unknown } | { ok: false; retryable?: boolean; code?: string };

/** Claims every runnable job and settles it with `decide`; returns the jobs it handled. */
export async function runRunnableJobs(
  db: Db,
  decide: (job: ClaimedJob) => JobOutcome = () => ({ ok: true, output: null }),
  workerId = 'test-worker',
): Promise<ClaimedJob[]> {
  const handled: ClaimedJob[] = [];
  for (;;) {
    const jobs = await claimJobs(db, { workerId, limit: 100, leaseSeconds: 60, markRunning: true });
    if (jobs.length === 0) return handled;
    for (const job of jobs) {
      const outcome = decide(job);
      if (outcome.ok) await completeJobSuccess(db, { ...job, output: (outcome.output ?? null) as never });
      else await failJob(db, { ...job, error: { code: outcome.code ?? 'test.failed', message: 'failed on purpose' }, retryable: outcome.retryable ?? false });
      handled.push(job);
    }
  }
}

/** Claims the runnable jobs without settling them. */
export async function claimAll(db: Db, workerId = 'test-worker'): Promise<ClaimedJob[]> {
  return claimJobs(db, { workerId, limit: 1000, leaseSeconds: 60, markRunning: true });
}

export async function stepsByKey(db: Db, workflowRunId: string): Promise<Record<string, WorkflowStep>> {
  const steps = (await listWorkflowSteps(db, { scope: { kind: 'admin' }, workflowRunId, limit: 500 })).items;
  return Object.fromEntries(steps.map((step) => [step.stepKey, step]));
}

export { noOrganizationScope };

/** A LISTEN connection on the run-terminal channel that records every payload. */
export async function listenForRunTerminal(
  url: string,
): Promise<{ received: { workflow_run_id: string; status: string }[]; close(): Promise<void>; flush(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const received: { workflow_run_id: string; status: string }[] = [];
  client.on('notification', (message) => {
    if (message.channel === WORKFLOW_RUN_TERMINAL_CHANNEL && message.payload) received.push(JSON.parse(message.payload));
  });
  await client.query(`LISTEN ${WORKFLOW_RUN_TERMINAL_CHANNEL}`);
  return {
    received,
    // A round trip on the listening connection delivers every notification committed before it.
    flush: async () => void (await client.query('SELECT 1')),
    close: () => client.end(),
  };
}

/** Resolves all waiters at once: a start line for concurrent transactions. */
export function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return async () => {
    arrived += 1;
    if (arrived === parties) release();
    await gate;
  };
}

/** A run-terminal listener for the whole test file, opened before and closed after its tests. */
export function useRunTerminalListener(url: () => string): { readonly current: Awaited<ReturnType<typeof listenForRunTerminal>> } {
  let listener: Awaited<ReturnType<typeof listenForRunTerminal>> | undefined;
  beforeAll(async () => {
    listener = await listenForRunTerminal(url());
  });
  afterAll(async () => {
    await listener?.close();
  });
  return {
    get current() {
      if (!listener) throw new Error('the listener is ready only inside tests');
      return listener;
    },
  };
}

/** Leases one job of `jobType` (the claim index's first); throws when there is none, so a test reads as the steps it takes. */
export async function claimOne(
  db: Db,
  jobType: string,
  options: { workerId?: string; markRunning?: boolean; leaseSeconds?: number } = {},
): Promise<ClaimedJob> {
  const { workerId = 'w', markRunning = false, leaseSeconds = 60 } = options;
  const [claimed] = await claimJobs(db, { workerId, jobTypes: [jobType], limit: 1, leaseSeconds, markRunning });
  if (!claimed) throw new Error(`nothing of ${jobType} to claim`);
  return claimed;
}
