import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob, enqueueJobs, findJob, noOrganizationScope } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { isTransactionClient } from '../../src/client/types.js';

const db = useTestDatabase();

async function countJobs(jobType: string): Promise<{ jobs: number; events: number }> {
  const [row] = await db.prisma.$queryRaw<{ jobs: number; events: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.job_queue WHERE job_type = ${jobType}) AS jobs,
           (SELECT count(*)::int FROM runledger.job_trail e JOIN runledger.job_queue jq ON jq.id = e.job_id
             WHERE jq.job_type = ${jobType}) AS events`;
  return row!;
}

describe('composition with the caller’s transaction', () => {
  it('tells the root client from an interactive-transaction client', async () => {
    expect(isTransactionClient(db.prisma)).toBe(false);
    await db.prisma.$transaction(async (tx) => {
      expect(isTransactionClient(tx)).toBe(true);
    });
  });

  it('persists nothing when the caller’s transaction throws after enqueuing', async () => {
    await expect(
      db.prisma.$transaction(async (tx) => {
        await enqueueJobs(tx, [
          { jobType: 'tx.rollback', payload: 1 },
          { jobType: 'tx.rollback', payload: 2, idempotencyKey: 'k' },
        ]);
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    expect(await countJobs('tx.rollback')).toEqual({ jobs: 0, events: 0 });
  });

  it('shares the caller’s commit: invisible to others until then', async () => {
    let jobId = '';
    await db.prisma.$transaction(async (tx) => {
      ({ jobId } = await enqueueJob(tx, { jobType: 'tx.commit', payload: {} }));
      expect(await findJob(db.prisma, { scope: noOrganizationScope(), jobId })).toBeNull();
      expect(await findJob(tx, { scope: noOrganizationScope(), jobId })).not.toBeNull();
    });
    expect((await findJob(db.prisma, { scope: noOrganizationScope(), jobId }))?.status).toBe('PENDING');
  });

  it('removes the batch’s rows on an idempotency conflict even if the caller commits anyway', async () => {
    await enqueueJob(db.prisma, { jobType: 'tx.conflict', payload: 'original', idempotencyKey: 'taken' });
    await db.prisma.$transaction(async (tx) => {
      const error = await enqueueJobs(tx, [
        { jobType: 'tx.conflict', payload: 'fresh', idempotencyKey: 'fresh' },
        { jobType: 'tx.conflict', payload: 'changed', idempotencyKey: 'taken' },
      ]).catch((e) => e);
      expect(error).toMatchObject({ code: 'job.idempotency_conflict' });
    });
    expect(await countJobs('tx.conflict')).toEqual({ jobs: 1, events: 1 });
  });

  it('undoes a claim when the caller’s transaction rolls back', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'tx.claim', payload: {} });
    await expect(
      db.prisma.$transaction(async (tx) => {
        const claimed = await claimJobs(tx, { workerId: 'w', jobTypes: ['tx.claim'], limit: 1, leaseSeconds: 30, markRunning: true });
        expect(claimed.map((c) => c.jobId)).toEqual([jobId]);
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    const job = await findJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ status: 'PENDING', attempt: 0, leaseOwner: null, startedAt: null });
    expect(await countJobs('tx.claim')).toEqual({ jobs: 1, events: 1 });
  });
});
