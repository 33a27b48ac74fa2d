/**
 * The shared part of global-setup.ts and global-setup-pooler.ts. One
 * PostgreSQL server per test run (URL, else container, else embedded) and
 * one migrated template database; each test file clones its own database from
 * the template (see database.ts). In front of the server, a PgBouncer in
 * transaction mode when the machine has one (src/testing/pgbouncer.ts; CI
 * must have one, see required-tools.ts): the pooler's own tests use it, and
 * the pooler project (vitest.pooler.config.ts, global-setup-pooler.ts) sends
 * every test file's Prisma clients through it.
 */
import type { TestProject } from 'vitest/node';
import { findPgBouncer, PGBOUNCER_MISSING, startPgBouncer, type PgBouncer } from '../../src/testing/pgbouncer.js';
import { startPostgresServer } from '../../src/testing/postgres-server.js';
import { createMigratedTemplate, dropDatabase } from '../../src/testing/test-database.js';
import { toolRequired } from './required-tools.js';

declare module 'vitest' {
  export interface ProvidedContext {
    runledgerServerUrl: string;
    runledgerTemplate: string;
    /** The server through the harness's PgBouncer; '' when there is none (runledgerPoolerMissing says why). */
    runledgerPoolerUrl: string;
    runledgerPoolerAdminUrl: string;
    runledgerPoolerMissing: string;
    /** The pooler project: every file's Prisma clients go through the pooler. */
    runledgerViaPooler: boolean;
  }
}

export async function setupHarness(project: TestProject, options: { viaPooler: boolean }): Promise<() => Promise<void>> {
  const log = (line: string) => console.log(`[runledger test harness] ${line}`);
  const server = await startPostgresServer({
    // Durability is not under test; these make the throwaway server faster.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
    log,
  });
  let pooler: PgBouncer | undefined;
  let template: string | undefined;
  try {
    const version = await serverVersion(server.url);
    log(`PostgreSQL server: ${server.kind}, ${version}`);
    template = await createMigratedTemplate(server.url);
    let missing = '';
    if (findPgBouncer()) {
      try {
        pooler = await startPgBouncer({ serverUrl: server.url, log });
      } catch (error) {
        missing = (error as Error).message;
      }
    } else {
      missing = PGBOUNCER_MISSING;
    }
    if (missing) {
      if (options.viaPooler) throw new Error(`the pooler project needs PgBouncer: ${missing}`);
      if (toolRequired('RUNLEDGER_REQUIRE_PGBOUNCER')) throw new Error(`the pooler tests cannot run in CI: ${missing}`);
      log(`no PgBouncer: the pooler tests skip (${missing.split('\n')[0]})`);
    }
    project.provide('runledgerServerUrl', server.url);
    project.provide('runledgerTemplate', template);
    project.provide('runledgerPoolerUrl', pooler?.url ?? '');
    project.provide('runledgerPoolerAdminUrl', pooler?.adminUrl ?? '');
    project.provide('runledgerPoolerMissing', missing);
    project.provide('runledgerViaPooler', options.viaPooler);
  } catch (error) {
    await pooler?.stop().catch(() => undefined);
    await server.stop().catch(() => undefined);
    throw error;
  }
  return async () => {
    await pooler?.stop();
    await dropDatabase(server.url, template!);
    await server.stop();
  };
}

async function serverVersion(url: string): Promise<string> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    return `PostgreSQL ${rows[0]?.v}`;
  } finally {
    await client.end();
  }
}
