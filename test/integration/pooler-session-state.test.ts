/**
 * Session state does not leak across pooled transactions. Behind a
 * transaction-mode PgBouncer a backend serves one client's transaction, then
 * the next client's: whatever a transaction leaves on the session (a SET, a
 * session advisory lock, a prepared statement, a LISTEN, a temp table) is
 * met by a stranger, and a statement prepared in one transaction is missing
 * (or already there) in the next. A pooler with ONE server connection makes every client
 * share one backend, so the probe after runledger's operations reads exactly
 * the session they ran on.
 */
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPrismaClient } from '../../src/client/connect.js';
import { PRISMA_MIGRATE_ADVISORY_LOCK_KEY } from '../../src/migrate/migrate.js';
import { PACKAGED_MIGRATIONS_DIR } from '../../src/migrate/migration-files.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import {
  adminScope,
  cancelWorkflowRun,
  compareAndReplaySucceededJob,
  completeExternalWorkflowStep,
  declareSchedules,
  defineJob,
  enqueueJob,
  enqueueOrGetActiveWorkflowRun,
  enqueueWorkflowRun,
  getQueueMetrics,
  listJobs,
  listWorkflowRuns,
  migrate,
  noOrganizationScope,
  promoteEnqueueIntents,
  purgeFinished,
  reapExpiredLeases,
  recordJobEnqueueIntent,
  recoverWorkflowRun,
  runDueSchedules,
  syncJobDefinitions,
  verifyIntegrity,
  workflow,
} from '../../src/index.js';
import { startPgBouncer, type PgBouncer } from '../../src/testing/pgbouncer.js';
import { databaseUrl } from '../../src/testing/test-database.js';
import { useTestDatabase } from '../harness/database.js';
import { poolerAvailable } from '../harness/pooler.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const available = poolerAvailable('pooler session-state tests');

/**
 * What a session carries beyond its transaction. Not counted: the parameters PgBouncer itself keeps in step
 * per client, and transaction_isolation/read_only/deferrable, which every transaction starts from the
 * default_transaction_* settings (those are counted) but which pg_settings lists with source 'session' once
 * any transaction ran `SET TRANSACTION` on the backend.
 */
interface SessionState {
  pid: number;
  settings: string[];
  advisoryLocks: number;
  preparedStatements: number;
  listening: number;
  tempSchema: number;
  cursors: number;
}

async function probe(url: string): Promise<SessionState> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<SessionState>(`
      SELECT pg_backend_pid() AS pid,
             ARRAY(SELECT name || '=' || setting FROM pg_settings
                    WHERE source = 'session'
                      AND name <> ALL (ARRAY['application_name', 'client_encoding', 'DateStyle', 'TimeZone', 'standard_conforming_strings',
                                             'transaction_isolation', 'transaction_read_only', 'transaction_deferrable'])
                    ORDER BY name) AS settings,
             (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())::int AS "advisoryLocks",
             (SELECT count(*) FROM pg_prepared_statements)::int AS "preparedStatements",
             (SELECT count(*) FROM pg_listening_channels())::int AS listening,
             pg_my_temp_schema()::int AS "tempSchema",
             (SELECT count(*) FROM pg_cursors)::int AS cursors`);
    return rows[0]!;
  } finally {
    await client.end();
  }
}

const CLEAN = { settings: [], advisoryLocks: 0, preparedStatements: 0, listening: 0, tempSchema: 0, cursors: 0 };

