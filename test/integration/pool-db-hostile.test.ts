/**
 * Our values, whatever the host set: `poolDb(pool)` reads what the Prisma
 * client reads while the process has hostile global pg type parsers
 * (`pg.types.setTypeParser`) and its sessions run in `DateStyle = SQL, DMY`
 * and another TimeZone; a worker on such a pool completes its job (it used
 * to report the lease lost), the dashboard's overview answers, and so does
 * runledger's own Prisma client on a connection string (the CLI's).
 *
 * The Prisma reference reads run with pg's parsers as they were and on the
 * harness's ordinary sessions: Prisma's adapter itself reads timestamps as
 * Invalid Date under DateStyle SQL.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  claimJobs,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  getJob,
  listJobEvents,
  listJobs,
  noOrganizationScope,
  poolDb,
  type PrismaClientLike,
} from '../../src/index.js';
import { createPrismaClient } from '../../src/client/connect.js';
import { createWorker, defineJob, silentLogger, type Worker } from '../../src/worker/index.js';
import { callDashboard, serveDashboard } from '../harness/dashboard.js';
import { useTestDatabase } from '../harness/database.js';
import { firstJobOutcome } from '../harness/first-job-outcome.js';

const db = useTestDatabase();
const HOSTILE_SESSION = '-c DateStyle=SQL,DMY -c TimeZone=America/New_York -c IntervalStyle=sql_standard';
let hostilePool: pg.Pool;
let client: PrismaClientLike;
const workers: Worker[] = [];

/** Parsers a host might set process-wide: identity strings for timestamps and int8, wrong shapes for the rest. */
const HOSTILE_PARSERS: Record<number, (text: string) => unknown> = {
  16: (text) => `bool:${text}`,
  20: (text) => Number.parseInt(text, 10),
  23: (text) => `int4:${text}`,
  25: (text) => `text:${text}`,
  114: (text) => text,
  1009: (text) => text,
  1016: (text) => text,
  1082: (text) => text,
  1114: (text) => text,
  1115: (text) => text,
  1184: (text) => text,
  1185: (text) => text,
  1700: (text) => Number(text),
  2950: (text) => `uuid:${text}`,
  3802: (text) => text,
  3807: (text) => text,
};
const saved = new Map(Object.keys(HOSTILE_PARSERS).map((oid) => [Number(oid), pg.types.getTypeParser(Number(oid), 'text')]));

/** Runs `fn` while the process's global parsers are hostile (the Prisma reference reads stay outside). */
async function hostile<T>(fn: () => PromiseLike<T>): Promise<T> {
  for (const [oid, parse] of Object.entries(HOSTILE_PARSERS)) pg.types.setTypeParser(Number(oid), parse);
  try {
    return await fn();
  } finally {
    for (const [oid, parse] of saved) pg.types.setTypeParser(oid, parse as (text: string) => unknown);
  }
}

beforeAll(() => {
  hostilePool = new pg.Pool({ connectionString: db.url, max: 3, options: HOSTILE_SESSION });
  client = poolDb(hostilePool);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
});
afterAll(async () => {
  await (client as unknown as { $disconnect(): Promise<void> }).$disconnect();
  await hostilePool.end();
});

