/**
 * createWorker given the host's Prisma client built on `new PrismaPg(pool)`: the worker's own statements go
 * through that pool (`poolDb`), not Prisma's query layer, while a transactional job type still runs in a
 * transaction of the host's Prisma client; `adapterPool: false`, or a client whose pool cannot be reached,
 * keeps them on Prisma and the start log says which. Prisma's query events count the statements it sent.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { prismaAdapterPool } from '../../src/client/adapter-pool.js';
import { preparedStatementName } from '../../src/client/connect.js';
import { PoolDb } from '../../src/client/pool-db.js';
import { isTransactionClient } from '../../src/client/types.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { enqueueJobs, getJob, noOrganizationScope } from '../../src/index.js';
import { createWorker, defineJob, type Worker, type WorkerLogger } from '../../src/worker/index.js';
import { resolveWorkerOptions } from '../../src/worker/options.js';
import { countdown } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const workers: Worker[] = [];
const clients: PrismaClient[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
  await Promise.all(clients.splice(0).map((client) => client.$disconnect()));
});

/** A host's Prisma client on its own pool, counting the statements Prisma sends. */
function hostClient(pool: pg.Pool, named = true): { prisma: PrismaClient; sent: () => number } {
  const prisma = new PrismaClient({
    adapter: new PrismaPg(pool, named ? { statementNameGenerator: preparedStatementName } : {}),
    log: [{ emit: 'event', level: 'query' }],
  });
  let sent = 0;
  prisma.$on('query', () => {
    sent += 1;
  });
  clients.push(prisma);
  return { prisma, sent: () => sent };
}

function recordingLogger(lines: string[]): WorkerLogger {
  const record = (message: string) => {
    lines.push(message);
  };
  return { debug: () => undefined, info: record, warn: record, error: record };
}

const handlers = [defineJob('adapter.noop', z.object({ n: z.number() }), async ({ n }) => ({ n }))];

describe('the pool under a PrismaPg adapter', () => {
  it('is found on a client built on a pg Pool, with the adapter naming its statements or not', () => {
    const pool = db.newPool({ max: 2 });
    expect(prismaAdapterPool(hostClient(pool).prisma)).toEqual({ pool, preparedStatements: true });
    expect(prismaAdapterPool(hostClient(pool, false).prisma)).toEqual({ pool, preparedStatements: false });
  });

  it('is not found where Prisma keeps no pool of the host (a URL), or on anything else, and nothing throws', () => {
    const fromUrl = new PrismaClient({ adapter: new PrismaPg(db.url) });
    clients.push(fromUrl);
    expect(prismaAdapterPool(fromUrl)).toBeUndefined();
    expect(prismaAdapterPool({})).toBeUndefined();
    expect(prismaAdapterPool(null)).toBeUndefined();
    expect(prismaAdapterPool({ _engineConfig: { adapter: { adapterName: '@prisma/adapter-pg', externalPool: {} } } })).toBeUndefined();
    const throwing = Object.defineProperty({}, '_engineConfig', {
      get() {
        throw new Error('no');
      },
    });
    expect(prismaAdapterPool(throwing)).toBeUndefined();
  });

  it('is ignored once the host ended it: the worker stays on the Prisma client', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 2 }); // not the harness's: this test ends it
    const { prisma } = hostClient(pool);
    await pool.end();
    expect(prismaAdapterPool(prisma)).toBeUndefined();
    expect(resolveWorkerOptions({ db: prisma, handlers }).dbPath).toBe('prisma');
  });
});

