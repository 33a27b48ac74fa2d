import { cp, mkdtemp, readFile, writeFile, mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, isRunledgerError } from '../../src/index.js';
import { readMigrationFiles, sha256Hex } from '../../src/migrate/migration-files.js';
import { queryOnce, useEmptyDatabases } from '../harness/empty-database.js';
import { PACKAGED_MIGRATIONS_DIR } from '../../src/migrate/migration-files.js';

const databases = useEmptyDatabases();
const tempDirs: string[] = [];
afterAll(async () => {
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
});

async function copyOfMigrations(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runledger-migrations-'));
  tempDirs.push(dir);
  await cp(PACKAGED_MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

interface HistoryRow {
  id: string;
  checksum: string;
  migration_name: string;
  finished_at: Date | null;
  applied_steps_count: number;
  rolled_back_at: Date | null;
}

const history = (url: string) => queryOnce<HistoryRow>(url, 'SELECT * FROM runledger._prisma_migrations ORDER BY migration_name');

describe('migrate()', () => {
  it('records every applied migration exactly as prisma migrate deploy does', async () => {
    const url = await databases.create();
    const files = await readMigrationFiles();
    const result = await migrate({ connectionString: url });
    expect(result.applied).toEqual(files.map((f) => f.name));
    const rows = await history(url);
    expect(rows.map((r) => r.migration_name)).toEqual(files.map((f) => f.name));
    for (const row of rows) {
      const bytes = await readFile(path.join(PACKAGED_MIGRATIONS_DIR, row.migration_name, 'migration.sql'));
      expect(row.checksum).toBe(sha256Hex(bytes));
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.applied_steps_count).toBe(1);
      expect(row.rolled_back_at).toBeNull();
    }
    const columns = await queryOnce<{ column_name: string; data_type: string; is_nullable: string; character_maximum_length: number | null }>(
      url,
      `SELECT column_name, data_type, is_nullable, character_maximum_length FROM information_schema.columns
        WHERE table_schema = 'runledger' AND table_name = '_prisma_migrations' ORDER BY ordinal_position`,
    );
    expect(columns.map((c) => [c.column_name, c.data_type, c.is_nullable, c.character_maximum_length])).toEqual([
      ['id', 'character varying', 'NO', 36],
      ['checksum', 'character varying', 'NO', 64],
      ['finished_at', 'timestamp with time zone', 'YES', null],
      ['migration_name', 'character varying', 'NO', 255],
      ['logs', 'text', 'YES', null],
      ['rolled_back_at', 'timestamp with time zone', 'YES', null],
      ['started_at', 'timestamp with time zone', 'NO', null],
      ['applied_steps_count', 'integer', 'NO', null],
    ]);
  });

  it('is a no-op the second time', async () => {
    const url = await databases.create();
    await migrate({ connectionString: url });
    const before = await history(url);
    const again = await migrate({ connectionString: url });
    expect(again.applied).toEqual([]);
    expect(again.alreadyApplied).toEqual(before.map((r) => r.migration_name));
    expect(await history(url)).toEqual(before);
  });

  it('applies each migration exactly once under four concurrent starts', async () => {
    const url = await databases.create();
    const results = await Promise.all([1, 2, 3, 4].map(() => migrate({ connectionString: url })));
    const files = await readMigrationFiles();
    const appliedCounts = files.map((f) => results.filter((r) => r.applied.includes(f.name)).length);
    expect(appliedCounts).toEqual(files.map(() => 1));
    const rows = await history(url);
    expect(rows).toHaveLength(files.length);
  });

  it('accepts a pg pool', async () => {
    const url = await databases.create();
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      const result = await migrate({ pool });
      expect(result.applied.length).toBeGreaterThan(0);
      const [{ n }] = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM runledger.job_queue')).rows as [{ n: number }];
      expect(n).toBe(0);
    } finally {
      await pool.end();
    }
  });

  it('refuses an applied migration whose file changed, naming it, and applies nothing', async () => {
    const url = await databases.create();
    await migrate({ connectionString: url });
    const dir = await copyOfMigrations();
    const [first] = await readMigrationFiles(dir);
    const file = path.join(dir, first!.name, 'migration.sql');
    await writeFile(file, `${await readFile(file, 'utf8')}\n-- edited after it was applied\n`);
    await mkdir(path.join(dir, '29990101000000_later'));
    await writeFile(path.join(dir, '29990101000000_later', 'migration.sql'), 'CREATE TABLE runledger.later (id int);');
    const error = await migrate({ connectionString: url, migrationsDir: dir }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'migrate.checksum_mismatch')).toBe(true);
    expect((error as Error).message).toContain(first!.name);
    expect((await history(url)).map((r) => r.migration_name)).not.toContain('29990101000000_later');
  });

  it('accepts the same script with CRLF line endings, as Prisma does', async () => {
    const url = await databases.create();
    await migrate({ connectionString: url });
    const dir = await copyOfMigrations();
    for (const f of await readMigrationFiles(dir)) {
      const file = path.join(dir, f.name, 'migration.sql');
      await writeFile(file, (await readFile(file, 'utf8')).replace(/\n/g, '\r\n'));
    }
    const result = await migrate({ connectionString: url, migrationsDir: dir });
    expect(result.applied).toEqual([]);
  });

  it('applies new migrations in order and rolls a failing one back whole', async () => {
    const url = await databases.create();
    const dir = await copyOfMigrations();
    await mkdir(path.join(dir, '29990101000000_add_note'));
    await writeFile(path.join(dir, '29990101000000_add_note', 'migration.sql'), 'CREATE TABLE runledger.note (id int);');
    await mkdir(path.join(dir, '29990102000000_broken'));
    await writeFile(
      path.join(dir, '29990102000000_broken', 'migration.sql'),
      'CREATE TABLE runledger.half_done (id int);\nSELECT * FROM runledger.no_such_table;',
    );
    const error = await migrate({ connectionString: url, migrationsDir: dir }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'migrate.migration_failed')).toBe(true);
    expect((error as Error).message).toContain('29990102000000_broken');
    const names = (await history(url)).map((r) => r.migration_name);
    expect(names.at(-1)).toBe('29990101000000_add_note');
    const tables = await queryOnce<{ t: string | null }>(url, "SELECT to_regclass('runledger.half_done')::text AS t");
    expect(tables[0]!.t).toBeNull();
  });

  it('refuses to run past a migration Prisma recorded as failed', async () => {
    const url = await databases.create();
    await migrate({ connectionString: url });
    await queryOnce(url, `INSERT INTO runledger._prisma_migrations (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())`, [
      '00000000-0000-4000-8000-000000000001',
      'f'.repeat(64),
      '29990101000000_failed_by_prisma',
    ]);
    const error = await migrate({ connectionString: url }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'migrate.failed_migration_in_history')).toBe(true);
    expect((error as Error).message).toContain('29990101000000_failed_by_prisma');
  });

  it('reports an unreachable database as unavailable', async () => {
    const error = await migrate({ connectionString: 'postgresql://nobody@127.0.0.1:1/none' }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'migrate.connection_failed')).toBe(true);
    expect((error as { category: string }).category).toBe('unavailable');
  });

  it('refuses bad options with migrate.invalid_options naming the field, connecting nowhere (TypeError, ENOENT, connection_failed, or the PG* database before)', async () => {
    const url = await databases.create();
    const target = new URL(url);
    // What pg falls back to without a connection string: an unset DATABASE_URL used to migrate this database.
    const saved = {
      PGHOST: process.env.PGHOST,
      PGPORT: process.env.PGPORT,
      PGUSER: process.env.PGUSER,
      PGPASSWORD: process.env.PGPASSWORD,
      PGDATABASE: process.env.PGDATABASE,
    };
    Object.assign(process.env, {
      PGHOST: target.hostname,
      PGPORT: target.port || '5432',
      PGUSER: decodeURIComponent(target.username),
      PGPASSWORD: decodeURIComponent(target.password),
      PGDATABASE: target.pathname.slice(1),
    });
    const refusal = async (options: unknown) =>
      migrate(options as never).then(
        () => 'migrated',
        (e: { code?: string; field?: string; category?: string }) => `${e.code} ${e.field} ${e.category}`,
      );
    try {
      expect(await refusal(undefined)).toBe('migrate.invalid_options options validation');
      expect(await refusal({})).toBe('migrate.invalid_options connectionString validation');
      expect(await refusal({ connectionString: undefined })).toBe('migrate.invalid_options connectionString validation');
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
    expect(await queryOnce<{ n: number }>(url, `SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'runledger'`)).toEqual([{ n: 0 }]);
    expect(await refusal({ connectionString: 'not a url' })).toBe('migrate.invalid_options connectionString validation');
    expect(await refusal({ connectionString: 'mysql://u@h/db' })).toBe('migrate.invalid_options connectionString validation');
    expect(await refusal({ connectionString: 'postgresql://u:%zz@127.0.0.1/db' })).toBe('migrate.invalid_options connectionString validation');
    expect(await refusal({ pool: {} })).toBe('migrate.invalid_options pool validation');
    expect(await refusal({ connectionString: url, migrationsDir: path.join(os.tmpdir(), 'runledger-no-such-dir') })).toBe(
      'migrate.invalid_options migrationsDir validation',
    );
    expect(await refusal({ connectionString: url, log: 'loud' })).toBe('migrate.invalid_options log validation');
    expect(await queryOnce<{ n: number }>(url, `SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'runledger'`)).toEqual([{ n: 0 }]);
    // The message never echoes the URL (it may hold a password).
    const error = await migrate({ connectionString: 'postgresql://u:secret@h/db%' }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'migrate.invalid_options' });
    expect((error as Error).message).not.toContain('secret');
  });
});