describe.skipIf(!available)('session state behind a transaction-mode PgBouncer', () => {
  let single: PgBouncer;
  let url = '';
  const clients: PrismaClient[] = [];
  const client = (connectionString: string, options: { preparedStatements?: boolean } = {}) => {
    const made = createPrismaClient(connectionString, { max: 4, ...options });
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    single = await startPgBouncer({ serverUrl: inject('runledgerServerUrl'), poolSize: 1 });
    url = databaseUrl(single.url, db.name);
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.$disconnect()));
    await single?.stop();
  });

  it('shares one backend between clients, so a session SET by one is seen by the next (what the probe below would catch)', async () => {
    const a = new pg.Client({ connectionString: url });
    const b = new pg.Client({ connectionString: url });
    await a.connect();
    await b.connect();
    try {
      await a.query("SET statement_timeout = '4321ms'");
      const seen = await b.query<{ pid: number; timeout: string }>("SELECT pg_backend_pid() AS pid, current_setting('statement_timeout') AS timeout");
      expect(seen.rows[0]!.timeout).toBe('4321ms');
      expect((await probe(url)).settings).toEqual(['statement_timeout=4321']);
      await a.query('RESET statement_timeout');
    } finally {
      await a.end();
      await b.end();
    }
    expect(await probe(url)).toMatchObject(CLEAN);
  });

  it('named prepared statements collide on the shared backend; unnamed ones (pgbouncer=true) do not', async () => {
    // Two of runledger's own clients, named statements (the default): the second prepares a name the first left on the backend.
    const first = client(url);
    const second = client(url);
    await enqueueJob(first, { jobType: 'pool.named', payload: {} });
    await expect(enqueueJob(second, { jobType: 'pool.named', payload: {} })).rejects.toThrow();
    await first.$disconnect();
    await second.$disconnect();
    await resetBackend(url);

    const a = client(databaseUrl(single.url, db.name, { pgbouncer: 'true' }));
    const b = client(url, { preparedStatements: false });
    await enqueueJob(a, { jobType: 'pool.unnamed', payload: {} });
    await enqueueJob(b, { jobType: 'pool.unnamed', payload: {} });
    await enqueueJob(a, { jobType: 'pool.unnamed', payload: {} });
    const { items } = await listJobs(b, { scope: adminScope(), jobType: 'pool.unnamed', limit: 10 });
    expect(items).toHaveLength(3);
    expect(await probe(url)).toMatchObject(CLEAN);
  });

  it("leaves no setting, lock, prepared statement, LISTEN, cursor or temp object on the backend after runledger's operations", async () => {
    const prisma = client(databaseUrl(single.url, db.name, { pgbouncer: 'true' }));
    const scope = noOrganizationScope();
    const before = await probe(url);
    expect(before).toMatchObject(CLEAN);

    // Enqueue inside a host transaction, a fan-in workflow run to completion (release: shared advisory locks under a local lock_timeout).
    await prisma.$transaction(async (tx) => void (await enqueueJob(tx, { jobType: 'pool.direct', payload: { n: 1 } })));
    const fanIn = await enqueueWorkflowRun(
      prisma,
      workflow('pool.fan-in')
        .job('a', 'pool.step', {})
        .job('b', 'pool.step', {})
        .job('c', 'pool.step', {})
        .afterSuccess('c', ['a', 'b'])
        .resultStep('c')
        .build(),
    );
    // An external step (try-lock), a canceled run (exclusive lock), an active key (its advisory lock), a failure to recover.
    const gated = await enqueueWorkflowRun(
      prisma,
      workflow('pool.gated').external('gate').job('after', 'pool.step', {}).afterSuccess('after', ['gate']).build(),
    );
    await completeExternalWorkflowStep(prisma, {
      workflowRunId: gated.workflowRunId,
      stepKey: 'gate',
      scope,
      outcome: { status: 'succeeded', output: { ok: true } },
    });
    const doomed = await enqueueWorkflowRun(prisma, workflow('pool.doomed').external('wait').build());
    await cancelWorkflowRun(prisma, { workflowRunId: doomed.workflowRunId, scope, reason: 'pooled cancel' });
    await enqueueOrGetActiveWorkflowRun(prisma, { ...workflow('pool.keyed').job('k', 'pool.step', {}).build(), activeKey: 'pool:key' });
    const failing = await enqueueWorkflowRun(prisma, workflow('pool.failing').job('x', 'pool.fails', {}).build());
    await runRunnableJobs(prisma, (job) => (job.jobType === 'pool.fails' ? { ok: false } : { ok: true, output: { from: job.jobType } }));
    expect((await listWorkflowRuns(prisma, { scope: adminScope(), limit: 10 })).items.find((r) => r.id === fanIn.workflowRunId)?.status).toBe('SUCCEEDED');
    await recoverWorkflowRun(prisma, { sourceRunId: failing.workflowRunId, scope, requestKey: 'pool-recover', reason: 'pooled recovery' });

    // Replay, intents, schedules (declare takes an advisory lock), reaper, metrics, integrity (READ ONLY), purge.
    const [succeeded] = (await listJobs(prisma, { scope: adminScope(), jobType: 'pool.direct', limit: 1 })).items;
    expect(succeeded?.status).toBe('SUCCEEDED');
    await compareAndReplaySucceededJob(prisma, {
      scope,
      sourceJobId: succeeded!.id,
      expectedRunNumber: 1,
      replayRequestKey: 'pool-replay',
      reason: 'pooled replay',
    });
    await syncJobDefinitions(prisma, [defineJob('pool.intent', z.object({}), async () => undefined)]);
    await prisma.$transaction(async (tx) => void (await recordJobEnqueueIntent(tx, { jobType: 'pool.intent', payload: {}, idempotencyKey: 'pool-intent' })));
    expect((await promoteEnqueueIntents(prisma, { jobTypes: ['pool.intent'], limit: 10 })).intents).toHaveLength(1);
    await declareSchedules(prisma, {
      owner: 'pool',
      schedules: [{ key: 'pool.hourly', cron: '0 * * * *', jobType: 'pool.scheduled', payload: {}, enabled: true, now: new Date('2027-01-01T00:30:00Z') }],
    });
    expect((await runDueSchedules(prisma, { now: new Date('2027-01-01T01:00:00Z'), limit: 10 })).jobs).toHaveLength(1);
    await reapExpiredLeases(prisma, { limit: 10 });
    await getQueueMetrics(prisma, { scope: adminScope() });
    expect((await verifyIntegrity(prisma, { pageSize: 100 })).clean).toBe(true);
    await purgeFinished(prisma, { olderThan: new Date(Date.now() + 60_000), batchSize: 100 });

    const after = await probe(url);
    expect(after.pid).toBe(before.pid); // the same backend served every operation above
    expect(after).toMatchObject(CLEAN);
  });

  it("migrates through the pooler: two migrators wait for Prisma's session lock, apply each migration once, and leave no lock behind", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'runledger-pool-migrations-'));
    try {
      await cp(PACKAGED_MIGRATIONS_DIR, dir, { recursive: true });
      await mkdir(path.join(dir, '29990101000000_pool_probe'));
      await writeFile(path.join(dir, '29990101000000_pool_probe', 'migration.sql'), 'CREATE TABLE runledger.pool_probe (id int);\n');
      // `prisma migrate deploy` holds this key as a session lock for its whole run, on a direct connection.
      const holder = new pg.Client({ connectionString: db.url });
      await holder.connect();
      try {
        await holder.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_ADVISORY_LOCK_KEY]);
        // Two migrators share the pooler's one backend: a session lock taken by one would be the other's too.
        const running = [migrate({ connectionString: url, migrationsDir: dir }), migrate({ connectionString: url, migrationsDir: dir })];
        await waitForAdvisoryLockWaiter(holder, db.name);
        const { rows } = await holder.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_class WHERE relname = 'pool_probe'");
        expect(rows[0]!.n).toBe(0);
        await holder.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_ADVISORY_LOCK_KEY]);
        const results = await Promise.all(running);
        expect(results.flatMap((r) => r.applied)).toEqual(['29990101000000_pool_probe']);
        expect(results.every((r) => r.alreadyApplied.length + r.applied.length === results[0]!.alreadyApplied.length + results[0]!.applied.length)).toBe(true);
      } finally {
        await holder.end();
      }
      expect(await migrate({ connectionString: url, migrationsDir: dir })).toMatchObject({ applied: [] });
      expect(await probe(url)).toMatchObject(CLEAN);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** Resolves once a backend on `database` waits for an advisory lock (the migrator queued behind the holder). */
async function waitForAdvisoryLockWaiter(observer: pg.Client, database: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await observer.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = $1`,
      [database],
    );
    if (rows[0]!.n > 0) return;
    if (Date.now() > deadline) throw new Error('the migrator never waited for the lock');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Drops every prepared statement of the pooler's one backend, so the next test starts from a clean session. */
async function resetBackend(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('DEALLOCATE ALL');
  } finally {
    await client.end();
  }
}
