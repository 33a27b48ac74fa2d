/**
 * One PostgreSQL server per test run (URL, else container, else embedded) and
 * one migrated template database; each test file clones its own database from
 * the template (see database.ts).
 */
import type { TestProject } from 'vitest/node';
import { startPostgresServer } from '../../src/testing/postgres-server.js';
import { createMigratedTemplate, dropDatabase } from '../../src/testing/test-database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    runledgerServerUrl: string;
    runledgerTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgresServer({
    // Durability is not under test; these make the throwaway server faster.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
    log: (line) => console.log(`[runledger test harness] ${line}`),
  });
  const version = await serverVersion(server.url);
  console.log(`[runledger test harness] PostgreSQL server: ${server.kind}, ${version}`);
  const template = await createMigratedTemplate(server.url);
  project.provide('runledgerServerUrl', server.url);
  project.provide('runledgerTemplate', template);
  return async () => {
    await dropDatabase(server.url, template);
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
