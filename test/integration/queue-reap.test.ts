import { beforeEach, describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJobSuccess,
  enqueueJob,
  enqueueJobs,
  getJob,
  globalScope,
  reapExpiredLeases,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

beforeEach(async () => {
  await db.prisma.$executeRaw`TRUNCATE runledger.job_queue CASCADE`;
});

/** Moves the lease expiry into the past instead of sleeping through a short lease. */
async function expireLeases(jobIds: string[], ago = '1 second'): Promise<void> {
  await db.prisma.$executeRaw`
    UPDATE runledger.job_queue SET lease_expires_at = now() - ${ago}::interval WHERE id = ANY(${jobIds}::uuid[])`;
}

async function events(jobId: string) {
  return db.prisma.$queryRaw<{ event_type: string; run_number: number; attempt: number; payload: Record<string, unknown> | null }[]>`
    SELECT event_type, run_number, attempt, payload FROM runledger.job_events WHERE job_id = ${jobId}::uuid ORDER BY seq`;
}

describe('reapExpiredLeases', () => {
  it('hands an expired job to the next worker and refuses the first worker afterwards', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.handover', payload: {} });
    const [first] = await claimJobs(db.prisma, { workerId: 'worker-a', limit: 1, leaseSeconds: 1 });
    await expireLeases([jobId]);

    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [jobId], deadLettered: [] });
    const [second] = await claimJobs(db.prisma, { workerId: 'worker-b', limit: 1, leaseSeconds: 60 });
    expect(second).toMatchObject({ jobId, attempt: 2, workerId: 'worker-b' });

    await expect(completeJobSuccess(db.prisma, first!, { output: 'from a' })).rejects.toMatchObject({
      code: 'job.lease_owner_mismatch',
    });
    await completeJobSuccess(db.prisma, second!, { output: 'from b' });
    const job = await getJob(db.prisma, globalScope, jobId);
    expect(job).toMatchObject({ status: 'SUCCEEDED', output: 'from b', attempt: 2, lastErrorCode: 'job.lease_expired' });
    expect((await events(jobId)).map((e) => [e.event_type, e.attempt])).toEqual([
      ['ENQUEUED', 0],
      ['LEASED', 1],
      ['LEASE_EXPIRED', 1],
      ['LEASED', 2],
      ['SUCCEEDED', 2],
    ]);
    expect((await events(jobId))[2]!.payload).toMatchObject({ workerId: 'worker-a' });
  });

  it('dead-letters an expired job that has no attempts left', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.exhausted', payload: {}, maxAttempts: 1 });
    await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30 });
    await expireLeases([jobId]);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [jobId] });
    const job = await getJob(db.prisma, globalScope, jobId);
    expect(job).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'job.lease_expired', leaseOwner: null, leaseExpiresAt: null });
    expect(job.finishedAt).toBeInstanceOf(Date);
    expect((await events(jobId)).map((e) => [e.event_type, e.run_number, e.attempt])).toEqual([
      ['ENQUEUED', 1, 0],
      ['LEASED', 1, 1],
      ['LEASE_EXPIRED', 1, 1],
      ['DEAD_LETTERED', 1, 1],
    ]);
  });

  it('leaves live leases alone', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.live', payload: {} });
    await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60 });
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [] });
    expect((await getJob(db.prisma, globalScope, jobId)).status).toBe('LEASED');
  });

  it('reaps in bounded batches, the longest expired first', async () => {
    const jobs = await enqueueJobs(db.prisma, Array.from({ length: 5 }, (_, i) => ({ jobType: 'reap.batch', payload: i })));
    await claimJobs(db.prisma, { workerId: 'w', limit: 5, leaseSeconds: 30 });
    const ids = jobs.map((j) => j.jobId);
    for (const [index, id] of ids.entries()) await expireLeases([id], `${10 - index} seconds`);
    const first = await reapExpiredLeases(db.prisma, { limit: 2 });
    expect(first).toEqual({ retried: ids.slice(0, 2), deadLettered: [] });
    const second = await reapExpiredLeases(db.prisma, { limit: 10 });
    expect(second.retried).toEqual(ids.slice(2));
    const [row] = await db.prisma.$queryRaw<{ pending: number }[]>`
      SELECT count(*)::int AS pending FROM runledger.job_queue WHERE status = 'PENDING' AND lease_owner IS NULL`;
    expect(row?.pending).toBe(5);
  });

  it('skips a job whose row another transaction holds', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.locked', payload: {} });
    await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30 });
    await expireLeases([jobId]);
    const holder = db.newClient({ max: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = holder.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM runledger.job_queue WHERE id = ${jobId}::uuid FOR UPDATE`;
      locked();
      await released;
    });
    await isLocked;
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [] });
    release();
    await holding;
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [jobId], deadLettered: [] });
  });
});
