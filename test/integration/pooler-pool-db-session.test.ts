/**
 * poolDb's session pin (DateStyle ISO, TimeZone UTC: src/client/pool-db.ts)
 * holds behind a transaction-mode PgBouncer, where a session SET of most
 * settings would stay on whichever backend ran it: these two are parameters
 * PgBouncer keeps per client and sets on every backend it links to that
 * client. A pooler with ONE server connection makes poolDb and a stranger
 * share a backend, whose database defaults are hostile (DateStyle SQL, DMY;
 * TimeZone America/New_York): poolDb reads Dates, and the stranger keeps its
 * own settings.
 */
import pg from 'pg';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { enqueueJob, getJob, noOrganizationScope, poolDb, type PrismaClientLike } from '../../src/index.js';
import { startPgBouncer, type PgBouncer } from '../../src/testing/pgbouncer.js';
import { databaseUrl } from '../../src/testing/test-database.js';
import { createWorker, defineJob, silentLogger } from '../../src/worker/index.js';
import { useTestDatabase } from '../harness/database.js';
import { firstJobOutcome } from '../harness/first-job-outcome.js';
import { poolerAvailable } from '../harness/pooler.js';

const db = useTestDatabase();
const available = poolerAvailable('pooler poolDb session tests');

describe.skipIf(!available)('poolDb behind a transaction-mode PgBouncer with hostile database defaults', () => {
  let single: PgBouncer;
  let pool: pg.Pool;
  let client: PrismaClientLike;

  beforeAll(async () => {
    // Through a direct connection: the harness's Prisma client keeps the sessions it has (opened before this).
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query(`ALTER DATABASE "${db.name}" SET DateStyle = 'SQL, DMY'`);
    await admin.query(`ALTER DATABASE "${db.name}" SET TimeZone = 'America/New_York'`);
    await admin.end();
    single = await startPgBouncer({ serverUrl: inject('runledgerServerUrl'), poolSize: 1 });
    pool = new pg.Pool({ connectionString: databaseUrl(single.url, db.name), max: 2 });
    client = poolDb(pool, { preparedStatements: false });
  });

  afterAll(async () => {
    await (client as unknown as { $disconnect(): Promise<void> } | undefined)?.$disconnect();
    await pool?.end();
    await single?.stop();
  });

  /** What the server holds, read without any parser: milliseconds since the epoch. */
  const createdAtMs = async (jobId: string): Promise<number> => {
    const [row] = await db.prisma.$queryRaw<{ ms: number }[]>`
      SELECT (extract(epoch FROM created_at) * 1000)::float8 AS ms FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    return Math.trunc(row!.ms);
  };

  it('reads Dates on the shared backend, and leaves a stranger on it its own settings', async () => {
    const stranger = new pg.Client({ connectionString: databaseUrl(single.url, db.name) });
    await stranger.connect();
    try {
      const { jobId } = await enqueueJob(client, { jobType: 'pooler.pin', payload: {} });
      const ref = { scope: noOrganizationScope(), jobId };
      expect((await getJob(client, ref)).createdAt.getTime()).toBe(await createdAtMs(jobId));
      // The stranger's transaction runs on the same backend in between: its session defaults are the database's.
      const seen = await stranger.query("SELECT current_setting('DateStyle') AS style, current_setting('TimeZone') AS zone, now()::text AS now");
      expect(seen.rows[0]).toMatchObject({ style: 'SQL, DMY', zone: 'America/New_York', now: expect.stringMatching(/^\d\d\/\d\d\/\d{4} /) });
      // And poolDb's next statement, on that backend again, still reads ISO: PgBouncer set its values back.
      expect((await getJob(client, ref)).createdAt.getTime()).toBe(await createdAtMs(jobId));
      expect((await client.$transaction(async (tx) => getJob(tx, ref))).createdAt.getTime()).toBe(await createdAtMs(jobId));
    } finally {
      await stranger.end();
    }
  });

  it('runs a worker that completes its job instead of reporting the lease lost', async () => {
    const worker = createWorker({
      db: pool,
      preparedStatements: false,
      handlers: [defineJob('pooler.pin_work', z.object({}), async () => ({ ok: true }))],
      logger: silentLogger,
      reaper: false,
      listen: false,
      pollIntervalMs: 20,
    });
    const { done, errors } = firstJobOutcome(worker);
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'pooler.pin_work', payload: {} });
    await worker.start();
    await done;
    await worker.stop({ drainMs: 0 });
    expect(errors).toEqual([]);
    expect(worker.stats()).toMatchObject({ succeeded: 1, leaseLost: 0 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED' });
  });
});
