import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cancelJob, claimJobs, completeJob, enqueueJob, getJob, noOrganizationScope, reapExpiredLeases, type ClaimedJob } from '../../src/index.js';
import { defineJob, JobAbortedError, RetryableError, type JobContext } from '../../src/worker/index.js';
import { latch, nextEvent, recordingLogger } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();

const startWorker = useWorkers(db);

/**
 * Another worker takes the job over: the lease expires, the reaper returns the
 * job, an intruder claims it. Expires, reaps and re-claims the job for 'intruder' in ONE transaction: the
 * worker under test polls (and claims ahead into its buffer), so it must never
 * see the job PENDING in between.
 */
async function stealLease(jobId: string, jobType: string): Promise<ClaimedJob> {
  const claimed = await db.prisma.$transaction(async (tx) => {
    await expireLeases(tx, jobId);
    expect((await reapExpiredLeases(tx, { limit: 10 })).retried).toEqual([jobId]);
    return (await claimJobs(tx, { workerId: 'intruder', jobTypes: [jobType], limit: 1, leaseSeconds: 60 }))[0];
  });
  expect(claimed).toMatchObject({ jobId, attempt: 2, workerId: 'intruder' });
  return claimed!;
}

async function succeededEvents(jobId: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM runledger.job_trail WHERE job_id = ${jobId}::uuid AND event_type = 'SUCCEEDED'`;
  return row!.n;
}

describe('progress and checkpoints', () => {
  it('saves progress and checkpoint under the lease while the handler runs', async () => {
    const saved = latch<JobContext>();
    const proceed = latch();
    const handler = defineJob('lease.save', z.object({}), async (_payload, ctx) => {
      await ctx.saveProgress({ done: 1, of: 2 });
      await ctx.saveCheckpoint({ cursor: 'page-2' });
      saved.open(ctx);
      await proceed.promise;
      return 'done';
    });
    const worker = await startWorker({ handlers: [handler] });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'lease.save', payload: {} });
    const ctx = await saved.promise;
    expect(ctx).toMatchObject({ lastProgress: { done: 1, of: 2 }, checkpoint: { cursor: 'page-2' } });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
      status: 'LEASED',
      progress: { done: 1, of: 2 },
      checkpoint: { cursor: 'page-2' },
    });
    proceed.open();
    await succeeded;
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', progress: { done: 1, of: 2 } });
  });

  it('hands the next attempt the checkpoint the failed one saved', async () => {
    const seen: unknown[] = [];
    const handler = defineJob('lease.resume', z.object({}), async (_payload, ctx) => {
      seen.push(ctx.checkpoint);
      if (ctx.attempt === 1) {
        await ctx.saveCheckpoint({ cursor: 'page-7' });
        throw new RetryableError('upstream hiccup');
      }
      return 'resumed';
    });
    const worker = await startWorker({ handlers: [handler] });
    const succeeded = nextEvent(worker, 'job:success');
    await enqueueJob(db.prisma, { jobType: 'lease.resume', payload: {} });
    await succeeded;
    expect(seen).toEqual([null, { cursor: 'page-7' }]);
  });

  it('keeps a lease alive with heartbeats while a handler outlasts it', async () => {
    const handler = defineJob('lease.long', z.object({}), async () => {
      // Work that takes longer than the 1 s lease; only heartbeats keep the lease valid meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      return 'finished';
    });
    const worker = await startWorker({ handlers: [handler], leaseSeconds: 1, heartbeatFraction: 0.3 });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'lease.long', payload: {} });
    await succeeded;
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', attempt: 1, output: 'finished' });
  });
});

describe('a lost lease', () => {
  it('aborts the signal when a heartbeat finds the lease gone, and records nothing of the stale attempt', async () => {
    const started = latch();
    const aborted = latch<unknown>();
    const finish = latch();
    const handler = defineJob('lease.heartbeat_lost', z.object({}), async (_payload, ctx) => {
      started.open();
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted.open(ctx.signal.reason);
      await finish.promise;
      return 'from the stale attempt';
    });
    const worker = await startWorker({ handlers: [handler], concurrency: 1, leaseSeconds: 2, heartbeatFraction: 0.1 });
    const lost = nextEvent(worker, 'job:lease_lost');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'lease.heartbeat_lost', payload: {} });
    await started.promise;
    const intruder = await stealLease(jobId, 'lease.heartbeat_lost');

    expect((await lost).during).toBe('heartbeat');
    const reason = await aborted.promise;
    expect(reason).toBeInstanceOf(JobAbortedError);
    expect(reason).toMatchObject({ reason: 'lease lost' });
    finish.open();
    await worker.stop();

    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
      status: 'LEASED',
      leaseOwner: 'intruder',
      attempt: 2,
      output: null,
    });
    expect(await succeededEvents(jobId)).toBe(0);
    expect(worker.stats()).toMatchObject({ succeeded: 0, failed: 0, leaseLost: 1 });
    await completeJob(db.prisma, { ...intruder, output: 'from the intruder' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).output).toBe('from the intruder');
  });

  it('refuses saveProgress once the lease is gone and aborts the signal', async () => {
    const started = latch();
    const proceed = latch();
    const outcome = latch<{ error: unknown; reason: unknown }>();
    const handler = defineJob('lease.save_lost', z.object({}), async (_payload, ctx) => {
      started.open();
      await proceed.promise;
      const error = await ctx.saveProgress({ step: 2 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      outcome.open({ error, reason: ctx.signal.reason });
      return 'stale';
    });
    const worker = await startWorker({ handlers: [handler], concurrency: 1 });
    const lost = nextEvent(worker, 'job:lease_lost');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'lease.save_lost', payload: {} });
    await started.promise;
    await stealLease(jobId, 'lease.save_lost');
    proceed.open();

    const { error, reason } = await outcome.promise;
    expect(error).toMatchObject({ code: 'job.lease_owner_mismatch' });
    expect(reason).toMatchObject({ reason: 'lease lost' });
    expect((await lost).during).toBe('save');
    await worker.stop();
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ leaseOwner: 'intruder', progress: null, output: null });
  });

  it('logs and counts a completion the fence refuses, without throwing', async () => {
    const { handler, started, proceed } = heldHandler('lease.complete_lost');
    const logger = recordingLogger();
    const worker = await startWorker({ handlers: [handler], concurrency: 1, logger });
    const lost = nextEvent(worker, 'job:lease_lost');
    const errors: unknown[] = [];
    worker.on('worker:error', (e) => errors.push(e));
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'lease.complete_lost', payload: {} });
    await started.promise;
    await stealLease(jobId, 'lease.complete_lost');
    proceed.open();

    expect(await lost).toMatchObject({ during: 'complete', job: { jobId, attempt: 1 } });
    expect(worker.stats()).toMatchObject({ succeeded: 0, leaseLost: 1 });
    expect(logger.entries.some((e) => e.level === 'warn' && e.message.startsWith('lease lost') && e.fields?.jobId === jobId)).toBe(true);
    expect(errors).toEqual([]);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'LEASED', leaseOwner: 'intruder', output: null });
    expect(await succeededEvents(jobId)).toBe(0);
  });

  it('says the job was canceled, not that another attempt owns it, when a running job is canceled (heartbeat)', async () => {
    const started = latch();
    const aborted = latch<unknown>();
    const handler = defineJob('lease.canceled_running', z.object({}), async (_payload, ctx) => {
      started.open();
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted.open(ctx.signal.reason);
      return 'after the cancel';
    });
    const logger = recordingLogger();
    const worker = await startWorker({ handlers: [handler], concurrency: 1, leaseSeconds: 2, heartbeatFraction: 0.1, logger });
    const lost = nextEvent(worker, 'job:lease_lost');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'lease.canceled_running', payload: {} });
    await started.promise;
    await cancelJob(db.prisma, { scope: noOrganizationScope(), jobId, reason: 'customer request' });

    expect(await lost).toMatchObject({ during: 'heartbeat', canceled: true, job: { jobId } });
    expect(await aborted.promise).toMatchObject({ reason: 'canceled' });
    await worker.stop();
    const mine = logger.entries.filter((e) => e.fields?.jobId === jobId);
    expect(mine.filter((e) => e.message.startsWith('the job was canceled'))).toHaveLength(1);
    expect(mine.filter((e) => e.message.startsWith('lease lost'))).toEqual([]);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'CANCELED', output: null });
  });

  it('says the job was canceled when the completion of a canceled job is refused', async () => {
    const { handler, started, proceed } = heldHandler('lease.canceled_complete');
    const logger = recordingLogger();
    const worker = await startWorker({ handlers: [handler], concurrency: 1, logger });
    const lost = nextEvent(worker, 'job:lease_lost');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'lease.canceled_complete', payload: {} });
    await started.promise;
    await cancelJob(db.prisma, { scope: noOrganizationScope(), jobId });
    proceed.open();

    expect(await lost).toMatchObject({ during: 'complete', canceled: true });
    const mine = logger.entries.filter((e) => e.fields?.jobId === jobId);
    expect(mine.some((e) => e.level === 'info' && e.message.startsWith('the job was canceled'))).toBe(true);
    expect(mine.filter((e) => e.message.startsWith('lease lost'))).toEqual([]);
  });
});

/** A handler that says it started, then waits to be let go before it returns (so a test can act on its lease meanwhile). */
function heldHandler(jobType: string) {
  const started = latch();
  const proceed = latch();
  const handler = defineJob(jobType, z.object({}), async () => {
    started.open();
    await proceed.promise;
    return 'stale';
  });
  return { handler, started, proceed };
}
