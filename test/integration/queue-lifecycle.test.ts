import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  claimJobs,
  completeJob,
  completeJobs,
  enqueueJob,
  failJob,
  getJob,
  noOrganizationScope,
  heartbeatJob,
  markJobRunning,
  type ClaimedJob,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { setLeaseExpiry } from '../harness/leases.js';

const db = useTestDatabase();

async function claimOne(jobType: string, workerId = 'worker-1', leaseSeconds = 60): Promise<ClaimedJob> {
  await enqueueJob(db.prisma, { jobType, payload: { jobType } });
  const [claimed] = await claimJobs(db.prisma, { workerId, jobTypes: [jobType], limit: 1, leaseSeconds });
  if (!claimed) throw new Error('nothing claimed');
  return claimed;
}

async function expireLease(jobId: string): Promise<void> {
  await setLeaseExpiry(db.prisma, jobId, '-1 second', '-61 seconds');
}

async function eventTypes(jobId: string): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ event_type: string }[]>`
    SELECT event_type FROM runledger.job_trail WHERE job_id = ${jobId}::uuid ORDER BY position`;
  return rows.map((row) => row.event_type);
}

/** Every stale or foreign variant of `lease`. */
function staleVariants(lease: ClaimedJob) {
  return [
    { ...lease, workerId: 'someone-else' },
    { ...lease, attempt: lease.attempt + 1 },
    { ...lease, runNumber: lease.runNumber + 1 },
  ];
}

describe('markJobRunning', () => {
  it('records the start once per attempt', async () => {
    const lease = await claimOne('run.mark');
    await markJobRunning(db.prisma, lease);
    await markJobRunning(db.prisma, lease);
    expect(await eventTypes(lease.jobId)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING']);
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId })).startedAt).toBeInstanceOf(Date);
  });

  it('refuses a foreign lease', async () => {
    const lease = await claimOne('run.foreign');
    await expect(markJobRunning(db.prisma, { ...lease, workerId: 'intruder' })).rejects.toMatchObject({
      code: 'job.lease_owner_mismatch',
    });
    expect(await eventTypes(lease.jobId)).toEqual(['ENQUEUED', 'LEASED']);
  });
});

describe('heartbeatJob', () => {
  it('extends the lease by the granted length and saves progress and checkpoint', async () => {
    const lease = await claimOne('hb.extend', 'worker-1', 20);
    await setLeaseExpiry(db.prisma, lease.jobId, '5 seconds', '-15 seconds');
    const renewed = await heartbeatJob(db.prisma, { ...lease, save: { progress: { done: 3, of: 10 }, checkpoint: { cursor: 'abc' } } });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId });
    expect(renewed.leaseExpiresAt).toEqual(job.leaseExpiresAt);
    const [row] = await db.prisma.$queryRaw<{ remaining: number }[]>`
      SELECT round(EXTRACT(EPOCH FROM lease_expires_at - heartbeat_at))::int AS remaining
        FROM runledger.job_queue WHERE id = ${lease.jobId}::uuid`;
    expect(row?.remaining).toBe(20);
    expect(job).toMatchObject({ progress: { done: 3, of: 10 }, checkpoint: { cursor: 'abc' }, status: 'LEASED' });
  });

  it('takes an explicit lease length and keeps unspecified fields', async () => {
    const lease = await claimOne('hb.explicit');
    await heartbeatJob(db.prisma, { ...lease, save: { progress: 1, checkpoint: 'c1' } });
    await heartbeatJob(db.prisma, { ...lease, leaseSeconds: 600, save: { progress: 2 } });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId });
    expect(job).toMatchObject({ progress: 2, checkpoint: 'c1' });
    expect(job.leaseExpiresAt!.getTime() - job.heartbeatAt!.getTime()).toBe(600_000);
    await heartbeatJob(db.prisma, { ...lease, save: { checkpoint: null } });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId })).checkpoint).toBeNull();
  });

  it('refuses a stale or foreign lease and changes nothing', async () => {
    const lease = await claimOne('hb.fenced');
    const before = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId });
    for (const stale of staleVariants(lease)) {
      const error = await heartbeatJob(db.prisma, { ...stale, save: { progress: 'hijack' } }).catch((e) => e);
      expect(error).toBeInstanceOf(ConflictError);
      expect(error).toMatchObject({ code: 'job.lease_owner_mismatch' });
    }
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId })).toEqual(before);
  });

  it('refuses to revive an expired lease', async () => {
    const lease = await claimOne('hb.expired');
    await expireLease(lease.jobId);
    await expect(heartbeatJob(db.prisma, lease)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId })).leaseExpiresAt!.getTime()).toBeLessThan(Date.now());
  });
});

