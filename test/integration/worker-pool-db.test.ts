/**
 * The worker's client over a pg Pool (src/client/pool-db.ts) answers as
 * Prisma's does: the same JS values for every column type runledger reads,
 * the same parameters, nested fragments, and interactive transactions with
 * Prisma's isolation, maxWait and timeout semantics; and createWorker runs
 * direct jobs, a workflow chain and failures through it, leaving the host's
 * pool open.
 */
import { sqltag } from '@prisma/client/runtime/client';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isTransactionClient } from '../../src/client/types.js';
import { createPoolDb } from '../../src/client/connect.js';
import { PoolDb } from '../../src/client/pool-db.js';
import { withTransaction } from '../../src/client/transaction.js';
import { normalizeDatabaseError } from '../../src/errors/database-error.js';
import { enqueueJobs, enqueueWorkflowRun, getJob, getWorkflowRun, isRunledgerError, noOrganizationScope, workflow } from '../../src/index.js';
import { createWorker, defineJob, silentLogger, TerminalError, type Worker } from '../../src/worker/index.js';
import { countdown } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
let pool: pg.Pool;
let poolDb: PoolDb;
const workers: Worker[] = [];

beforeAll(() => {
  pool = db.newPool({ max: 4 });
  poolDb = new PoolDb(pool, { preparedStatements: !db.viaPooler });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
});
afterAll(async () => {
  await poolDb.$disconnect(); // not its pool: the harness ends it
});

const at = new Date('2026-03-04T05:06:07.089Z');

describe('PoolDb answers as the Prisma client does', () => {
  it('returns the same values for every column type runledger reads, NULLs included', async () => {
    const query = (client: { $queryRaw: PoolDb['$queryRaw'] }) => client.$queryRaw<Record<string, unknown>[]>`
      SELECT 1::int AS int4, 9007199254740993::int8 AS int8, 2.5::float8 AS float8, true AS bool, 'x'::text AS text,
             'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS uuid, ${at}::timestamptz AS timestamptz,
             '2026-03-04 05:06:07.089'::timestamp AS timestamp, '2026-03-04'::date AS date,
             '{"a":[1,{"b":null}],"c":"d"}'::jsonb AS jsonb_object, '[1,"2"]'::jsonb AS jsonb_array, '"s"'::jsonb AS jsonb_string,
             'null'::jsonb AS jsonb_null, '{"k":1}'::json AS json, ARRAY['a','b,c']::text[] AS texts, ARRAY[1,2]::int[] AS ints,
             ARRAY[1,9007199254740993]::int8[] AS int8s, ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11']::uuid[] AS uuids,
             ARRAY[${at}::timestamptz] AS timestamptzs, NULL::text AS null_text, NULL::int8 AS null_int8,
             NULL::jsonb AS null_jsonb, NULL::timestamptz AS null_timestamptz, NULL::text[] AS null_texts, count(*) AS count
        FROM (VALUES (1)) v(x)`;
    const [viaPrisma] = await query(db.prisma);
    const [viaPool] = await query(poolDb);
    expect(viaPool).toEqual(viaPrisma);
    // What both return, spelled out, so a change of Prisma's mapping shows here too.
    expect(viaPool).toMatchObject({ int8: 9007199254740993n, count: 1n, timestamptz: at, timestamp: at, date: new Date('2026-03-04T00:00:00Z') });
    expect(viaPool!.int8s).toEqual([1n, 9007199254740993n]);
  });

  it('binds parameters as Prisma does: Dates, arrays, bigints, booleans, NULL, JSON text, and nested fragments', async () => {
    const inner = sqltag`${'frag'}::text || ${'ment'}::text`;
    const query = (client: { $queryRaw: PoolDb['$queryRaw'] }) => client.$queryRaw<Record<string, unknown>[]>`
      SELECT ${at}::timestamptz AS at, ${['a', 'b']}::text[] AS texts, ${[1, 2]}::int[] AS ints, ${12n}::int8 AS big,
             ${true}::boolean AS yes, ${null}::text AS nothing, ${JSON.stringify({ a: [1, 'x'] })}::jsonb AS doc,
             ${inner} AS joined, ${2.5}::float8 AS half`;
    expect(await query(poolDb)).toEqual(await query(db.prisma));
    const [row] = await query(poolDb);
    expect(row).toMatchObject({ at, texts: ['a', 'b'], big: 12n, doc: { a: [1, 'x'] }, joined: 'fragment' });
  });

  it('counts affected rows with $executeRaw', async () => {
    await db.prisma.$executeRaw`CREATE TABLE IF NOT EXISTS pooldb_rows (n int)`;
    expect(await poolDb.$executeRaw`INSERT INTO pooldb_rows SELECT g FROM generate_series(1, ${3}::int) g`).toBe(3);
    expect(await poolDb.$executeRaw`DELETE FROM pooldb_rows`).toBe(3);
  });

  it('is a root client; its transaction client is a transaction client', async () => {
    expect(isTransactionClient(poolDb)).toBe(false);
    await poolDb.$transaction(async (tx) => {
      expect(isTransactionClient(tx)).toBe(true);
    });
  });
});

