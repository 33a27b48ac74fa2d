import { beforeEach, describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJob,
  enqueueJob,
  enqueueJobs,
  getJob,
  noOrganizationScope,
  markJobRunning,
  reapExpiredLeases,
  releaseJob,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { setLeaseExpiry } from '../harness/leases.js';

const db = useTestDatabase();

beforeEach(async () => {
  await db.prisma.$executeRaw`TRUNCATE runledger.job_queue CASCADE`;
});

/** Moves the lease expiry into the past instead of sleeping through a short lease. */
async function expireLeases(jobIds: string[], ago = '1 second'): Promise<void> {
  await setLeaseExpiry(db.prisma, jobIds, `-${ago}`);
}

async function events(jobId: string) {
  return db.prisma.$queryRaw<{ event_type: string; run_number: number; attempt: number; payload: Record<string, unknown> | null }[]>`
    SELECT event_type, run_number, attempt, payload FROM runledger.job_trail WHERE job_id = ${jobId}::uuid ORDER BY position`;
}

describe('reapExpiredLeases', () => {
  it('hands an expired job to the next worker and refuses the first worker afterwards', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.handover', payload: {} });
    const [first] = await claimJobs(db.prisma, { workerId: 'worker-a', limit: 1, leaseSeconds: 1, markRunning: true });
    await expireLeases([jobId]);

    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [jobId], deadLettered: [] });
    const [second] = await claimJobs(db.prisma, { workerId: 'worker-b', limit: 1, leaseSeconds: 60 });
    expect(second).toMatchObject({ jobId, attempt: 2, workerId: 'worker-b' });

    await expect(completeJob(db.prisma, { ...first!, output: 'from a' })).rejects.toMatchObject({
      code: 'job.lease_owner_mismatch',
    });
    await completeJob(db.prisma, { ...second!, output: 'from b' });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ status: 'SUCCEEDED', output: 'from b', attempt: 2, lastErrorCode: 'job.lease_expired' });
    expect((await events(jobId)).map((e) => [e.event_type, e.attempt])).toEqual([
      ['ENQUEUED', 0],
      ['LEASED', 1],
      ['RUNNING', 1],
      ['LEASE_EXPIRED', 1],
      ['LEASED', 2],
      ['SUCCEEDED', 2],
    ]);
    expect((await events(jobId))[3]!.payload).toMatchObject({ workerId: 'worker-a', started: true });
  });

  it('dead-letters an expired job that has no attempts left', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.exhausted', payload: {}, maxAttempts: 1 });
    await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30, markRunning: true });
    await expireLeases([jobId]);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [jobId] });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'job.lease_expired', leaseOwner: null, leaseExpiresAt: null });
    expect(job.finishedAt).toBeInstanceOf(Date);
    expect((await events(jobId)).map((e) => [e.event_type, e.run_number, e.attempt])).toEqual([
      ['ENQUEUED', 1, 0],
      ['LEASED', 1, 1],
      ['RUNNING', 1, 1],
      ['LEASE_EXPIRED', 1, 1],
      ['DEAD_LETTERED', 1, 1],
    ]);
  });

  it('returns a lease that never started to PENDING without using up the attempt, even at maxAttempts 1', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.unstarted', payload: {}, maxAttempts: 1 });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30 });
    expect(lease!.attempt).toBe(1);
    await expireLeases([jobId]);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [jobId], deadLettered: [] });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
      status: 'PENDING',
      attempt: 0,
      lastErrorCode: null,
      lastErrorMessage: null,
      leaseOwner: null,
      finishedAt: null,
    });
    const trail = await events(jobId);
    expect(trail.map((e) => [e.event_type, e.run_number, e.attempt])).toEqual([
      ['ENQUEUED', 1, 0],
      ['LEASED', 1, 1],
      ['LEASE_EXPIRED', 1, 0],
    ]);
    expect(trail[2]!.payload).toMatchObject({ workerId: 'w', started: false, leaseAttempt: 1 });
    // The attempt was given back: the job can still run its one attempt, and the stale lease is fenced out.
    const [again] = await claimJobs(db.prisma, { workerId: 'w2', limit: 1, leaseSeconds: 30, markRunning: true });
    expect(again).toMatchObject({ jobId, attempt: 1 });
    await expect(completeJob(db.prisma, { ...lease!, output: 'stale' })).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    await completeJob(db.prisma, { ...again!, output: 'ok' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
  });

  it('counts a start per lease: a released attempt claimed again and marked running is charged when it expires', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.restarted', payload: {}, maxAttempts: 1 });
    const [first] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30, markRunning: true });
    await releaseJob(db.prisma, first!);
    // Same attempt number again; this lease starts through markJobRunning, after an older RUNNING of attempt 1.
    const [second] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30 });
    expect(second!.attempt).toBe(1);
    await markJobRunning(db.prisma, second!);
    expect((await events(jobId)).map((e) => e.event_type)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING', 'RELEASED', 'LEASED', 'RUNNING']);
    await expireLeases([jobId]);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [jobId] });
  });

  it('reaps started and never-started leases of one batch each by its own rule', async () => {
    const jobs = await enqueueJobs(db.prisma, [
      { jobType: 'reap.mixed.started', payload: {}, maxAttempts: 1 },
      { jobType: 'reap.mixed.unstarted', payload: {}, maxAttempts: 1 },
    ]);
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['reap.mixed.started'], limit: 1, leaseSeconds: 30, markRunning: true });
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['reap.mixed.unstarted'], limit: 1, leaseSeconds: 30 });
    await expireLeases(jobs.map((j) => j.jobId));
    const reaped = await reapExpiredLeases(db.prisma, { limit: 10 });
    expect(reaped).toEqual({ retried: [jobs[1]!.jobId], deadLettered: [jobs[0]!.jobId] });
  });

  it('leaves live leases alone', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.live', payload: {} });
    await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60 });
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [], deadLettered: [] });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).status).toBe('LEASED');
  });

  it('reaps in bounded batches, the longest expired first', async () => {
    const jobs = await enqueueJobs(
      db.prisma,
      Array.from({ length: 5 }, (_, i) => ({ jobType: 'reap.batch', payload: i })),
    );
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