describe('completeJob', () => {
  it('stores the output, clears the lease and appends SUCCEEDED', async () => {
    const lease = await claimOne('done.one');
    const { finishedAt } = await completeJob(db.prisma, { ...lease, output: { sent: true } });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId });
    expect(job).toMatchObject({
      status: 'SUCCEEDED',
      output: { sent: true },
      leaseOwner: null,
      leaseExpiresAt: null,
      heartbeatAt: null,
      finishedAt,
    });
    expect(await eventTypes(lease.jobId)).toEqual(['ENQUEUED', 'LEASED', 'SUCCEEDED']);
  });

  it('refuses a stale, foreign, expired or second completion and changes nothing', async () => {
    const lease = await claimOne('done.fenced');
    for (const stale of staleVariants(lease)) {
      await expect(completeJob(db.prisma, stale)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    }
    await completeJob(db.prisma, { ...lease, output: 'first' });
    await expect(completeJob(db.prisma, { ...lease, output: 'second' })).rejects.toMatchObject({
      code: 'job.lease_owner_mismatch',
    });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId })).output).toBe('first');

    const expired = await claimOne('done.expired');
    await expireLease(expired.jobId);
    await expect(completeJob(db.prisma, expired)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: expired.jobId })).status).toBe('LEASED');
    expect(await eventTypes(expired.jobId)).toEqual(['ENQUEUED', 'LEASED']);
  });
});

describe('completeJobs', () => {
  it('completes a batch in one call and reports each stale lease on its own', async () => {
    await Promise.all([1, 2, 3, 4].map((i) => enqueueJob(db.prisma, { jobType: 'done.batch', payload: i })));
    const leases = await claimJobs(db.prisma, { workerId: 'batcher', jobTypes: ['done.batch'], limit: 4, leaseSeconds: 60 });
    expect(leases).toHaveLength(4);
    const [a, b, c, d] = leases as [ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob];
    await expireLease(c.jobId);
    const outcomes = await completeJobs(db.prisma, [
      { ...d, output: 'd' },
      { ...{ ...b, workerId: 'other' }, output: 'b' },
      { ...a, output: 'a' },
      { ...c, output: 'c' },
    ]);
    expect(outcomes.map((o) => [o.jobId, o.outcome])).toEqual([
      [d.jobId, 'succeeded'],
      [b.jobId, 'lease_owner_mismatch'],
      [a.jobId, 'succeeded'],
      [c.jobId, 'lease_owner_mismatch'],
    ]);
    const statuses = await Promise.all(leases.map((l) => getJob(db.prisma, { scope: noOrganizationScope(), jobId: l.jobId })));
    expect(statuses.map((job) => [job.status, job.output])).toEqual([
      ['SUCCEEDED', 'a'],
      ['LEASED', null],
      ['LEASED', null],
      ['SUCCEEDED', 'd'],
    ]);
    expect(await eventTypes(a.jobId)).toEqual(['ENQUEUED', 'LEASED', 'SUCCEEDED']);
    expect(await eventTypes(b.jobId)).toEqual(['ENQUEUED', 'LEASED']);
  });

  it('answers an empty batch without a transaction', async () => {
    expect(await completeJobs(db.prisma, [])).toEqual([]);
  });
});

describe('failJob', () => {
  it('refuses a stale or foreign lease and changes nothing', async () => {
    const lease = await claimOne('fail.fenced');
    const before = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId });
    for (const stale of staleVariants(lease)) {
      await expect(failJob(db.prisma, { ...stale, error: { code: 'x', message: 'm' }, retryable: false })).rejects.toMatchObject({
        code: 'job.lease_owner_mismatch',
      });
    }
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease.jobId })).toEqual(before);
    expect(await eventTypes(lease.jobId)).toEqual(['ENQUEUED', 'LEASED']);
  });
});
