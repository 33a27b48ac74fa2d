/**
 * A database fault inside a transactional attempt does not use up the
 * attempt: an attempt whose transaction could not open (the handler never
 * ran), or whose transaction's connection was lost under the handler, is
 * released as `database.unavailable` and re-runs. The host's client goes
 * through a fault proxy; the worker's own client stays direct, so the release
 * itself is recorded at once.
 */
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJob, getJob, noOrganizationScope } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { defineJob } from '../../src/worker/index.js';
import { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';
import { latch, nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { startFaultProxy, type FaultProxy } from '../harness/fault-proxy.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
let proxy: FaultProxy;
let host: HostPrismaClient;

beforeAll(async () => {
  const pool = db.newPool({ max: 1 });
  await pool.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
});
afterEach(async () => {
  await host?.$disconnect();
  await proxy?.close();
});
afterAll(async () => {
  await host?.$disconnect();
});

async function hostThroughProxy(): Promise<HostPrismaClient> {
  proxy = await startFaultProxy(db.url);
  host = new HostPrismaClient({ adapter: new PrismaPg({ connectionString: proxy.url, max: 4, connectionTimeoutMillis: 2_000 }) });
  // The first transaction asks the client's isolation default: asked now, so the fault below meets the attempt itself.
  await host.$queryRaw`SELECT 1`;
  return host;
}

/** The job's closed attempts, read on the worker's own (direct) client: how each one ended, and why. */
async function attemptsOf(jobId: string): Promise<{ outcome: string; code: string | null }[]> {
  return db.prisma.$queryRaw<{ outcome: string; code: string | null }[]>`
    SELECT outcome::text, error_code AS code FROM runledger.job_attempts
     WHERE job_id = ${jobId}::uuid AND outcome IS NOT NULL ORDER BY seq`;
}

const orderPayload = z.object({ orderId: z.string() });

describe('a transactional attempt meeting a database fault', () => {
  it('whose transaction cannot open is released unspent as database.unavailable, and runs once the database is back', async () => {
    const client = await hostThroughProxy();
    let handlerRuns = 0;
    const createOrder = defineJob(
      'txfault.open',
      orderPayload,
      async (payload, ctx) => {
        handlerRuns += 1;
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'ada', total: 1 } });
      },
      { transaction: client, retry: { maxAttempts: 1 } },
    );
    const worker = await startWorker({ handlers: [createOrder] });
    await proxy.cut();
    const released = nextEvent(worker, 'job:released');
    const orderId = newId();
    const { jobId } = await enqueueJob(db.prisma, createOrder, { orderId });
    expect((await released).reason).toBe('database.unavailable');
    // Given back before the handler ran, with its attempt not used up: the one allowed attempt is still to come.
    expect(handlerRuns).toBe(0);
    const during = await attemptsOf(jobId);
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((attempt) => attempt.outcome === 'RELEASED' && attempt.code === 'database.unavailable')).toBe(true);

    const succeeded = nextEvent(worker, 'job:success', ({ job }) => job.jobId === jobId);
    await proxy.restore();
    await succeeded;
    const after = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(after).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
    expect(handlerRuns).toBe(1);
    expect(await client.order.count({ where: { id: orderId } })).toBe(1);
  });

  it('whose connection is lost under the handler is released unspent and re-runs on clean data', async () => {
    const client = await hostThroughProxy();
    const inserted = latch();
    const cut = latch();
    let handlerRuns = 0;
    const createOrder = defineJob(
      'txfault.lost',
      orderPayload,
      async (payload, ctx) => {
        handlerRuns += 1;
        await ctx.tx.order.create({ data: { id: payload.orderId, customer: 'ada', total: 1 } });
        if (handlerRuns === 1) {
          inserted.open();
          await cut.promise;
        }
        return { rows: await ctx.tx.order.count({ where: { id: payload.orderId } }) };
      },
      { transaction: client, retry: { maxAttempts: 1 } },
    );
    const worker = await startWorker({ handlers: [createOrder] });
    const released = nextEvent(worker, 'job:released');
    const orderId = newId();
    const { jobId } = await enqueueJob(db.prisma, createOrder, { orderId });
    await inserted.promise;
    await proxy.cut();
    cut.open();
    expect((await released).reason).toBe('database.unavailable');
    expect(await attemptsOf(jobId)).toEqual([{ outcome: 'RELEASED', code: 'database.unavailable' }]);

    const succeeded = nextEvent(worker, 'job:success', ({ job }) => job.jobId === jobId);
    await proxy.restore();
    // The first attempt's insert was rolled back with its transaction: the re-run finds no row and writes one.
    expect((await succeeded).output).toEqual({ rows: 1 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
    expect(handlerRuns).toBe(2);
  });

  it("spends the attempt when the handler's own call fails with a socket error while its transaction is alive", async () => {
    const client = await hostThroughProxy();
    const callsPaymentApi = defineJob(
      'txfault.external',
      orderPayload,
      async () => {
        // What fetch() throws when a payment API refuses the connection: not runledger's database.
        throw Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' }) });
      },
      { transaction: client, retry: { maxAttempts: 1 } },
    );
    const worker = await startWorker({ handlers: [callsPaymentApi] });
    const failed = nextEvent(worker, 'job:failure');
    const { jobId } = await enqueueJob(db.prisma, callsPaymentApi, { orderId: newId() });
    expect(await failed).toMatchObject({ code: 'job.handler_error', status: 'DEAD_LETTERED' });
    expect(await attemptsOf(jobId)).toEqual([{ outcome: 'DEAD_LETTERED', code: 'job.handler_error' }]);
  });
});