describe('createWorker({ db: prisma }) on PrismaPg(pool)', () => {
  it('sends none of its statements through Prisma, and a transactional job still commits in a Prisma transaction', async () => {
    const pool = db.newPool({ max: 6 });
    const { prisma, sent } = hostClient(pool);
    const resolved = resolveWorkerOptions({ db: prisma, handlers });
    expect(resolved.dbPath).toBe('adapter-pool');
    expect(resolved.db).toBeInstanceOf(PoolDb);

    let txWasPrisma = false;
    const done = countdown(20 + 1);
    const lines: string[] = [];
    const worker = createWorker({
      db: prisma,
      listenConnectionString: db.url,
      handlers: [
        ...handlers,
        defineJob(
          'adapter.tx',
          z.object({}),
          async (_payload, ctx) => {
            // The host's own transaction client, not one of runledger's pool client.
            txWasPrisma = isTransactionClient(ctx.tx) && !(ctx.tx instanceof PoolDb) && typeof ctx.tx.$queryRaw === 'function';
            await ctx.tx.$executeRaw`SELECT 1`;
            return { tx: true };
          },
          { transaction: prisma },
        ),
      ],
      concurrency: 4,
      logger: recordingLogger(lines),
      reaper: false,
    });
    workers.push(worker);
    worker.on('job:success', done.arrive);
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 20 }, (_, n) => ({ jobType: 'adapter.noop', payload: { n } })),
    );
    const [transactional] = await enqueueJobs(db.prisma, [{ jobType: 'adapter.tx', payload: {} }]);
    const before = sent();
    await worker.start();
    await done.promise;
    const duringRun = sent() - before;
    await worker.stop();
    expect(lines).toContain("worker statements: through the pg Pool under the Prisma client's PrismaPg adapter, without Prisma's query layer (adapterPool)");
    expect(txWasPrisma).toBe(true);
    // The transactional attempt's own statements (its transaction, the handler's SELECT, the completion in it)
    // are Prisma's; everything else the worker sent (start checks, claims, 20 completions) went to the pool.
    expect(duringRun).toBeGreaterThan(0);
    expect(duringRun).toBeLessThan(10);
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: transactional!.jobId })).output).toEqual({ tx: true });
    // The host's pool is the host's: still open after stop().
    expect((await pool.query('SELECT 1 AS n')).rows[0].n).toBe(1);
  });

  it('with adapterPool: false sends its statements through Prisma, and says at start that the pool is faster', async () => {
    const pool = db.newPool({ max: 6 });
    const { prisma, sent } = hostClient(pool);
    expect(resolveWorkerOptions({ db: prisma, handlers, adapterPool: false }).db).toBe(prisma);
    const done = countdown(20);
    const lines: string[] = [];
    const worker = createWorker({
      db: prisma,
      adapterPool: false,
      listenConnectionString: db.url,
      handlers,
      concurrency: 4,
      logger: recordingLogger(lines),
      reaper: false,
    });
    workers.push(worker);
    worker.on('job:success', done.arrive);
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 20 }, (_, n) => ({ jobType: 'adapter.noop', payload: { n } })),
    );
    const before = sent();
    await worker.start();
    await done.promise;
    await worker.stop();
    // At least a claim and a completion per batch, and the start checks: far more than the pool path's none.
    expect(sent() - before).toBeGreaterThanOrEqual(4);
    expect(lines.some((line) => line.startsWith("worker statements: through the Prisma client's query layer"))).toBe(true);
  });

  it('leaves a client built with disposeExternalPool ending its pool on $disconnect, though Prisma sent nothing itself', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 4 }); // ended by the client below, not by the harness
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName, disposeExternalPool: true }) });
    const done = countdown(3);
    const worker = createWorker({ db: prisma, handlers, concurrency: 2, logger: recordingLogger([]), reaper: false, listen: false, pollIntervalMs: 50 });
    worker.on('job:success', done.arrive);
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 3 }, (_, n) => ({ jobType: 'adapter.noop', payload: { n } })),
    );
    await worker.start();
    await done.promise;
    await worker.stop();
    await prisma.$disconnect();
    expect(pool.ended).toBe(true);
  });

  it('refuses a non-boolean adapterPool, naming the field', () => {
    expect(() => resolveWorkerOptions({ db: db.prisma, handlers, adapterPool: 'yes' as unknown as boolean })).toThrow(/adapterPool/);
  });
});
