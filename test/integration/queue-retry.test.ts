import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob, failJob, getJob, noOrganizationScope, type ClaimedJob } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

async function claim(jobType: string): Promise<ClaimedJob> {
  const [claimed] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60 });
  if (!claimed) throw new Error(`nothing of ${jobType} to claim`);
  return claimed;
}

/** Makes a scheduled retry due now instead of waiting out its backoff. */
async function makeDue(jobId: string): Promise<void> {
  await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
}

async function events(jobId: string) {
  return db.prisma.$queryRaw<{ event_type: string; attempt: number; payload: Record<string, unknown> | null }[]>`
    SELECT event_type, attempt, payload FROM runledger.job_trail WHERE job_id = ${jobId}::uuid ORDER BY position`;
}

describe('failJob', () => {
  it('schedules a retryable failure after an exponential backoff with jitter', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'retry.backoff', payload: {}, maxAttempts: 4 });
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const lease = await claim('retry.backoff');
      expect(lease.attempt).toBe(attempt);
      const result = await failJob(db.prisma, { ...lease, error: { code: 'smtp.down', message: 'SMTP unavailable' }, retryable: true });
      expect(result.status).toBe('PENDING');
      const [row] = await db.prisma.$queryRaw<{ delay_ms: number }[]>`
        SELECT (EXTRACT(EPOCH FROM next_run_at - updated_at) * 1000)::int AS delay_ms FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
      const ceiling = 1_000 * 2 ** (attempt - 1);
      // updated_at is the failing transaction's now(), so this is the delay exactly as scheduled.
      expect(row!.delay_ms).toBeGreaterThanOrEqual(ceiling / 2);
      expect(row!.delay_ms).toBeLessThanOrEqual(ceiling);
      expect(await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['retry.backoff'], limit: 1, leaseSeconds: 60 })).toEqual([]);
      await makeDue(jobId);
    }
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({
      status: 'PENDING',
      attempt: 3,
      leaseOwner: null,
      leaseExpiresAt: null,
      heartbeatAt: null,
      finishedAt: null,
      lastErrorCode: 'smtp.down',
      lastErrorMessage: 'SMTP unavailable',
    });
    const retries = (await events(jobId)).filter((e) => e.event_type === 'RETRY_SCHEDULED');
    expect(retries.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(retries[0]!.payload).toMatchObject({ code: 'smtp.down', message: 'SMTP unavailable' });
    expect(typeof retries[0]!.payload!.delayMs).toBe('number');
  });

  it('never schedules the retry before retryNotBefore', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'retry.not_before', payload: {} });
    const lease = await claim('retry.not_before');
    const retryNotBefore = new Date(Date.now() + 2 * 3_600_000);
    const result = await failJob(db.prisma, { ...lease, error: { code: 'rate.limited', message: '429' }, retryable: true, retryNotBefore });
    expect(result.nextRunAt).toEqual(retryNotBefore);
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).nextRunAt).toEqual(retryNotBefore);
  });

  it('keeps the backoff when retryNotBefore is earlier', async () => {
    await enqueueJob(db.prisma, { jobType: 'retry.early_hint', payload: {} });
    const lease = await claim('retry.early_hint');
    const result = await failJob(db.prisma, { ...lease, error: { code: 'x', message: 'x' }, retryable: true, retryNotBefore: new Date(Date.now() - 60_000) });
    expect(result.nextRunAt!.getTime()).toBeGreaterThan(Date.now() - 100);
  });

  it('dead-letters after the last attempt', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'retry.exhaust', payload: {}, maxAttempts: 2 });
    await failJob(db.prisma, { ...(await claim('retry.exhaust')), error: { code: 'boom', message: 'first' }, retryable: true });
    await makeDue(jobId);
    const result = await failJob(db.prisma, { ...(await claim('retry.exhaust')), error: { code: 'boom', message: 'second' }, retryable: true });
    expect(result).toEqual({ jobId, status: 'DEAD_LETTERED', nextRunAt: null });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ status: 'DEAD_LETTERED', attempt: 2, lastErrorMessage: 'second', leaseOwner: null });
    expect(job.finishedAt).toBeInstanceOf(Date);
    expect((await events(jobId)).map((e) => [e.event_type, e.attempt])).toEqual([
      ['ENQUEUED', 0],
      ['LEASED', 1],
      ['RETRY_SCHEDULED', 1],
      ['LEASED', 2],
      ['DEAD_LETTERED', 2],
    ]);
    expect((await events(jobId)).at(-1)!.payload).toMatchObject({ reason: 'attempts_exhausted', code: 'boom' });
    await makeDue(jobId);
    expect(await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['retry.exhaust'], limit: 1, leaseSeconds: 60 })).toEqual([]);
  });

  it('dead-letters a terminal failure at once', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'retry.terminal', payload: {}, maxAttempts: 10 });
    const result = await failJob(db.prisma, { ...(await claim('retry.terminal')), error: { code: 'bad.input', message: 'no' }, retryable: false });
    expect(result.status).toBe('DEAD_LETTERED');
    expect((await events(jobId)).at(-1)).toMatchObject({ event_type: 'DEAD_LETTERED', attempt: 1, payload: { reason: 'terminal' } });
  });

  it('cuts an overlong failure message instead of refusing it', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'retry.long', payload: {} });
    await failJob(db.prisma, { ...(await claim('retry.long')), error: { code: 'x', message: 'm'.repeat(10_000) }, retryable: false });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).lastErrorMessage).toHaveLength(4_000);
  });
});
