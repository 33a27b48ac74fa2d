/** Helpers for workflow tests: drive jobs through the real queue, observe notifications. */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { claimJobs, completeJob, failJob, noOrganizationScope, listWorkflowSteps, type ClaimedJob, type Db, type WorkflowStep } from '../../src/index.js';
import { WORKFLOW_RUN_TERMINAL_CHANNEL } from '../../src/model/constants.js';
import { newId } from '../../src/db/ids.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';

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
      if (outcome.ok) await completeJob(db, { ...job, output: (outcome.output ?? null) as never });
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

/**
 * Makes a finished job a workflow step's, as if a run had enqueued it: a run of its own, a `send` step in the
 * job's terminal status (FAILED with `smtp.down`, or SUCCEEDED with `{"sent": true}`) and the job's link to it.
 * The job <-> step link is checked at commit, so the step and the job's side of the link are one transaction.
 */
export async function attachToWorkflowStep(prisma: PrismaClient, job: { id: string; jobType: string }, status: 'FAILED' | 'SUCCEEDED'): Promise<void> {
  const runId = newId();
  const stepId = newId();
  const errorCode = status === 'FAILED' ? 'smtp.down' : null;
  const output = status === 'SUCCEEDED' ? '{"sent": true}' : null;
  await prisma.$executeRaw`INSERT INTO runledger.workflow_runs (id, workflow_type) VALUES (${runId}::uuid, 'wf')`;
  await prisma.$transaction([
    prisma.$executeRaw`
      INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, job_type, payload, status, job_id,
                                            released_at, finished_at, last_error_code, output)
      VALUES (${stepId}::uuid, ${runId}::uuid, 'send', 'JOB', ${job.jobType}, '{}'::jsonb, ${status}::runledger.workflow_step_status, ${job.id}::uuid,
              now(), now(), ${errorCode}, ${output}::jsonb)`,
    prisma.$executeRaw`UPDATE runledger.job_queue SET workflow_step_id = ${stepId}::uuid WHERE id = ${job.id}::uuid`,
  ]);
}

/**
 * A race of `parties` transactions, each on its own connection: every one has begun (run a statement) before
 * any runs `work`, so they all see the same snapshot and contend for real. Returns each `work`'s result.
 */
export async function raceInTransactions<T>(
  db: { newClient(options?: { max?: number }): PrismaClient },
  parties: number,
  work: (tx: Db, index: number) => Promise<T>,
): Promise<T[]> {
  const clients = Array.from({ length: parties }, () => db.newClient({ max: 1 }));
  await Promise.all(clients.map((client) => client.$connect()));
  const arrive = barrier(parties);
  return Promise.all(
    clients.map((client, index) =>
      client.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT 1`;
        await arrive();
        return work(tx, index);
      }),
    ),
  );
}
