/** Fresh, unmigrated databases for migrator tests (dropped after the file). */
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { migrate } from '../../src/migrate/migrate.js';
import { PACKAGED_MIGRATIONS_DIR } from '../../src/migrate/migration-files.js';
import { databaseUrl, dropDatabase, uniqueDatabaseName } from '../../src/testing/test-database.js';

export function useEmptyDatabases(): { create(): Promise<string> } {
  const serverUrl = inject('runledgerServerUrl');
  const created: string[] = [];
  afterAll(async () => {
    for (const name of created) await dropDatabase(serverUrl, name);
  });
  return {
    async create() {
      const name = uniqueDatabaseName('runledger_empty');
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE "${name}"`);
      } finally {
        await admin.end();
      }
      created.push(name);
      return databaseUrl(serverUrl, name);
    },
  };
}

export async function queryOnce<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Migrates `url` to the schema just before `migration` (every packaged migration older than it, none newer:
 * the state a database written by the code before it is in), and returns the packaged migrations a plain
 * `migrate()` applies next, `migration` first.
 */
export async function migrateUpTo(url: string, migration: string): Promise<string[]> {
  const names = (await readdir(PACKAGED_MIGRATIONS_DIR, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  if (!names.includes(migration)) throw new Error(`no packaged migration ${migration}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runledger-migrations-before-'));
  try {
    await cp(path.join(PACKAGED_MIGRATIONS_DIR, 'migration_lock.toml'), path.join(dir, 'migration_lock.toml')).catch(() => undefined);
    for (const name of names.filter((n) => n < migration)) await cp(path.join(PACKAGED_MIGRATIONS_DIR, name), path.join(dir, name), { recursive: true });
    await migrate({ connectionString: url, migrationsDir: dir });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return names.filter((n) => n >= migration);
}
