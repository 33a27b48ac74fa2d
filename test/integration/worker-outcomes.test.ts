import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJob, getJob, noOrganizationScope } from '../../src/index.js';
import { defineJob, JobAbortedError, RetryableError, TerminalError } from '../../src/worker/index.js';
import { latch, nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();

const startWorker = useWorkers(db);

/** A job's event types, sorted by name: these tests assert which events exist, not their order. */
async function eventTypes(jobId: string): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ event_type: string }[]>`
    SELECT event_type::text FROM runledger.job_trail WHERE job_id = ${jobId}::uuid`;
  return rows.map((row) => row.event_type).sort();
}

describe('handler outcomes', () => {
  it('schedules a RetryableError no earlier than its retryNotBefore', async () => {
    const notBefore = new Date(Date.now() + 60 * 60 * 1000);
    const handler = defineJob('out.retry_later', z.object({}), async () => {
      throw new RetryableError('rate limited', { code: 'test.rate_limited', retryNotBefore: notBefore });
    });
    const worker = await startWorker({ handlers: [handler] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.retry_later', payload: {} });
    expect(await failed).toMatchObject({ code: 'test.rate_limited', retryable: true, status: 'PENDING' });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ status: 'PENDING', attempt: 1, lastErrorCode: 'test.rate_limited', lastErrorMessage: 'rate limited' });
    expect(job.nextRunAt.getTime()).toBeGreaterThanOrEqual(notBefore.getTime());
    expect(await eventTypes(jobId)).toEqual(['ENQUEUED', 'LEASED', 'RETRY_SCHEDULED', 'RUNNING']);
  });

  it('dead-letters a TerminalError at once, attempts left or not', async () => {
    const handler = defineJob('out.terminal', z.object({}), async () => {
      throw new TerminalError('card declined', { code: 'billing.card_declined' });
    });
    const worker = await startWorker({ handlers: [handler] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.terminal', payload: {}, maxAttempts: 5 });
    expect(await failed).toMatchObject({ code: 'billing.card_declined', retryable: false, status: 'DEAD_LETTERED', nextRunAt: null });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
      status: 'DEAD_LETTERED',
      attempt: 1,
      lastErrorCode: 'billing.card_declined',
      lastErrorMessage: 'card declined',
    });
  });

  it('retries an unknown throw as job.handler_error and succeeds on the next attempt', async () => {
    const handler = defineJob('out.flaky', z.object({}), async (_payload, ctx) => {
      if (ctx.attempt === 1) throw new Error('connection reset by peer');
      return { attempt: ctx.attempt };
    });
    const worker = await startWorker({ handlers: [handler] });
    const failed = nextEvent(worker, 'job:failure');
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.flaky', payload: {} });
    expect(await failed).toMatchObject({ code: 'job.handler_error', message: 'connection reset by peer', status: 'PENDING' });
    expect((await succeeded).job).toMatchObject({ jobId, attempt: 2 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', attempt: 2, output: { attempt: 2 } });
    expect(await eventTypes(jobId)).toEqual(['ENQUEUED', 'LEASED', 'LEASED', 'RETRY_SCHEDULED', 'RUNNING', 'RUNNING', 'SUCCEEDED']);
  });

  it('dead-letters an unknown throw on the last attempt', async () => {
    const handler = defineJob('out.exhausted', z.object({}), async () => {
      throw new Error('still broken');
    });
    const worker = await startWorker({ handlers: [handler] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.exhausted', payload: {}, maxAttempts: 1 });
    expect(await failed).toMatchObject({ code: 'job.handler_error', retryable: true, status: 'DEAD_LETTERED' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).status).toBe('DEAD_LETTERED');
  });

  it('dead-letters an invalid payload with job.payload_invalid naming the field, without running the handler', async () => {
    let ran = false;
    const handler = defineJob('out.payload', z.object({ invoice: z.object({ amount: z.number() }) }), async () => {
      ran = true;
    });
    const worker = await startWorker({ handlers: [handler] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.payload', payload: { invoice: { amount: 'ten' } } });
    expect(await failed).toMatchObject({ code: 'job.payload_invalid', retryable: false, status: 'DEAD_LETTERED' });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ status: 'DEAD_LETTERED', attempt: 1, lastErrorCode: 'job.payload_invalid' });
    expect(job.lastErrorMessage).toMatch(/^Invalid payload\.invoice\.amount: /);
    // zod's own "Invalid input: " lead is not repeated after the field.
    expect(job.lastErrorMessage).not.toMatch(/Invalid input/);
    expect(ran).toBe(false);
  });

  it('stores an output that is not plain JSON the way JSON.stringify writes it, instead of losing the finished work', async () => {
    const at = new Date('2026-12-01T10:00:00.000Z');
    const money = { toJSON: () => '12.50' };
    const handler = defineJob('out.jsonified', z.object({}), async () => ({ at, money, skipped: undefined, list: [undefined, 1] }));
    const worker = await startWorker({ handlers: [handler] });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.jsonified', payload: {} });
    await succeeded;
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job.status).toBe('SUCCEEDED');
    expect(job.output).toEqual({ at: '2026-12-01T10:00:00.000Z', money: '12.50', list: [null, 1] });
  });

  it('dead-letters an output JSON cannot hold (a cycle) with job.output_invalid', async () => {
    const handler = defineJob('out.output', z.object({}), async () => {
      const node: { self?: unknown; at: Date } = { at: new Date() };
      node.self = node;
      return node;
    });
    const worker = await startWorker({ handlers: [handler] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.output', payload: {} });
    expect(await failed).toMatchObject({ code: 'job.output_invalid', status: 'DEAD_LETTERED' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).output).toBeNull();
  });

  it('aborts ctx.signal on timeout and schedules a retry with job.timeout', async () => {
    const reason = latch<unknown>();
    const handler = defineJob('out.timeout', z.object({}), async (_payload, ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      reason.open(ctx.signal.reason);
      // Too late: the timeout took the outcome, so this success is discarded.
      return 'late';
    });
    const worker = await startWorker({ handlers: [handler] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.timeout', payload: {}, timeoutSeconds: 1 });
    expect(await failed).toMatchObject({ code: 'job.timeout', retryable: true, status: 'PENDING' });
    const abortReason = await reason.promise;
    expect(abortReason).toBeInstanceOf(JobAbortedError);
    expect(abortReason).toMatchObject({ reason: 'timeout' });
    await worker.stop();
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ attempt: 1, lastErrorCode: 'job.timeout', output: null });
    expect(job.status).not.toBe('SUCCEEDED');
    expect(worker.stats()).toMatchObject({ succeeded: 0, failed: 1 });
  });

  it('reports job:start with the attempt it runs', async () => {
    const handler = defineJob('out.start', z.object({}), async () => 'ok');
    const worker = await startWorker({ handlers: [handler] });
    const started = nextEvent(worker, 'job:start');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'out.start', payload: {}, maxAttempts: 3 });
    expect((await started).job).toMatchObject({ jobId, jobType: 'out.start', attempt: 1, maxAttempts: 3, runNumber: 1, organizationId: null });
  });
});
