import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  NotFoundError,
  cancelJob,
  claimJobs,
  completeJob,
  enqueueJob,
  failJob,
  getJob,
  noOrganizationScope,
  heartbeatJob,
  reapExpiredLeases,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();

async function eventTypes(jobId: string): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ event_type: string }[]>`
    SELECT event_type FROM runledger.job_trail WHERE job_id = ${jobId}::uuid ORDER BY position`;
  return rows.map((row) => row.event_type);
}

async function leased(jobType: string) {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: {} });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 120 });
  return { jobId, lease: lease! };
}

describe('cancelJob', () => {
  it('cancels a pending job', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cancel.pending', payload: {} });
    const job = await cancelJob(db.prisma, { jobId, scope: noOrganizationScope(), reason: 'not needed' });
    expect(job).toMatchObject({ id: jobId, status: 'CANCELED', leaseExpiresAt: null, leaseOwner: null });
    expect(job.finishedAt).toBeInstanceOf(Date);
    expect(await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['cancel.pending'], limit: 1, leaseSeconds: 5 })).toEqual([]);
    const [event] = await db.prisma.$queryRaw<{ event_type: string; run_number: number; attempt: number; payload: unknown }[]>`
      SELECT event_type, run_number, attempt, payload FROM runledger.job_trail
       WHERE job_id = ${jobId}::uuid AND event_type = 'CANCELED'`;
    expect(event).toEqual({
      event_type: 'CANCELED',
      run_number: 1,
      attempt: 0,
      payload: { previousStatus: 'PENDING', reason: 'not needed' },
    });
  });

  it('cancels a leased job keeping its lease expiry as the quiescence marker', async () => {
    const { jobId, lease } = await leased('cancel.leased');
    const job = await cancelJob(db.prisma, { jobId, scope: noOrganizationScope() });
    expect(job).toMatchObject({ status: 'CANCELED', leaseOwner: null, heartbeatAt: null, leaseExpiresAt: lease.leaseExpiresAt });
    expect(await eventTypes(jobId)).toEqual(['ENQUEUED', 'LEASED', 'CANCELED']);
  });

  it('fences the canceled handler out of every later write', async () => {
    const { jobId, lease } = await leased('cancel.fenced');
    await cancelJob(db.prisma, { jobId, scope: noOrganizationScope() });
    await expect(heartbeatJob(db.prisma, lease)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    await expect(completeJob(db.prisma, { ...lease, output: 1 })).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    await expect(failJob(db.prisma, { ...lease, error: { code: 'x', message: 'x' }, retryable: true })).rejects.toMatchObject({
      code: 'job.lease_owner_mismatch',
    });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).status).toBe('CANCELED');
  });

  it('is never reaped once canceled, even after the marker passes', async () => {
    const { jobId } = await leased('cancel.reap');
    await cancelJob(db.prisma, { jobId, scope: noOrganizationScope() });
    await expireLeases(db.prisma, jobId, '1 minute');
    const reaped = await reapExpiredLeases(db.prisma, { limit: 100 });
    expect([...reaped.retried, ...reaped.deadLettered]).not.toContain(jobId);
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).status).toBe('CANCELED');
  });

  it('returns an already canceled job unchanged', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cancel.twice', payload: {} });
    const first = await cancelJob(db.prisma, { jobId, scope: noOrganizationScope() });
    const second = await cancelJob(db.prisma, { jobId, scope: noOrganizationScope(), reason: 'again' });
    expect(second).toEqual(first);
    expect(await eventTypes(jobId)).toEqual(['ENQUEUED', 'CANCELED']);
  });

  it('refuses to cancel a succeeded or dead-lettered job', async () => {
    const done = await leased('cancel.done');
    await completeJob(db.prisma, done.lease);
    const dead = await leased('cancel.dead');
    await failJob(db.prisma, { ...dead.lease, error: { code: 'x', message: 'x' }, retryable: false });
    for (const jobId of [done.jobId, dead.jobId]) {
      const error = await cancelJob(db.prisma, { jobId, scope: noOrganizationScope() }).catch((e) => e);
      expect(error).toBeInstanceOf(ConflictError);
      expect(error).toMatchObject({ code: 'job.not_cancelable' });
    }
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: done.jobId })).status).toBe('SUCCEEDED');
    expect(await eventTypes(dead.jobId)).toEqual(['ENQUEUED', 'LEASED', 'DEAD_LETTERED']);
  });

  it('reports a missing job as not found', async () => {
    const error = await cancelJob(db.prisma, { jobId: '0190a3e0-0000-7000-8000-0000000000ff', scope: noOrganizationScope() }).catch((e) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ code: 'job.not_found' });
  });
});
