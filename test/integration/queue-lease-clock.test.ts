/**
 * Lease fences read the clock when the row is actually written: a write that
 * waited on the job row's lock past the lease expiry is refused
 * (`job.lease_owner_mismatch`) and changes nothing, and a new expiry is
 * computed from that same clock, never from the statement's start time.
 */
import { describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  heartbeatJob,
  markJobRunning,
  releaseJob,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

async function claimOne(jobType: string, leaseSeconds: number): Promise<ClaimedJob> {
  await enqueueJob(db.prisma, { jobType, payload: {} });
  const [claimed] = await claimJobs(db.prisma, { workerId: 'w1', jobTypes: [jobType], limit: 1, leaseSeconds });
  if (!claimed) throw new Error('nothing claimed');
  return claimed;
}

interface RowSnapshot {
  status: string;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  heartbeat_at: Date | null;
  started_at: Date | null;
  progress: unknown;
  events: number;
}

async function snapshot(jobId: string): Promise<RowSnapshot> {
  const [row] = await db.prisma.$queryRaw<RowSnapshot[]>`
    SELECT status::text, attempt, lease_owner, lease_expires_at, heartbeat_at, started_at, progress,
           (SELECT count(*)::int FROM runledger.job_trail e WHERE e.job_id = jq.id) AS events
      FROM runledger.job_queue jq WHERE id = ${jobId}::uuid`;
  return row!;
}

/**
 * Holds the job row (FOR UPDATE, no change) in another transaction while `write` starts and blocks on it,
 * and lets go only once the lease has expired by the database clock. Returns what `write` settled with.
 */
async function writeAfterHeldPastExpiry<T>(jobId: string, write: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  const holder = db.newClient({ max: 1 });
  let letGo!: () => void;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const holding = holder.$transaction(
    async (tx) => {
      await tx.$queryRaw`SELECT id FROM runledger.job_queue WHERE id = ${jobId}::uuid FOR UPDATE`;
      locked();
      await released;
    },
    { timeout: 30_000 },
  );
  await isLocked;
  const outcome = write().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  // The write must be waiting on the row lock, not finished or not yet sent.
  for (;;) {
    const [row] = await db.prisma.$queryRaw<{ waiting: number }[]>`
      SELECT count(*)::int AS waiting FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%job_queue%'`;
    if (row!.waiting > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  for (;;) {
    const [row] = await db.prisma.$queryRaw<{ expired: boolean }[]>`
      SELECT lease_expires_at < clock_timestamp() - interval '100 milliseconds' AS expired FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    if (row!.expired) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  letGo();
  await holding;
  return outcome;
}

function expectMismatch(outcome: { ok: boolean; error?: unknown }): void {
  expect(outcome.ok).toBe(false);
  expect(outcome.error).toMatchObject({ code: 'job.lease_owner_mismatch' });
}

describe('lease fences use the clock at the moment of the write', () => {
  it('heartbeatJob fails on a lease that expired while it waited for the row, and saves nothing', async () => {
    const lease = await claimOne('clock.heartbeat', 1);
    const before = await snapshot(lease.jobId);
    const outcome = await writeAfterHeldPastExpiry(lease.jobId, () => heartbeatJob(db.prisma, { ...lease, save: { progress: { step: 1 } } }));
    expectMismatch(outcome);
    expect(await snapshot(lease.jobId)).toEqual(before);
  });

  it('markJobRunning fails on a lease that expired while it waited for the row, and records nothing', async () => {
    const lease = await claimOne('clock.running', 1);
    const before = await snapshot(lease.jobId);
    const outcome = await writeAfterHeldPastExpiry(lease.jobId, () => markJobRunning(db.prisma, lease));
    expectMismatch(outcome);
    expect(await snapshot(lease.jobId)).toEqual(before);
  });

  it('releaseJob fails on a lease that expired while it waited for the row, and releases nothing', async () => {
    const lease = await claimOne('clock.release', 1);
    const before = await snapshot(lease.jobId);
    const outcome = await writeAfterHeldPastExpiry(lease.jobId, () => releaseJob(db.prisma, lease));
    expectMismatch(outcome);
    expect(await snapshot(lease.jobId)).toEqual(before);
  });

  it('completeJob and failJob fail on a lease that expired while they waited for the row, and change nothing', async () => {
    const done = await claimOne('clock.complete', 1);
    const doneBefore = await snapshot(done.jobId);
    expectMismatch(await writeAfterHeldPastExpiry(done.jobId, () => completeJob(db.prisma, { ...done, output: 1 })));
    expect(await snapshot(done.jobId)).toEqual(doneBefore);
    const failed = await claimOne('clock.fail', 1);
    const failedBefore = await snapshot(failed.jobId);
    expectMismatch(await writeAfterHeldPastExpiry(failed.jobId, () => failJob(db.prisma, { ...failed, error: { code: 'x', message: 'y' }, retryable: true })));
    expect(await snapshot(failed.jobId)).toEqual(failedBefore);
  });

  it('releaseJob of a workflow job leaves its step RUNNING when the lease expired while it waited', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('clock.wf').job('a', 'clock.wf.a', {}).build());
    const [lease] = await claimJobs(db.prisma, { workerId: 'w1', jobTypes: ['clock.wf.a'], limit: 1, leaseSeconds: 1 });
    const before = await snapshot(lease!.jobId);
    const outcome = await writeAfterHeldPastExpiry(lease!.jobId, () => releaseJob(db.prisma, lease!));
    expectMismatch(outcome);
    expect(await snapshot(lease!.jobId)).toEqual(before);
    expect((await stepsByKey(db.prisma, workflowRunId)).a!.status).toBe('RUNNING');
  });

  it('a heartbeat that waited (lease still live) computes the new expiry from the time of the write', async () => {
    const lease = await claimOne('clock.extend', 3);
    const holder = db.newClient({ max: 1 });
    let letGo!: () => void;
    const released = new Promise<void>((resolve) => (letGo = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = holder.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM runledger.job_queue WHERE id = ${lease.jobId}::uuid FOR UPDATE`;
      locked();
      await released;
    });
    await isLocked;
    const renewing = heartbeatJob(db.prisma, { ...lease, leaseSeconds: 1 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const [row] = await db.prisma.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`;
    letGo();
    await holding;
    const renewed = await renewing;
    // The write happened after `row.now`; computed from the statement's start (1.5 s earlier), the new expiry
    // would already have passed by then.
    expect(renewed.leaseExpiresAt.getTime()).toBeGreaterThanOrEqual(row!.now.getTime() + 1_000);
  });
});