describe('poolDb under hostile global parsers and session settings', () => {
  it('the sessions are hostile and the global parsers are in effect for pg itself', async () => {
    const settings = await hostilePool.query("SELECT current_setting('DateStyle') AS style, current_setting('TimeZone') AS zone");
    expect(settings.rows[0]).toEqual({ style: 'SQL, DMY', zone: 'America/New_York' });
    const raw = await hostile(() => hostilePool.query('SELECT now() AS at, 1::int8 AS big'));
    expect(raw.rows[0]).toMatchObject({ at: expect.stringMatching(/^\d\d\/\d\d\/\d{4} .* E[SD]T$/), big: 1 });
  });

  it('returns the same values as the Prisma client for every column type runledger reads', async () => {
    const at = new Date('2026-03-04T05:06:07.089Z');
    const query = (on: { $queryRaw: PrismaClientLike['$queryRaw'] }) => on.$queryRaw<Record<string, unknown>[]>`
      SELECT 1::int AS int4, 9007199254740993::int8 AS int8, 2.5::float8 AS float8, true AS bool, 'x'::text AS text,
             'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS uuid, ${at}::timestamptz AS timestamptz,
             '2026-03-04 05:06:07.089'::timestamp AS timestamp, '2026-03-04'::date AS date, 12.50::numeric AS numeric,
             '{"a":[1,{"b":null}],"c":"d"}'::jsonb AS jsonb, '{"k":1}'::json AS json, ARRAY['a','b,c', 'd"e', NULL, 'NULL']::text[] AS texts,
             ARRAY[1,9007199254740993]::int8[] AS int8s, ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11']::uuid[] AS uuids,
             ARRAY[${at}::timestamptz, NULL] AS timestamptzs, ARRAY['{"a":1}'::jsonb] AS jsonbs, ARRAY[true, false] AS bools,
             ${at}::timestamptz - interval '400 years' AS old, NULL::timestamptz AS null_timestamptz, count(*) AS count
        FROM (VALUES (1)) v(x)`;
    const [viaPrisma] = await query(db.prisma);
    const [viaPool] = await hostile(() => query(client));
    expect(viaPool).toEqual(viaPrisma);
    expect(viaPool).toMatchObject({ int8: 9007199254740993n, timestamptz: at, timestamp: at, bool: true, jsonb: { c: 'd' } });
  });

  it('runs enqueue, claim and completion and reads back what the Prisma client reads', async () => {
    const jobs = await hostile(async () => {
      const one = await enqueueJob(client, { jobType: 'hostile.job', payload: { n: 1 }, runAt: new Date(Date.now() - 5_000) });
      const batch = await enqueueJobs(client, [{ jobType: 'hostile.job', payload: { n: 2 }, priority: 3 }]);
      const claimed = await claimJobs(client, { workerId: 'hostile', jobTypes: ['hostile.job'], limit: 10, leaseSeconds: 60, markRunning: true });
      expect(claimed).toHaveLength(2);
      for (const job of claimed) expect(job.leaseExpiresAt).toBeInstanceOf(Date);
      const outcomes = await completeJobs(
        client,
        claimed.map((job) => ({ ...job, output: { done: true } })),
      );
      expect(outcomes.map((outcome) => outcome.outcome)).toEqual(['succeeded', 'succeeded']);
      return [one, ...batch];
    });
    const scope = noOrganizationScope();
    for (const { jobId } of jobs) {
      const ref = { scope, jobId };
      const [job, events] = [await getJob(db.prisma, ref), await listJobEvents(db.prisma, ref)];
      expect(await hostile(() => getJob(client, ref))).toEqual(job);
      expect(await hostile(() => listJobEvents(client, ref))).toEqual(events);
      expect(job.createdAt).toBeInstanceOf(Date);
    }
    const list = await listJobs(db.prisma, { scope, jobType: 'hostile.job' });
    expect(await hostile(() => listJobs(client, { scope, jobType: 'hostile.job' }))).toEqual(list);
  });

  it('re-pins a connection whose DateStyle the host changed after runledger pinned it', async () => {
    const single = new pg.Pool({ connectionString: db.url, max: 1, options: HOSTILE_SESSION });
    const one = poolDb(single);
    try {
      const { jobId } = await enqueueJob(one, { jobType: 'hostile.repin', payload: {} });
      const host = await single.connect();
      await host.query("SET DateStyle = 'German, DMY'");
      host.release();
      const ref = { scope: noOrganizationScope(), jobId };
      expect(await getJob(one, ref)).toEqual(await getJob(db.prisma, ref));
      await one.$transaction(async () => undefined); // the connection's state survives a transaction
      const again = await single.connect();
      await again.query('RESET DateStyle'); // back to the session's SQL, DMY
      again.release();
      expect(await one.$transaction(async (tx) => getJob(tx, ref))).toEqual(await getJob(db.prisma, ref));
    } finally {
      await (one as unknown as { $disconnect(): Promise<void> }).$disconnect();
      await single.end();
    }
  });

  it('a worker on the pool completes its job instead of reporting the lease lost', async () => {
    const worker = createWorker({
      db: hostilePool,
      handlers: [defineJob('hostile.work', z.object({}), async () => ({ ok: true }))],
      concurrency: 1,
      logger: silentLogger,
      reaper: false,
      listen: false,
      pollIntervalMs: 20,
    });
    workers.push(worker);
    const { done, errors } = firstJobOutcome(worker);
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'hostile.work', payload: {} });
    await hostile(async () => {
      await worker.start();
      await done;
    });
    expect(errors).toEqual([]);
    expect(worker.stats()).toMatchObject({ succeeded: 1, leaseLost: 0 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', output: { ok: true } });
  });

  it("reads Dates through runledger's own Prisma client (the CLI's) on a connection string with hostile options", async () => {
    const url = new URL(db.url);
    url.searchParams.set('options', HOSTILE_SESSION);
    const own = createPrismaClient(url.toString(), { max: 2 });
    try {
      const { jobId } = await enqueueJob(db.prisma, { jobType: 'hostile.cli', payload: {} });
      const ref = { scope: noOrganizationScope(), jobId };
      expect(await getJob(own, ref)).toEqual(await getJob(db.prisma, ref));
    } finally {
      await own.$disconnect();
    }
  });

  it("answers the dashboard's overview", async () => {
    await hostile(async () => {
      const served = await serveDashboard(client);
      try {
        const overview = await callDashboard(served.url, 'GET', '/api/overview');
        expect(overview.status).toBe(200);
      } finally {
        await served.close();
      }
    });
  });
});
