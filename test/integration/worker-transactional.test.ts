/**
 * Transactional job types (`defineJob(..., { transaction: host })`): the
 * handler's writes through `ctx.tx` (the host application's own Prisma
 * client, generated from another schema) commit in the same transaction as
 * the job's outcome, or not at all. The worker itself runs on runledger's
 * client: the attempt's transaction is the definition's client's.
 */
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimJobs, enqueueJob, enqueueWorkflowRun, getJob, noOrganizationScope, reapExpiredLeases, workflow, type ClaimedJob } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { continueNow, defineJob, RetryableError, TerminalError, type Worker } from '../../src/worker/index.js';
import { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';
import { countdown, latch, nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
let host: HostPrismaClient;

beforeAll(async () => {
  const pool = db.newPool({ max: 1 });
  await pool.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
  host = new HostPrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 8 }) });
});
afterAll(async () => {
  await host.$disconnect();
});

const orderPayload = z.object({ orderId: z.string() });

async function orderCount(id: string): Promise<number> {
  return host.order.count({ where: { id } });
}

/** The transaction id that wrote a row last: equal ids mean one commit. */
async function writerOf(table: 'public.host_orders' | 'runledger.job_queue', id: string): Promise<string> {
  const rows =
    table === 'public.host_orders'
      ? await db.prisma.$queryRaw<{ xid: string }[]>`SELECT xmin::text AS xid FROM public.host_orders WHERE id = ${id}::uuid`
      : await db.prisma.$queryRaw<{ xid: string }[]>`SELECT xmin::text AS xid FROM runledger.job_queue WHERE id = ${id}::uuid`;
  expect(rows).toHaveLength(1);
  return rows[0]!.xid;
}

function job(jobId: string) {
  return getJob(db.prisma, { scope: noOrganizationScope(), jobId });
}

async function stealLease(jobId: string, jobType: string): Promise<ClaimedJob> {
  return db.prisma.$transaction(async (tx) => {
    await expireLeases(tx, jobId);
    expect((await reapExpiredLeases(tx, { limit: 10 })).retried).toEqual([jobId]);
    const [claimed] = await claimJobs(tx, { workerId: 'intruder', jobTypes: [jobType], limit: 1, leaseSeconds: 60 });
    return claimed!;
  });
}

