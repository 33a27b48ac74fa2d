import { describe, expect, it } from 'vitest';
import {
  cancelJob,
  claimJobs,
  completeJob,
  enqueueJob,
  failJob,
  noOrganizationScope,
  listJobEvents,
  markJobRunning,
  reapExpiredLeases,
  type ClaimedJob,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();

async function claim(jobType: string, markRunning = false): Promise<ClaimedJob> {
  const [claimed] = await claimJobs(db.prisma, { workerId: `w-${jobType}`, jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning });
  if (!claimed) throw new Error(`nothing of ${jobType} to claim`);
  return claimed;
}

async function trail(jobId: string): Promise<[string, number, number][]> {
  const events = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId })).items;
  return events.map((e) => [e.eventType, e.runNumber, e.attempt]);
}

describe('job events', () => {
  it('records every transition of a job that retries, expires and succeeds', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'ev.long', payload: {}, maxAttempts: 3 });
    const first = await claim('ev.long');
    await markJobRunning(db.prisma, first);
    await failJob(db.prisma, { ...first, error: { code: 'flaky', message: 'try again' }, retryable: true });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
    await claim('ev.long', true);
    await expireLeases(db.prisma, jobId);
    await reapExpiredLeases(db.prisma, { limit: 10 });
    const third = await claim('ev.long');
    await completeJob(db.prisma, { ...third, output: 'ok' });
    expect(await trail(jobId)).toEqual([
      ['ENQUEUED', 1, 0],
      ['LEASED', 1, 1],
      ['RUNNING', 1, 1],
      ['RETRY_SCHEDULED', 1, 1],
      ['LEASED', 1, 2],
      ['RUNNING', 1, 2],
      ['LEASE_EXPIRED', 1, 2],
      ['LEASED', 1, 3],
      ['SUCCEEDED', 1, 3],
    ]);
  });

  it('records a terminal failure and a cancellation', async () => {
    const failed = await enqueueJob(db.prisma, { jobType: 'ev.fail', payload: {} });
    await failJob(db.prisma, { ...(await claim('ev.fail')), error: { code: 'fatal', message: 'no' }, retryable: false });
    expect(await trail(failed.jobId)).toEqual([
      ['ENQUEUED', 1, 0],
      ['LEASED', 1, 1],
      ['DEAD_LETTERED', 1, 1],
    ]);

    const canceled = await enqueueJob(db.prisma, { jobType: 'ev.cancel', payload: {} });
    await claim('ev.cancel');
    await cancelJob(db.prisma, { jobId: canceled.jobId, scope: noOrganizationScope(), reason: 'stop' });
    const events = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: canceled.jobId })).items;
    expect(events.map((e) => [e.eventType, e.runNumber, e.attempt])).toEqual([
      ['ENQUEUED', 1, 0],
      ['LEASED', 1, 1],
      ['CANCELED', 1, 1],
    ]);
    expect(events[2]).toMatchObject({ jobId: canceled.jobId, payload: { previousStatus: 'LEASED', reason: 'stop' } });
    expect(events[2]!.createdAt).toBeInstanceOf(Date);
  });

  it('records who held each lease', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'ev.owner', payload: {} });
    const lease = await claim('ev.owner');
    const [leased] = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId })).items.filter((e) => e.eventType === 'LEASED');
    expect(leased!.payload).toEqual({ workerId: 'w-ev.owner', leaseExpiresAt: expect.any(String) });
    expect(new Date((leased!.payload as { leaseExpiresAt: string }).leaseExpiresAt).getTime()).toBe(lease.leaseExpiresAt.getTime());
  });
});