describe('PoolDb transactions', () => {
  beforeAll(async () => {
    await db.prisma.$executeRaw`CREATE TABLE IF NOT EXISTS pooldb_tx (n int)`;
  });

  it('commits what the callback wrote, in one transaction on one connection', async () => {
    const pids = await poolDb.$transaction(async (tx) => {
      await tx.$executeRaw`INSERT INTO pooldb_tx VALUES (1)`;
      const [a] = await tx.$queryRaw<{ pid: number; xid: string }[]>`SELECT pg_backend_pid() AS pid, pg_current_xact_id()::text AS xid`;
      const [b] = await tx.$queryRaw<{ pid: number; xid: string }[]>`SELECT pg_backend_pid() AS pid, pg_current_xact_id()::text AS xid`;
      return [a, b];
    });
    expect(pids[0]).toEqual(pids[1]);
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pooldb_tx WHERE n = 1`;
    expect(row!.n).toBe(1);
  });

  it('rolls back and rethrows when the callback throws', async () => {
    const error = new Error('boom');
    await expect(
      poolDb.$transaction(async (tx) => {
        await tx.$executeRaw`INSERT INTO pooldb_tx VALUES (2)`;
        throw error;
      }),
    ).rejects.toBe(error);
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pooldb_tx WHERE n = 2`;
    expect(row!.n).toBe(0);
  });

  it('does not report a commit when a statement it swallowed aborted the transaction', async () => {
    await expect(
      poolDb.$transaction(async (tx) => {
        await tx.$executeRaw`INSERT INTO pooldb_tx VALUES (3)`;
        // The caller swallows the failure (the statement did fail: asserted), then returns normally.
        await expect(Promise.resolve(tx.$queryRaw`SELECT 1 / 0`)).rejects.toThrow();
      }),
    ).rejects.toThrow(/Transaction already closed/);
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pooldb_tx WHERE n = 3`;
    expect(row!.n).toBe(0);
  });

  it('opens the isolation level asked for, and the session default otherwise', async () => {
    const level = (options?: { isolationLevel: 'Serializable' | 'RepeatableRead' }) =>
      poolDb.$transaction(async (tx) => (await tx.$queryRaw<{ level: string }[]>`SELECT current_setting('transaction_isolation') AS level`)[0]!.level, options);
    expect(await level({ isolationLevel: 'Serializable' })).toBe('serializable');
    expect(await level({ isolationLevel: 'RepeatableRead' })).toBe('repeatable read');
    expect(await level()).toBe('read committed');
  });

  it('past its timeout refuses statements as a closed transaction and rolls back', async () => {
    let refused: unknown;
    await expect(
      poolDb.$transaction(
        async (tx) => {
          await tx.$executeRaw`INSERT INTO pooldb_tx VALUES (4)`;
          await new Promise((resolve) => setTimeout(resolve, 150));
          refused = await Promise.resolve(tx.$queryRaw`SELECT 1`).catch((error: unknown) => error);
        },
        { timeout: 50 },
      ),
    ).rejects.toThrow(/Transaction already closed/);
    expect(refused).toMatchObject({ code: 'P2028' });
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pooldb_tx WHERE n = 4`;
    expect(row!.n).toBe(0);
    // runledger's own transactions name it as Prisma's: a closed transaction, not a database fault.
    const viaRunledger = await withTransaction(
      poolDb,
      'probe',
      async ({ tx }) => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        return tx.$queryRaw`SELECT 1`;
      },
      { timeoutMs: 50 },
    ).catch((error: unknown) => error);
    expect(isRunledgerError(viaRunledger, 'database.transaction_closed')).toBe(true);
  });

  it('gives up on a connection after maxWait as database.unavailable, and the late connection goes back to the pool', async () => {
    const small = db.newPool({ max: 1 });
    const one = new PoolDb(small);
    const held = await small.connect();
    const started = Date.now();
    const error = await one.$transaction(async () => undefined, { maxWait: 100 }).catch((caught: unknown) => caught);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(normalizeDatabaseError(error, 'probe').code).toBe('database.unavailable');
    held.release();
    // The connection that arrived after the timeout was released: the pool serves the next transaction.
    const next = Date.now();
    expect(await one.$transaction(async (tx) => (await tx.$queryRaw<{ n: number }[]>`SELECT 1 AS n`)[0]!.n, { maxWait: 2_000 })).toBe(1);
    expect(Date.now() - next).toBeLessThan(1_000);
  });
});

