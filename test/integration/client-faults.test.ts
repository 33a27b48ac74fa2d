/**
 * Causes a caller can act on reach them as coded errors, on the Prisma client
 * and on poolDb alike: an ended pool is `client.pool_ended`, a read-only
 * session (a replica URL, `default_transaction_read_only`) is
 * `database.read_only`, and nothing is written. poolDb's own input is
 * refused by name: `$transaction` options, and anything that is not a pg
 * Pool however pool-shaped.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { enqueueJob, enqueueWorkflowRun, getJob, isRunledgerError, noOrganizationScope, poolDb, workflow, type PrismaClientLike } from '../../src/index.js';
import { createDashboard } from '../../src/dashboard/index.js';
import { createWorker, defineJob } from '../../src/worker/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const countJobs = async (jobType: string): Promise<number> => {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${jobType}`;
  return row!.n;
};

const caught = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/** Both clients over a fresh pool of their own; `end` ends the pools (the harness's pools must stay open). */
function clientsOver(config: pg.PoolConfig = {}): { clients: [string, PrismaClientLike][]; end(): Promise<void> } {
  const forPrisma = new pg.Pool({ connectionString: db.url, max: 2, ...config });
  const forPool = new pg.Pool({ connectionString: db.url, max: 2, ...config });
  const prisma = new PrismaClient({ adapter: new PrismaPg(forPrisma) });
  const viaPool = poolDb(forPool);
  return {
    clients: [
      ['prisma', prisma],
      ['poolDb', viaPool],
    ],
    async end() {
      await (viaPool as unknown as { $disconnect(): Promise<void> }).$disconnect();
      await prisma.$disconnect();
      await Promise.all([forPrisma, forPool].filter((pool) => !pool.ending).map((pool) => pool.end()));
    },
  };
}

describe('an ended pool', () => {
  it('is client.pool_ended from enqueueJob, getJob and enqueueWorkflowRun on both clients, not a raw pg error', async () => {
    const { clients, end } = clientsOver();
    const jobId = (await enqueueJob(db.prisma, { jobType: 'faults.ended.seed', payload: {} })).jobId;
    const flow = workflow('faults.ended').job('a', 'faults.ended.step', {}).build();
    for (const [, client] of clients) await client.$queryRaw`SELECT 1`; // connected once, then ended
    await end();
    for (const [name, client] of clients) {
      const attempts = [
        caught(enqueueJob(client, { jobType: 'faults.ended', payload: {} })),
        caught(getJob(client, { scope: noOrganizationScope(), jobId })),
        caught(enqueueWorkflowRun(client, flow)),
      ];
      for (const error of await Promise.all(attempts)) {
        expect(isRunledgerError(error, 'client.pool_ended'), `${name}: ${String(error)}`).toBe(true);
        expect(error).toMatchObject({ category: 'validation', field: 'db' });
        expect((error as Error).message).not.toContain('Cannot use a pool');
      }
    }
    expect(await countJobs('faults.ended')).toBe(0);
  });
});

describe('a read-only session', () => {
  it('is database.read_only with a message saying what to do, on both clients, and writes nothing', async () => {
    const { clients, end } = clientsOver({ options: '-c default_transaction_read_only=on' });
    try {
      for (const [name, client] of clients) {
        const error = await caught(enqueueJob(client, { jobType: 'faults.read_only', payload: {} }));
        expect(isRunledgerError(error, 'database.read_only'), `${name}: ${String(error)}`).toBe(true);
        expect(error).toMatchObject({ category: 'unavailable', details: { sqlState: '25006' } });
        expect((error as Error).message).toMatch(/read-only.*primary/);
        expect((error as Error).message).not.toMatch(/INSERT|SELECT/);
      }
    } finally {
      await end();
    }
    expect(await countJobs('faults.read_only')).toBe(0);
  });
});

describe("poolDb's $transaction options", () => {
  it.each([
    ['options.isolationLevel', { isolationLevel: 'Chaos' }],
    ['options.isolationLevel', { isolationLevel: 'toString' }],
    ['options.maxWait', { maxWait: -1 }],
    ['options.maxWait', { maxWait: 0.5 }],
    ['options.timeout', { timeout: -1 }],
    ['options.timeout', { timeout: Number.NaN }],
    ['options', null],
  ])('refuses %s in %o before taking a connection', async (field, options) => {
    const pool = db.newPool({ max: 1 });
    const client = poolDb(pool);
    let ran = false;
    const error = await caught(
      client.$transaction(async () => {
        ran = true;
      }, options as never),
    );
    expect(isRunledgerError(error, 'client.invalid_options'), String(error)).toBe(true);
    expect(error).toMatchObject({ category: 'validation', field });
    expect(ran).toBe(false);
    expect(pool.totalCount).toBe(0);
  });
});

describe('the pg Pool check', () => {
  /** Has every method and counter a pool shows, and is not one. */
  class PoolShaped extends EventEmitter {
    totalCount = 0;
    idleCount = 0;
    waitingCount = 0;
    options = {};
    connect = async () => ({ query: async () => ({ rows: [] }), release() {} });
    query = async () => ({ rows: [], rowCount: 0 });
    end = async () => undefined;
  }

  it('refuses a pool-shaped object on every surface that takes a pool, naming the field', () => {
    const fake = new PoolShaped() as unknown as pg.Pool;
    expect(() => poolDb(fake)).toThrow(expect.objectContaining({ code: 'client.invalid', field: 'pool' }));
    expect(() => createWorker({ db: fake, handlers: [defineJob('faults.x', z.object({}), async () => null)] })).toThrow(
      expect.objectContaining({ code: 'worker.invalid_options', field: 'db' }),
    );
    expect(() => createDashboard({ db: fake as never, authorize: () => null })).toThrow(
      expect.objectContaining({ code: 'dashboard.invalid_options', field: 'db' }),
    );
  });

  it('accepts a pool from a second copy of pg, as a host pinning its own pg version has', async () => {
    const require = createRequire(import.meta.url);
    const path = require.resolve('pg-pool', { paths: [require.resolve('pg')] });
    const cached = require.cache[path];
    delete require.cache[path];
    const SecondPool = require(path) as new (options: pg.PoolConfig & { Client: typeof pg.Client }) => pg.Pool;
    if (cached) require.cache[path] = cached;
    const second = new SecondPool({ connectionString: db.url, max: 1, Client: pg.Client });
    expect(second).not.toBeInstanceOf(pg.Pool);
    const client = poolDb(second);
    try {
      expect(await client.$queryRaw<{ n: number }[]>`SELECT 1::int AS n`).toEqual([{ n: 1 }]);
    } finally {
      await (client as unknown as { $disconnect(): Promise<void> }).$disconnect();
      await second.end();
    }
  });
});