describe('a transactional handler', () => {
  it("commits its writes and the job's success in one transaction", async () => {
    const orderId = newId();
    const seen = latch<{ key: string; attempt: number }>();
    const markPaid = defineJob(
      'tx.commit',
      orderPayload,
      async (payload, ctx) => {
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'ada', total: 42 } });
        seen.open({ key: ctx.idempotencyKey, attempt: ctx.attempt });
        return { paid: payload.orderId };
      },
      { transaction: host },
    );
    const worker = await startWorker({ handlers: [markPaid] });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, markPaid, { orderId });
    await succeeded;
    expect(await seen.promise).toEqual({ key: `runledger:${jobId}:1`, attempt: 1 });
    expect(await job(jobId)).toMatchObject({ status: 'SUCCEEDED', attempt: 1, output: { paid: orderId } });
    expect(await orderCount(orderId)).toBe(1);
    expect(await writerOf('public.host_orders', orderId)).toBe(await writerOf('runledger.job_queue', jobId));
  });

  it('rolls its writes back when it throws, and records the failure after', async () => {
    const orderId = newId();
    const failing = defineJob(
      'tx.throws',
      orderPayload,
      async (payload, ctx) => {
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'bob', total: 1 } });
        throw new TerminalError('card declined', { code: 'billing.declined' });
      },
      { transaction: host },
    );
    const worker = await startWorker({ handlers: [failing] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, failing, { orderId });
    expect(await failed).toMatchObject({ code: 'billing.declined', status: 'DEAD_LETTERED' });
    expect(await job(jobId)).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'billing.declined' });
    expect(await orderCount(orderId)).toBe(0);
  });

  it('re-runs a retried attempt on clean data: the same insert succeeds once', async () => {
    const orderId = newId();
    const retried = defineJob(
      'tx.retry',
      orderPayload,
      async (payload, ctx) => {
        // The primary key would refuse this insert on attempt 2 if attempt 1's had committed.
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'cy', total: ctx.attempt } });
        if (ctx.attempt === 1) throw new RetryableError('flaky upstream', { retryNotBefore: new Date() });
        return 'second time lucky';
      },
      { transaction: host, retry: { maxAttempts: 3, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    const worker = await startWorker({ handlers: [retried] });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, retried, { orderId });
    await succeeded;
    expect(await job(jobId)).toMatchObject({ status: 'SUCCEEDED', attempt: 2 });
    expect(await host.order.findMany({ where: { id: orderId }, select: { total: true } })).toEqual([{ total: 2 }]);
  });

  it('commits jobs it enqueues through ctx.tx only with its success', async () => {
    const orderId = newId();
    const receipt = defineJob('tx.receipt', orderPayload, () => 'sent');
    const checkout = defineJob(
      'tx.enqueues',
      orderPayload,
      async (payload, ctx) => {
        await enqueueJob(ctx.tx, receipt, { orderId: payload.orderId }, { idempotencyKey: `receipt:${payload.orderId}:${ctx.attempt}` });
        if (ctx.attempt === 1) throw new Error('fails after the enqueue');
      },
      { transaction: host, retry: { maxAttempts: 2, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    const worker = await startWorker({ handlers: [checkout] });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, checkout, { orderId });
    await succeeded;
    const receipts = await db.prisma.$queryRaw<{ id: string; key: string }[]>`
      SELECT id::text, idempotency_key AS key FROM runledger.job_queue WHERE job_type = 'tx.receipt'`;
    // Attempt 1's enqueue rolled back with its throw: only attempt 2's exists, written by the completing transaction.
    expect(receipts.map((row) => row.key)).toEqual([`receipt:${orderId}:2`]);
    expect(await writerOf('runledger.job_queue', receipts[0]!.id)).toBe(await writerOf('runledger.job_queue', jobId));
  });

  it('commits each slice of a continued job with its continuation; progress writes go around the transaction', async () => {
    const [first, second] = [newId(), newId()];
    const sliced = defineJob(
      'tx.sliced',
      z.object({ ids: z.array(z.string()) }),
      async ({ ids }, ctx) => {
        const slice = typeof ctx.checkpoint === 'number' ? ctx.checkpoint : 0;
        await ctx.tx.order.create({ data: { id: ids[slice]!, customer: 'hal', total: slice } });
        // On the worker's own connection while the attempt's transaction is open: must not wait for it.
        await ctx.saveProgress({ slice });
        return slice === 0 ? continueNow({ checkpoint: 1 }) : 'both slices';
      },
      { transaction: host },
    );
    const worker = await startWorker({ handlers: [sliced] });
    const continued = nextEvent(worker, 'job:continued');
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, sliced, { ids: [first, second] });
    await continued;
    await succeeded;
    expect(await job(jobId)).toMatchObject({ status: 'SUCCEEDED', output: 'both slices', progress: { slice: 1 } });
    expect(await orderCount(first)).toBe(1);
    expect(await orderCount(second)).toBe(1);
    // Each slice committed its row with its own outcome: two transactions.
    expect(await writerOf('public.host_orders', second)).toBe(await writerOf('runledger.job_queue', jobId));
    expect(await writerOf('public.host_orders', first)).not.toBe(await writerOf('public.host_orders', second));
  });

  it('rolls back when the lease fence refuses the completion inside its transaction', async () => {
    const orderId = newId();
    const wrote = latch();
    const proceed = latch();
    const slow = defineJob(
      'tx.fenced',
      orderPayload,
      async (payload, ctx) => {
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'dee', total: 3 } });
        wrote.open();
        await proceed.promise;
        return 'stale';
      },
      { transaction: host },
    );
    // A long lease: no heartbeat notices the theft first, the completion's fence does.
    const worker = await startWorker({ handlers: [slow], concurrency: 1, leaseSeconds: 120 });
    const lost = nextEvent(worker, 'job:lease_lost');
    const { jobId } = await enqueueJob(db.prisma, slow, { orderId });
    await wrote.promise;
    await stealLease(jobId, 'tx.fenced');
    proceed.open();
    expect((await lost).during).toBe('complete');
    expect(await job(jobId)).toMatchObject({ status: 'LEASED', leaseOwner: 'intruder', attempt: 2 });
    expect(await orderCount(orderId)).toBe(0);
    expect(worker.stats()).toMatchObject({ succeeded: 0, leaseLost: 1 });
  });

  it("releases a workflow step's dependents and settles its run in the same commit", async () => {
    const orderId = newId();
    const reserve = defineJob(
      'tx.reserve',
      orderPayload,
      async (payload, ctx) => {
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'eve', total: 5 } });
        return { reserved: true };
      },
      { transaction: host },
    );
    const ship = defineJob('tx.ship', orderPayload, () => 'shipped');
    // 'tx.ship' is not registered: its job, once released, waits PENDING for the assertions.
    const worker = await startWorker({ handlers: [reserve] });
    const reserved = nextEvent(worker, 'job:success', (event) => event.job.jobType === 'tx.reserve');
    const run = await enqueueWorkflowRun(
      db.prisma,
      workflow('tx.fulfil', { orderId }).job('reserve', reserve, { orderId }).job('ship', ship, { orderId }).afterSuccess('ship', ['reserve']).build(),
    );
    await reserved;
    const [shipJob] = await db.prisma.$queryRaw<{ id: string }[]>`
      SELECT ws.job_id::text AS id FROM runledger.workflow_steps ws WHERE ws.workflow_run_id = ${run.workflowRunId}::uuid AND ws.step_key = 'ship'`;
    expect(shipJob?.id).toBeTruthy();
    // The dependent's job was inserted by the transaction that wrote the host's row.
    expect(await writerOf('runledger.job_queue', shipJob!.id)).toBe(await writerOf('public.host_orders', orderId));
  });

  it('is bounded by its timeout: a statement past it is canceled, its writes rolled back, the failure a job.timeout', async () => {
    const orderId = newId();
    const stuck = defineJob(
      'tx.timeout',
      orderPayload,
      async (payload, ctx) => {
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'fay', total: 6 } });
        // Ignores its signal: only the transaction's bounds can stop it.
        await ctx.tx.$queryRaw`SELECT pg_sleep(30)`;
        return 'too late';
      },
      { transaction: host, timeoutSeconds: 1, retry: { maxAttempts: 1 } },
    );
    const worker = await startWorker({ handlers: [stuck] });
    const failed = nextEvent(worker, 'job:failure');
    const started = Date.now();
    const { jobId } = await enqueueJob(db.prisma, stuck, { orderId });
    expect(await failed).toMatchObject({ code: 'job.timeout', status: 'DEAD_LETTERED' });
    expect(await job(jobId)).toMatchObject({ status: 'DEAD_LETTERED', lastErrorCode: 'job.timeout' });
    expect(await orderCount(orderId)).toBe(0);
    // The 30 s statement did not hold the connection: its backend is idle again well before that.
    const [busy] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND state = 'active'`;
    expect(busy!.n).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('rolls back an attempt still open at the drain deadline and gives the job back unused', async () => {
    const orderId = newId();
    const opened = latch();
    const stubborn = defineJob(
      'tx.shutdown',
      orderPayload,
      async (payload, ctx) => {
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'ivy', total: 8 } });
        opened.open();
        await new Promise(() => undefined); // ignores its signal: only the abort of its transaction ends it
      },
      { transaction: host },
    );
    const worker = await startWorker({ handlers: [stubborn] });
    const released = nextEvent(worker, 'job:released');
    const { jobId } = await enqueueJob(db.prisma, stubborn, { orderId });
    await opened.promise;
    await worker.stop({ drainMs: 50 });
    expect((await released).reason).toBe('job.worker_shutdown');
    expect(await job(jobId)).toMatchObject({ status: 'PENDING', attempt: 0 });
    expect(await orderCount(orderId)).toBe(0);
  });

  it('does not hold up direct jobs: they complete in batches while a transactional attempt stays open', async () => {
    const orderId = newId();
    const opened = latch();
    const proceed = latch();
    const longTx = defineJob(
      'tx.long',
      orderPayload,
      async (payload, ctx) => {
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'gus', total: 7 } });
        opened.open();
        await proceed.promise;
        return 'late';
      },
      { transaction: host },
    );
    const direct = defineJob('tx.direct', z.object({ n: z.number() }), ({ n }) => n);
    const worker: Worker = await startWorker({ handlers: [longTx, direct], concurrency: 4 });
    const directDone = countdown(20);
    worker.on('job:success', (event) => {
      if (event.job.jobType === 'tx.direct') directDone.arrive();
    });
    const txDone = nextEvent(worker, 'job:success', (event) => event.job.jobType === 'tx.long');
    const { jobId } = await enqueueJob(db.prisma, longTx, { orderId });
    await opened.promise;
    for (let n = 0; n < 20; n += 1) await enqueueJob(db.prisma, direct, { n });
    await directDone.promise;
    expect(await job(jobId)).toMatchObject({ status: 'LEASED' });
    expect(await orderCount(orderId)).toBe(0);
    proceed.open();
    await txDone;
    expect(await orderCount(orderId)).toBe(1);
  });
});