describe('PoolDb when the server terminates its connections', () => {
  const terminate = (pid: number) => db.prisma.$queryRaw`SELECT pg_terminate_backend(${pid}::int)`;

  it('an idle pooled connection terminated: no crash, the next statement connects anew', async () => {
    const bare = new pg.Pool({ connectionString: db.url, max: 1 }); // no 'error' listener of its own
    const client = new PoolDb(bare);
    const [first] = await client.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const dropped = new Promise<void>((resolve) => bare.once('error', () => resolve()));
    await terminate(first!.pid);
    await dropped; // emitted on the pool: PoolDb's listener keeps it from crashing the process
    const [second] = await client.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    expect(second!.pid).not.toBe(first!.pid);
    await client.$disconnect();
    await bare.end();
  });

  it('terminated between two statements of a transaction: the transaction fails as database.unavailable, no crash', async () => {
    const bare = new pg.Pool({ connectionString: db.url, max: 1 });
    const client = new PoolDb(bare);
    const error = await client
      .$transaction(async (tx) => {
        const [row] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
        await terminate(row!.pid);
        await new Promise((resolve) => setTimeout(resolve, 100)); // the FATAL arrives while no statement runs
        await tx.$queryRaw`SELECT 1`;
      })
      .catch((caught: unknown) => caught);
    expect(normalizeDatabaseError(error, 'probe').code).toBe('database.unavailable');
    expect((await client.$queryRaw<{ n: number }[]>`SELECT 1 AS n`)[0]!.n).toBe(1);
    await client.$disconnect();
    await bare.end();
  });
});

describe('PoolDb when a connection fails as it finishes connecting', () => {
  /**
   * What pg does when a backend is terminated as its handshake ends and the FATAL arrives in the same read:
   * the pool hands the connection out (dropping its idle listener), then, before the code awaiting
   * `pool.connect()` resumes, the connection emits 'error'. With no listener that throws out of pg's socket
   * handler and ends the process (the 10-minute chaos run lost pool-backed workers to it).
   */
  class FatalAfterHandshake extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: (error: Error) => void): void;
    override connect(callback?: (error: Error) => void): Promise<pg.Client> | undefined {
      if (!callback) return super.connect();
      super.connect((error: Error) => {
        callback(error);
        if (!error) this.emit('error', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
      });
      return undefined;
    }
  }

  it('keeps a listener on every new connection, so the error reaches no one and crashes nothing', async () => {
    const bare = new pg.Pool({ connectionString: db.url, max: 1, Client: FatalAfterHandshake });
    const client = new PoolDb(bare);
    expect(bare.listenerCount('connect')).toBe(1);
    // The transaction awaits pool.connect(): the gap in which the error is emitted.
    const n = await client.$transaction(async (tx) => (await tx.$queryRaw<{ n: number }[]>`SELECT 1 AS n`)[0]!.n);
    expect(n).toBe(1);
    await client.$disconnect();
    expect(bare.listenerCount('connect')).toBe(0);
    await bare.end();
  });
});

