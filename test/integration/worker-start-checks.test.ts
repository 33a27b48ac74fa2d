/**
 * `start()` refuses, with the reason, a database the worker could never work
 * on (an ended pool, a never-migrated or outdated schema, read-only sessions)
 * and a transactional job type whose client is on another database; it
 * opens nothing first and the worker is stopped after. A transactional
 * client on the same database by another path (a proxy: another address and
 * port) is accepted.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createPrismaClient } from '../../src/client/connect.js';
import { REQUIRED_MIGRATION } from '../../src/migrate/schema-version.js';
import { createWorker, defineJob, silentLogger, type Worker, type WorkerOptions } from '../../src/worker/index.js';
import { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';
import { useTestDatabase } from '../harness/database.js';
import { useEmptyDatabases } from '../harness/empty-database.js';
import { startFaultProxy } from '../harness/fault-proxy.js';

const db = useTestDatabase();
const other = useTestDatabase();
const empty = useEmptyDatabases();
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

const noop = defineJob('start.noop', z.object({}), async () => undefined);

function worker(options: Partial<WorkerOptions>): Worker {
  return createWorker({ db: db.prisma, handlers: [noop], logger: silentLogger, reaper: false, listen: false, ...options });
}

/** start() rejects with `code`, and the worker ends stopped; stop() after it resolves. */
async function refusesToStart(subject: Worker, code: string): Promise<Record<string, unknown>> {
  const error = await subject.start().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toMatchObject({ code });
  expect(subject.state).toBe('stopped');
  await subject.stop();
  return (error as { details: Record<string, unknown> }).details;
}

function hostClient(url: string): HostPrismaClient {
  const client = new HostPrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 2 }) });
  closers.push(() => client.$disconnect());
  return client;
}

function transactional(client: HostPrismaClient) {
  return defineJob('start.tx', z.object({}), async () => undefined, { transaction: client });
}

describe("the worker's start()", () => {
  it('refuses an ended pool as client.pool_ended', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    await pool.end();
    await refusesToStart(worker({ db: pool }), 'client.pool_ended');
  });

  it('refuses a database it cannot reach as database.unavailable, and starts on a later call once it answers', async () => {
    const proxy = await startFaultProxy(db.url);
    closers.push(() => proxy.close());
    await proxy.cut();
    const subject = createWorker({ connectionString: proxy.url, handlers: [noop], logger: silentLogger, reaper: false, listen: false });
    await expect(subject.start()).rejects.toMatchObject({ code: 'database.unavailable' });
    // A transient refusal leaves the worker startable (an outage at deploy time must not need a new worker).
    expect(subject.state).toBe('created');
    await proxy.restore();
    await subject.start();
    expect(subject.state).toBe('running');
    await subject.stop();
    expect(subject.state).toBe('stopped');
  });

  it('refuses a database never migrated as migrate.required', async () => {
    const url = await empty.create();
    const client = createPrismaClient(url, { max: 1 });
    closers.push(() => client.$disconnect());
    const details = await refusesToStart(worker({ db: client }), 'migrate.required');
    expect(details).toEqual({ requiredMigration: REQUIRED_MIGRATION });
  });

  it('refuses a database not migrated to the schema this version needs as migrate.required, naming the migration', async () => {
    const admin = other.newPool({ max: 1 });
    await admin.query(`UPDATE runledger._prisma_migrations SET rolled_back_at = now() WHERE migration_name = $1`, [REQUIRED_MIGRATION]);
    try {
      const details = await refusesToStart(worker({ db: other.newClient({ max: 1 }) }), 'migrate.required');
      expect(details).toEqual({ requiredMigration: REQUIRED_MIGRATION });
    } finally {
      await admin.query(`UPDATE runledger._prisma_migrations SET rolled_back_at = NULL WHERE migration_name = $1`, [REQUIRED_MIGRATION]);
    }
  });

  it('refuses read-only sessions as database.read_only, for its own db and for a transactional client', async () => {
    const readOnlyUrl = `${db.url}${db.url.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c default_transaction_read_only=on')}`;
    const readOnly = createPrismaClient(readOnlyUrl, { max: 1 });
    closers.push(() => readOnly.$disconnect());
    expect(await refusesToStart(worker({ db: readOnly }), 'database.read_only')).toEqual({ field: 'db' });
    const onReplica = transactional(hostClient(readOnlyUrl));
    expect(await refusesToStart(worker({ handlers: [onReplica] }), 'database.read_only')).toEqual({ field: 'transaction', jobType: 'start.tx' });
  });

  it('refuses a transactional client on another database as worker.transaction_database_mismatch', async () => {
    const elsewhere = transactional(hostClient(other.url));
    const details = await refusesToStart(worker({ handlers: [noop, elsewhere] }), 'worker.transaction_database_mismatch');
    expect(details).toEqual({ field: 'transaction', jobType: 'start.tx' });
  });

  it('starts with a transactional client on its database through another address and port', async () => {
    const proxy = await startFaultProxy(db.url);
    closers.push(() => proxy.close());
    const subject = worker({ handlers: [transactional(hostClient(proxy.url))] });
    await subject.start();
    expect(subject.state).toBe('running');
    await subject.stop();
  });
});
