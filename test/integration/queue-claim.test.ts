import { beforeEach, describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob, enqueueJobs, type ClaimedJob } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

beforeEach(async () => {
  await db.prisma.$executeRaw`TRUNCATE runledger.job_queue CASCADE`;
});

describe('claimJobs', () => {
  it('leases a job with its lease identity, payload and settings', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'email.send', payload: { to: 'x' }, timeoutSeconds: 45, maxAttempts: 3 });
    const before = Date.now();
    const [claimed] = await claimJobs(db.prisma, { workerId: 'worker-1', limit: 10, leaseSeconds: 60 });
    expect(claimed).toMatchObject({
      jobId,
      runNumber: 1,
      attempt: 1,
      workerId: 'worker-1',
      jobType: 'email.send',
      organizationId: null,
      payload: { to: 'x' },
      checkpoint: null,
      progress: null,
      timeoutSeconds: 45,
      maxAttempts: 3,
      workflowManaged: false,
    });
    expect(claimed!.leaseExpiresAt.getTime()).toBeGreaterThan(before + 55_000);
    expect(claimed!.leaseExpiresAt.getTime()).toBeLessThan(before + 65_000);
    const [row] = await db.prisma.$queryRaw<{ status: string; lease_owner: string; heartbeat: boolean; started: boolean }[]>`
      SELECT status, lease_owner, heartbeat_at IS NOT NULL AS heartbeat, started_at IS NOT NULL AS started
        FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    expect(row).toEqual({ status: 'LEASED', lease_owner: 'worker-1', heartbeat: true, started: false });
  });

  it('claims the highest priority first, then the earliest due', async () => {
    const past = (seconds: number) => new Date(Date.now() - seconds * 1000);
    const jobs = await enqueueJobs(db.prisma, [
      { jobType: 't', payload: 'low-old', priority: 0, runAt: past(100) },
      { jobType: 't', payload: 'high-new', priority: 5, runAt: past(10) },
      { jobType: 't', payload: 'high-old', priority: 5, runAt: past(50) },
      { jobType: 't', payload: 'low-new', priority: 0, runAt: past(1) },
      { jobType: 't', payload: 'negative', priority: -1, runAt: past(1000) },
    ]);
    expect(jobs).toHaveLength(5);
    const claimed = await claimJobs(db.prisma, { workerId: 'w', limit: 10, leaseSeconds: 30 });
    expect(claimed.map((c) => c.payload)).toEqual(['high-old', 'high-new', 'low-old', 'low-new', 'negative']);
  });

  it('skips jobs that are not due yet', async () => {
    await enqueueJob(db.prisma, { jobType: 't', payload: 'future', runAt: new Date(Date.now() + 3_600_000) });
    await enqueueJob(db.prisma, { jobType: 't', payload: 'delayed', delayMs: 60_000 });
    await enqueueJob(db.prisma, { jobType: 't', payload: 'now' });
    const claimed = await claimJobs(db.prisma, { workerId: 'w', limit: 10, leaseSeconds: 30 });
    expect(claimed.map((c) => c.payload)).toEqual(['now']);
  });

  it('claims only the requested job types', async () => {
    await enqueueJobs(db.prisma, [
      { jobType: 'a', payload: 1 },
      { jobType: 'b', payload: 2 },
      { jobType: 'c', payload: 3 },
    ]);
    const claimed = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['a', 'c'], limit: 10, leaseSeconds: 30 });
    expect(claimed.map((c) => c.jobType).sort()).toEqual(['a', 'c']);
  });

  it('claims at most limit jobs and leaves the rest pending', async () => {
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 7 }, (_, i) => ({ jobType: 't', payload: i })),
    );
    expect(await claimJobs(db.prisma, { workerId: 'w', limit: 3, leaseSeconds: 30 })).toHaveLength(3);
    const [row] = await db.prisma.$queryRaw<{ pending: number }[]>`
      SELECT count(*)::int AS pending FROM runledger.job_queue WHERE status = 'PENDING'`;
    expect(row?.pending).toBe(4);
  });

  it('returns nothing when no job is runnable', async () => {
    expect(await claimJobs(db.prisma, { workerId: 'w', limit: 5, leaseSeconds: 30 })).toEqual([]);
  });

  it('folds the RUNNING transition into the claim with markRunning', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 't', payload: {} });
    await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30, markRunning: true });
    const events = await db.prisma.$queryRaw<{ event_type: string; attempt: number }[]>`
      SELECT event_type, attempt FROM runledger.job_trail WHERE job_id = ${jobId}::uuid ORDER BY position`;
    expect(events).toEqual([
      { event_type: 'ENQUEUED', attempt: 0 },
      { event_type: 'LEASED', attempt: 1 },
      { event_type: 'RUNNING', attempt: 1 },
    ]);
    const [row] = await db.prisma.$queryRaw<{ started: boolean }[]>`
      SELECT started_at IS NOT NULL AS started FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    expect(row?.started).toBe(true);
  });

  it('gives every one of 5,000 jobs to exactly one of 8 concurrent claimers', async () => {
    const total = 5_000;
    await enqueueJobs(
      db.prisma,
      Array.from({ length: total }, (_, i) => ({ jobType: 'bulk', payload: { i }, priority: i % 4 })),
    );
    const clients = Array.from({ length: 8 }, () => db.newClient({ max: 2 }));
    await Promise.all(clients.map((client) => client.$connect()));
    const claimedBy = await Promise.all(
      clients.map(async (client, index) => {
        const mine: ClaimedJob[] = [];
        for (;;) {
          const batch = await claimJobs(client, { workerId: `worker-${index}`, limit: 40, leaseSeconds: 300 });
          if (batch.length === 0) return mine;
          mine.push(...batch);
        }
      }),
    );
    const [state] = await db.prisma.$queryRaw<{ leased: number; other: number; first_attempt: number }[]>`
      SELECT count(*) FILTER (WHERE status = 'LEASED')::int AS leased,
             count(*) FILTER (WHERE status <> 'LEASED')::int AS other,
             count(*) FILTER (WHERE attempt = 1)::int AS first_attempt
        FROM runledger.job_queue`;
    expect(state).toEqual({ leased: total, other: 0, first_attempt: total });
    const [events] = await db.prisma.$queryRaw<{ jobs: number; multiply_leased: number; owner_mismatch: number }[]>`
      WITH per_job AS (
        SELECT e.job_id, count(*) AS leases, min(e.payload->>'workerId') AS event_owner
          FROM runledger.job_trail e WHERE e.event_type = 'LEASED' GROUP BY e.job_id
      )
      SELECT count(*)::int AS jobs,
             count(*) FILTER (WHERE leases <> 1)::int AS multiply_leased,
             count(*) FILTER (WHERE jq.lease_owner IS DISTINCT FROM event_owner)::int AS owner_mismatch
        FROM per_job JOIN runledger.job_queue jq ON jq.id = per_job.job_id`;
    expect(events).toEqual({ jobs: total, multiply_leased: 0, owner_mismatch: 0 });
    // The answers agree with the database, and the claimers really did overlap.
    expect(claimedBy.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
    expect(claimedBy.flat()).toHaveLength(total);
    expect(new Set(claimedBy.flat().map((c) => c.jobId)).size).toBe(total);
  });
});