describe('createWorker with db: a pg Pool', () => {
  it('runs direct jobs, a workflow chain and a failure through the pool, and leaves the pool open', async () => {
    const workerPool = new pg.Pool({ connectionString: db.viaPooler ? db.poolerUrl : db.url, max: 6 });
    const done = countdown(50 + 3 + 1);
    const seen: string[] = [];
    const worker = createWorker({
      db: workerPool,
      ...(db.viaPooler ? { preparedStatements: false } : {}),
      handlers: [
        defineJob('pool.direct', z.object({ n: z.number() }), async ({ n }) => ({ n })),
        defineJob('pool.step', z.object({ key: z.string() }), async ({ key }, ctx) => {
          seen.push(`${key}:${[...ctx.prerequisites.keys()].join(',')}`);
          return { key };
        }),
        defineJob('pool.fail', z.object({}), async () => {
          throw new TerminalError('refused on purpose', { code: 'pool.refused' });
        }),
      ],
      concurrency: 4,
      logger: silentLogger,
      reaper: false,
      listen: false,
      pollIntervalMs: 50,
    });
    workers.push(worker);
    worker.on('job:success', done.arrive);
    worker.on('job:failure', done.arrive);
    const direct = await enqueueJobs(
      db.prisma,
      Array.from({ length: 50 }, (_, n) => ({ jobType: 'pool.direct', payload: { n } })),
    );
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('pool.chain')
        .job('a', 'pool.step', { key: 'a' })
        .job('b', 'pool.step', { key: 'b' })
        .job('c', 'pool.step', { key: 'c' })
        .afterSuccess('b', ['a'])
        .afterSuccess('c', ['b'])
        .resultStep('c')
        .build(),
    );
    const [failing] = await enqueueJobs(db.prisma, [{ jobType: 'pool.fail', payload: {} }]);
    await worker.start();
    await done.promise;
    await worker.stop();
    expect(seen).toEqual(['a:', 'b:a', 'c:b']);
    const scope = noOrganizationScope();
    expect((await getWorkflowRun(db.prisma, { scope, workflowRunId })).status).toBe('SUCCEEDED');
    expect((await getJob(db.prisma, { scope, jobId: direct[0]!.jobId })).output).toEqual({ n: 0 });
    expect((await getJob(db.prisma, { scope, jobId: failing!.jobId })).status).toBe('DEAD_LETTERED');
    // The host's pool is the host's: still open after stop().
    expect((await workerPool.query('SELECT 1 AS n')).rows[0].n).toBe(1);
    await workerPool.end();
  });

  it('refuses a single pg Client as db (it cannot serve concurrent statements), naming the field', () => {
    const single = new pg.Client({ connectionString: db.url });
    expect(() => createWorker({ db: single as unknown as pg.Pool, handlers: [defineJob('pool.x', z.object({}), async () => null)] })).toThrow(
      expect.objectContaining({ code: 'worker.invalid_options', field: 'db' }),
    );
  });

  it('refuses preparedStatements without a pool, naming the field', () => {
    expect(() => createWorker({ db: db.prisma, preparedStatements: false, handlers: [defineJob('pool.x', z.object({}), async () => null)] })).toThrow(
      expect.objectContaining({ code: 'worker.invalid_options', field: 'preparedStatements' }),
    );
  });

  it('a worker given a connection string runs on its own pool and ends it on stop', async () => {
    const owned = createPoolDb(db.url, { max: 2 });
    expect(isTransactionClient(owned)).toBe(false);
    await owned.$disconnect();
    expect(owned.pool.ending).toBe(true);
  });
});
