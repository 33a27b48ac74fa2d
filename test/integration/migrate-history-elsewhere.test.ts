/**
 * migrate() when runledger's migrations were applied by the Prisma CLI without
 * `?schema=runledger`: the objects exist, the history rows sit in the host's
 * `public._prisma_migrations`. Simulated by running the SQL and writing the rows
 * there as the CLI does.
 */
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { isRunledgerError, migrate, type RunledgerError } from '../../src/index.js';
import { readMigrationFiles, type MigrationFile } from '../../src/migrate/migration-files.js';
import { runCli } from '../harness/cli.js';
import { queryOnce, useEmptyDatabases } from '../harness/empty-database.js';
import { PACKAGED_MIGRATIONS_DIR } from '../../src/migrate/migration-files.js';

const databases = useEmptyDatabases();
const tempDirs: string[] = [];
afterAll(async () => {
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
});

/** What `prisma migrate deploy` does with DATABASE_URL lacking ?schema=: the SQL, and the history in public. */
async function applyLikePrismaCliWithoutSchema(url: string, files: readonly MigrationFile[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS public._prisma_migrations (
      id VARCHAR(36) PRIMARY KEY NOT NULL, checksum VARCHAR(64) NOT NULL, finished_at TIMESTAMPTZ,
      migration_name VARCHAR(255) NOT NULL, logs TEXT, rolled_back_at TIMESTAMPTZ,
      started_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_steps_count INTEGER NOT NULL DEFAULT 0)`);
    for (const file of files) {
      await client.query(file.sql);
      await client.query(
        'INSERT INTO public._prisma_migrations (id, checksum, migration_name, finished_at, applied_steps_count) VALUES ($1, $2, $3, now(), 1)',
        [randomUUID(), file.checksum, file.name],
      );
    }
  } finally {
    await client.end();
  }
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as RunledgerError,
  );
const historyIn = (url: string, schema: 'public' | 'runledger') =>
  queryOnce<{ migration_name: string }>(url, `SELECT migration_name FROM ${schema}._prisma_migrations ORDER BY migration_name`).then((rows) =>
    rows.map((r) => r.migration_name),
  );

describe('migrate() with the history in another schema', () => {
  it('says where the history is and how to fix it, applies nothing, and migrates once the rows are moved', async () => {
    const url = await databases.create();
    const files = await readMigrationFiles();
    // The host's own migration shares public._prisma_migrations and must survive the fix.
    await queryOnce(url, 'CREATE TABLE public.host_orders (id int)');
    await applyLikePrismaCliWithoutSchema(url, files);
    await queryOnce(
      url,
      `INSERT INTO public._prisma_migrations (id, checksum, migration_name, finished_at) VALUES ($1, $2, '20250101000000_host_init', now())`,
      [randomUUID(), 'a'.repeat(64)],
    );

    const error = await failure(migrate({ connectionString: url }));
    expect(isRunledgerError(error, 'migrate.history_in_other_schema')).toBe(true);
    expect(error!.category).toBe('conflict');
    expect(error!.message).toContain('"public" schema');
    expect(error!.message).toContain('?schema=runledger');
    expect(error!.message).toContain('prisma migrate resolve --applied');
    for (const file of files) expect(error!.message).toContain(file.name);
    expect(error!.details).toMatchObject({ historySchema: 'public', migrations: files.map((f) => f.name) });
    expect(await historyIn(url, 'runledger')).toEqual([]);

    // The fix the error gives, as given.
    for (const statement of error!.details.fixSql as string[]) await queryOnce(url, statement);
    const result = await migrate({ connectionString: url });
    expect(result).toEqual({ applied: [], alreadyApplied: files.map((f) => f.name) });
    expect(await historyIn(url, 'runledger')).toEqual(files.map((f) => f.name));
    expect(await historyIn(url, 'public')).toEqual(['20250101000000_host_init']);
  });

  it('prints the repair statements from `runledger migrate` and exits with the conflict code', async () => {
    const url = await databases.create();
    await applyLikePrismaCliWithoutSchema(url, await readMigrationFiles());
    const result = await runCli(url, 'migrate');
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('migrate.history_in_other_schema');
    expect(result.stderr).toMatch(/To move the history rows, run:\n {2}INSERT INTO "runledger"\._prisma_migrations .* FROM "public"\._prisma_migrations/);
    const json = await runCli(url, '--json', 'migrate');
    expect(json.code).toBe(4);
    expect(JSON.parse(json.stderr).details.fixSql).toHaveLength(2);
  });

  it('names only the later migration when the first was recorded in runledger and the next one elsewhere', async () => {
    const url = await databases.create();
    await migrate({ connectionString: url });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'runledger-migrations-'));
    tempDirs.push(dir);
    await cp(PACKAGED_MIGRATIONS_DIR, dir, { recursive: true });
    await mkdir(path.join(dir, '29990101000000_add_note'));
    await writeFile(path.join(dir, '29990101000000_add_note', 'migration.sql'), 'CREATE TABLE runledger.note (id int);');
    const later = (await readMigrationFiles(dir)).filter((f) => f.name === '29990101000000_add_note');
    await applyLikePrismaCliWithoutSchema(url, later);

    const error = await failure(migrate({ connectionString: url, migrationsDir: dir }));
    expect(isRunledgerError(error, 'migrate.history_in_other_schema')).toBe(true);
    expect(error!.details).toMatchObject({ historySchema: 'public', migrations: ['29990101000000_add_note'] });
  });

  it('says so when the schema has objects but no history anywhere', async () => {
    const url = await databases.create();
    for (const file of await readMigrationFiles()) await queryOnce(url, file.sql);
    const error = await failure(migrate({ connectionString: url }));
    expect(isRunledgerError(error, 'migrate.untracked_schema_objects')).toBe(true);
    expect(error!.message).toContain('prisma migrate resolve --applied');
  });

  it('applies normally when only a stray history row is elsewhere and the schema is empty', async () => {
    const url = await databases.create();
    const files = await readMigrationFiles();
    await applyLikePrismaCliWithoutSchema(url, files);
    await queryOnce(url, 'DROP SCHEMA runledger CASCADE');
    const result = await migrate({ connectionString: url });
    expect(result.applied).toEqual(files.map((f) => f.name));
  });
});
