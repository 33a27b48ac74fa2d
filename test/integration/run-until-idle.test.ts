/** runUntilIdle and jobs due later: a retry waiting out its backoff, a delayed job. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, enqueueJob, getJob, noOrganizationScope, RetryableError } from '../../src/index.js';
import { runUntilIdle } from '../../src/testing/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const scope = noOrganizationScope();

/** Fails its first two attempts; a retry is due 30-60 s later (equal jitter on a 60 s base). */
const flaky = defineJob(
  'idle.flaky',
  z.object({}),
  async (_payload, ctx) => {
    if (ctx.attempt < 3) throw new RetryableError('provider busy', { code: 'provider.busy' });
    return { attempt: ctx.attempt };
  },
  { retry: { maxAttempts: 5, backoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 } } },
);
const later = defineJob('idle.later', z.object({ n: z.number() }), async ({ n }) => ({ n }));

describe('runUntilIdle with jobs due later', () => {
  it('leaves a retry waiting out its backoff PENDING by default', async () => {
    const { jobId } = await enqueueJob(db.prisma, flaky, {});
    const result = await runUntilIdle(db.prisma, [flaky]);
    expect(result.jobs.map((job) => job.outcome)).toEqual(['retry_scheduled']);
    expect((await getJob(db.prisma, { scope, jobId })).status).toBe('PENDING');
  });

  it('runs a job through its retries at once with includeDelayed: true', async () => {
    const { jobId } = await enqueueJob(db.prisma, flaky, {});
    const started = Date.now();
    const result = await runUntilIdle(db.prisma, [flaky], { includeDelayed: true });
    expect(result.jobs.filter((job) => job.jobId === jobId).map((job) => [job.attempt, job.outcome])).toEqual([
      [1, 'retry_scheduled'],
      [2, 'retry_scheduled'],
      [3, 'succeeded'],
    ]);
    const job = await getJob(db.prisma, { scope, jobId });
    expect([job.status, job.output]).toEqual(['SUCCEEDED', { attempt: 3 }]);
    // Two 30-60 s backoffs, not slept through.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('runs only what falls due within { withinMs }, in the order it falls due', async () => {
    const soon = await enqueueJob(db.prisma, later, { n: 1 }, { delayMs: 20_000 });
    const sooner = await enqueueJob(db.prisma, later, { n: 0 }, { delayMs: 10_000 });
    const tomorrow = await enqueueJob(db.prisma, later, { n: 2 }, { delayMs: 86_400_000 });
    const result = await runUntilIdle(db.prisma, [later], { includeDelayed: { withinMs: 60_000 } });
    expect(result.jobs.map((job) => job.jobId)).toEqual([sooner.jobId, soon.jobId]);
    expect((await getJob(db.prisma, { scope, jobId: tomorrow.jobId })).status).toBe('PENDING');
  });

  it('leaves jobs of types it was not given alone', async () => {
    const other = await enqueueJob(db.prisma, { jobType: 'idle.not_ours', payload: {}, delayMs: 1_000 });
    const before = (await getJob(db.prisma, { scope, jobId: other.jobId })).nextRunAt;
    await runUntilIdle(db.prisma, [later], { includeDelayed: true });
    expect((await getJob(db.prisma, { scope, jobId: other.jobId })).nextRunAt).toEqual(before);
  });

  it('refuses a bad includeDelayed with testing.invalid_options naming it', async () => {
    await expect(runUntilIdle(db.prisma, [later], { includeDelayed: { withinMs: -1 } })).rejects.toMatchObject({
      code: 'testing.invalid_options',
      field: 'includeDelayed.withinMs',
    });
  });
});
