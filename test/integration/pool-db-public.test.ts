/**
 * `poolDb(pool)`, the public client over a pg Pool: every operation runs on
 * it as on the Prisma client (the same results, runledger joining its
 * transactions), one client per pool however often it is asked for, and bad
 * input refused with a coded error before anything is written. (The client
 * itself, column types and transaction semantics: worker-pool-db.test.ts.)
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  getJob,
  isRunledgerError,
  listJobEvents,
  noOrganizationScope,
  poolDb,
  type PrismaClientLike,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
let pool: pg.Pool;
let client: PrismaClientLike;

beforeAll(() => {
  pool = db.newPool({ max: 3 });
  client = poolDb(pool, { preparedStatements: !db.viaPooler });
});
afterAll(async () => {
  await (client as unknown as { $disconnect(): Promise<void> }).$disconnect(); // the harness ends the pool
});

const countJobs = async (jobType: string): Promise<number> => {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${jobType}`;
  return row!.n;
};

describe('poolDb', () => {
  it('runs enqueue, claim, completion and the reads, and reads back what the Prisma client reads', async () => {
    const one = await enqueueJob(client, { jobType: 'pooldb.public', payload: { n: 1 }, idempotencyKey: 'k-1' });
    const batch = await enqueueJobs(client, [
      { jobType: 'pooldb.public', payload: { n: 2 }, priority: 5 },
      { jobType: 'pooldb.public', payload: null, runAt: new Date(Date.now() - 1_000) },
    ]);
    // The same key again answers with the existing job, through the client's own transaction.
    const again = await enqueueJob(client, { jobType: 'pooldb.public', payload: { n: 1 }, idempotencyKey: 'k-1' });
    expect(again).toEqual({ ...one, disposition: 'existing' });

    const claimed = await claimJobs(client, { workerId: 'pooldb-worker', jobTypes: ['pooldb.public'], limit: 10, leaseSeconds: 60, markRunning: true });
    expect(claimed.map((job) => job.jobId).sort()).toEqual([one.jobId, ...batch.map((job) => job.jobId)].sort());
    const outcomes = await completeJobs(
      client,
      claimed.map((job) => ({ ...job, output: { done: job.jobId } })),
    );
    expect(outcomes.map((outcome) => outcome.outcome)).toEqual(['succeeded', 'succeeded', 'succeeded']);

    const scope = noOrganizationScope();
    for (const job of [one, ...batch]) {
      const ref = { scope, jobId: job.jobId };
      const viaPool = await getJob(client, ref);
      expect(viaPool).toEqual(await getJob(db.prisma, ref));
      expect(viaPool).toMatchObject({ status: 'SUCCEEDED', output: { done: job.jobId } });
      const trail = await listJobEvents(client, ref);
      expect(trail).toEqual(await listJobEvents(db.prisma, ref));
      expect(trail.items.map((event) => event.eventType)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING', 'SUCCEEDED']);
    }
  });

  it('is joined inside its own transaction: a rolled-back enqueue leaves nothing', async () => {
    const failure = new Error('host rolls back');
    await expect(
      client.$transaction(async (tx) => {
        await enqueueJobs(tx, [{ jobType: 'pooldb.rollback', payload: { n: 1 }, idempotencyKey: 'rb-1' }]);
        await enqueueJob(tx, { jobType: 'pooldb.rollback', payload: { n: 2 } });
        expect(await countJobs('pooldb.rollback')).toBe(0); // not visible outside before commit
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await countJobs('pooldb.rollback')).toBe(0);
  });

  it('gives one client per pool and naming choice, so repeated calls add no listeners to the pool', async () => {
    const own = db.newPool({ max: 1 });
    const before = own.listenerCount('error');
    const first = poolDb(own);
    for (let i = 0; i < 20; i += 1) expect(poolDb(own)).toBe(first);
    expect(own.listenerCount('error')).toBe(before + 1);
    const unnamed = poolDb(own, { preparedStatements: false });
    expect(unnamed).not.toBe(first);
    expect(own.listenerCount('error')).toBe(before + 2);
    // A disconnected client has let go of the pool: asking again makes a working one.
    await (first as unknown as { $disconnect(): Promise<void> }).$disconnect();
    const fresh = poolDb(own);
    expect(fresh).not.toBe(first);
    expect(await fresh.$queryRaw<{ one: number }[]>`SELECT 1::int AS one`).toEqual([{ one: 1 }]);
    await (fresh as unknown as { $disconnect(): Promise<void> }).$disconnect();
    await (unnamed as unknown as { $disconnect(): Promise<void> }).$disconnect();
    expect(own.listenerCount('error')).toBe(before);
  });

  it('refuses what is not a pg Pool or not its options, naming the field', () => {
    const refused = (fn: () => unknown, field: string) => {
      let error: unknown;
      try {
        fn();
      } catch (caught) {
        error = caught;
      }
      expect(isRunledgerError(error, 'client.invalid')).toBe(true);
      expect((error as { field: string }).field).toBe(field);
    };
    refused(() => poolDb(db.prisma as unknown as pg.Pool), 'pool');
    refused(() => poolDb(new pg.Client() as unknown as pg.Pool), 'pool');
    refused(() => poolDb(null as unknown as pg.Pool), 'pool');
    refused(() => poolDb(pool, { preparedStatements: 'yes' as unknown as boolean }), 'options.preparedStatements');
    refused(() => poolDb(pool, { max: 3 } as never), 'options.max');
    refused(() => poolDb(pool, null as never), 'options');
  });

  it('tells a caller who passes the pool itself to wrap it, and writes nothing', async () => {
    const error = await enqueueJob(pool as unknown as PrismaClientLike, { jobType: 'pooldb.bare', payload: {} }).catch((caught: unknown) => caught);
    expect(isRunledgerError(error, 'client.invalid')).toBe(true);
    expect((error as Error).message).toContain('poolDb(pool)');
    expect(await countJobs('pooldb.bare')).toBe(0);
  });
});
