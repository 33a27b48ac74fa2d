/**
 * A Prisma-compatible migrator. Hand-written because no library applies
 * Prisma's migration folders and writes `_prisma_migrations` the way
 * `prisma migrate deploy` does, and the Prisma CLI needs a native engine that
 * air-gapped builds cannot download. Either tool can take over from the other:
 * same table shape, same checksum (sha256 of migration.sql), same advisory
 * lock key as Prisma's schema engine, so the two also exclude each other.
 *
 * Protocol: every transaction of a run takes Prisma's migrate lock key as a
 * transaction-level advisory lock first: one to create the history table, one
 * to check the history, then one per pending migration, which re-reads whether
 * that migration is applied meanwhile and otherwise applies it together with
 * its history row (a failure leaves neither half behind). A transaction lock
 * and Prisma's session lock on the same key exclude each other, and the run
 * leaves nothing on the session: behind a transaction-mode pooler
 * (PgBouncer), where consecutive transactions may land on different backends
 * and a session lock would stay on whichever backend took it, migrate is as
 * safe as on a direct connection.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ConflictError, InternalError, RunledgerError, UnavailableError, ValidationError } from '../errors/runledger-error.js';
import { isConnectionFault, normalizeDatabaseError } from '../errors/database-error.js';
import { RUNLEDGER_SCHEMA } from '../model/constants.js';
import { ensurePendingNotAppliedElsewhere } from './history-elsewhere.js';
import { connectionStringProblem } from '../validation/connection-string.js';
import { textProblem } from '../validation/storable.js';
import { PACKAGED_MIGRATIONS_DIR, readMigrationFiles, type MigrationFile } from './migration-files.js';

/** The key Prisma's schema engine locks during `migrate deploy`. */
export const PRISMA_MIGRATE_ADVISORY_LOCK_KEY = 72707369;

export type MigrateOptions = ({ connectionString: string; pool?: never } | { pool: pg.Pool; connectionString?: never }) & {
  /** Folder in Prisma's layout; defaults to the migrations shipped with runledger. */
  migrationsDir?: string;
  /** Receives one line per applied migration. */
  log?: (line: string) => void;
};

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
}

interface HistoryRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

const HISTORY_TABLE = `"${RUNLEDGER_SCHEMA}"."_prisma_migrations"`;

/**
 * Applies the pending migrations (see the header). Options are checked before
 * anything connects: exactly one of `connectionString` (a postgres:// URL) or
 * `pool` (a pg.Pool), an existing `migrationsDir`, a `log` function; anything
 * else is `migrate.invalid_options` naming the field. Leaving out both, or
 * passing `connectionString: undefined` (an unset environment variable), is
 * refused: pg would otherwise connect wherever the PG* variables point.
 * A server that cannot be reached is `migrate.connection_failed`.
 */
export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  validateOptions(options);
  const files = await readMigrationsDir(options.migrationsDir ?? PACKAGED_MIGRATIONS_DIR);
  const ownClient = options.pool ? undefined : new pg.Client({ connectionString: options.connectionString });
  // A connection lost between queries is raised as an 'error' event; unheard, it would crash the process (the next query reports it).
  ownClient?.on('error', () => undefined);
  let client: pg.ClientBase;
  try {
    if (ownClient) {
      await ownClient.connect();
      client = ownClient;
    } else {
      client = await options.pool!.connect();
    }
  } catch (error) {
    await ownClient?.end().catch(() => undefined);
    throw new UnavailableError('migrate.connection_failed', 'Could not connect to the database to migrate.', {
      internalMessage: `migrate: ${(error as Error).message}`,
      cause: error,
    });
  }
  let broken = false;
  try {
    return await applyPending(client, files, options.log ?? (() => undefined));
  } catch (error) {
    // A connection in an unknown state (a failed ROLLBACK) is not handed back to the caller's pool.
    broken = isConnectionFault(error);
    if (error instanceof RunledgerError) throw error;
    throw normalizeDatabaseError(error, 'migrate');
  } finally {
    if (ownClient) await ownClient.end().catch(() => undefined);
    else (client as pg.PoolClient).release(broken);
  }
}

/** Runs `fn` in a transaction that first takes the migrate lock (see the header); rolls back on any failure. */
async function underMigrateLock<R>(client: pg.ClientBase, fn: () => Promise<R>): Promise<R> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [PRISMA_MIGRATE_ADVISORY_LOCK_KEY]);
    const result = await fn();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

function invalid(field: string, message: string): ValidationError {
  return new ValidationError('migrate.invalid_options', field, message);
}

function validateOptions(options: unknown): asserts options is MigrateOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw invalid('options', 'Invalid options: must be an object with connectionString or pool.');
  const o = options as Record<string, unknown>;
  const hasUrl = o.connectionString !== undefined;
  const hasPool = o.pool !== undefined;
  if (hasUrl && hasPool) throw invalid('pool', 'Invalid pool: give connectionString or pool, not both.');
  if (!hasUrl && !hasPool)
    throw invalid(
      'connectionString',
      'Invalid connectionString: give connectionString (a postgres:// URL) or pool; without either, pg would connect wherever the PG* environment variables point.',
    );
  if (hasUrl) {
    const problem = connectionStringProblem(o.connectionString);
    if (problem) throw invalid('connectionString', `Invalid connectionString: ${problem}.`);
  }
  if (hasPool && typeof (o.pool as { connect?: unknown } | null)?.connect !== 'function') throw invalid('pool', 'Invalid pool: must be a pg.Pool.');
  if (o.migrationsDir !== undefined && (typeof o.migrationsDir !== 'string' || o.migrationsDir.trim() === '' || textProblem(o.migrationsDir))) {
    throw invalid('migrationsDir', 'Invalid migrationsDir: must be a directory path.');
  }
  if (o.log !== undefined && typeof o.log !== 'function') throw invalid('log', 'Invalid log: must be a function.');
}

/** A missing or unreadable folder is the caller's option, named as such (a raw ENOENT before). */
async function readMigrationsDir(dir: string): Promise<MigrationFile[]> {
  try {
    return await readMigrationFiles(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') {
      throw new ValidationError(
        'migrate.invalid_options',
        'migrationsDir',
        `Invalid migrationsDir: ${code === 'EACCES' ? 'cannot be read' : 'is not a directory'}.`,
        {
          internalMessage: `migrate: ${(error as Error).message}`,
          details: { migrationsDir: dir },
        },
      );
    }
    throw error;
  }
}

async function applyPending(client: pg.ClientBase, files: MigrationFile[], log: (line: string) => void): Promise<MigrateResult> {
  const result: MigrateResult = { applied: [], alreadyApplied: [] };
  // Committed on its own: a refusal below leaves the history table there (its fixSql inserts into it).
  await underMigrateLock(client, async () => {
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${RUNLEDGER_SCHEMA}"`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${HISTORY_TABLE} (
      "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum"            VARCHAR(64) NOT NULL,
      "finished_at"         TIMESTAMPTZ,
      "migration_name"      VARCHAR(255) NOT NULL,
      "logs"                TEXT,
      "rolled_back_at"      TIMESTAMPTZ,
      "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
  });
  const pending = await underMigrateLock(client, async () => {
    const { rows } = await client.query<HistoryRow>(`SELECT migration_name, checksum, finished_at, rolled_back_at FROM ${HISTORY_TABLE} ORDER BY started_at`);

    const failed = rows.find((row) => row.finished_at === null && row.rolled_back_at === null);
    if (failed) throw failedInHistory(failed.migration_name);
    const applied = new Map(rows.filter((row) => row.finished_at !== null && row.rolled_back_at === null).map((row) => [row.migration_name, row]));

    await ensurePendingNotAppliedElsewhere(
      client,
      files.filter((file) => !applied.has(file.name)).map((file) => file.name),
      applied.size,
    );

    const todo: MigrationFile[] = [];
    for (const file of files) {
      const existing = applied.get(file.name);
      if (!existing) {
        todo.push(file);
        continue;
      }
      if (!file.acceptedChecksums.has(existing.checksum)) {
        throw new ConflictError('migrate.checksum_mismatch', `Migration ${file.name} was modified after it was applied.`, {
          internalMessage: `migration ${file.name}: recorded checksum ${existing.checksum}, file checksum ${file.checksum}`,
          details: { migration: file.name },
        });
      }
      result.alreadyApplied.push(file.name);
    }
    return todo;
  });

  for (const file of pending) {
    if (await applyOne(client, file)) {
      log(`applied ${file.name}`);
      result.applied.push(file.name);
    } else {
      result.alreadyApplied.push(file.name);
    }
  }
  return result;
}

function failedInHistory(name: string): ConflictError {
  return new ConflictError('migrate.failed_migration_in_history', `Migration ${name} failed earlier and was never resolved.`, {
    internalMessage: `migration ${name} has neither finished_at nor rolled_back_at; resolve it (prisma migrate resolve) before migrating`,
    details: { migration: name },
  });
}

/**
 * Applies `file` with its history row in one locked transaction; false when another migrator applied it
 * since the history was read (between this run's transactions the lock is free).
 */
async function applyOne(client: pg.ClientBase, file: MigrationFile): Promise<boolean> {
  try {
    return await underMigrateLock(client, async () => {
      const { rows } = await client.query<{ done: boolean }>(
        `SELECT finished_at IS NOT NULL AS done FROM ${HISTORY_TABLE} WHERE migration_name = $1 AND rolled_back_at IS NULL`,
        [file.name],
      );
      if (rows.some((row) => row.done)) return false;
      if (rows.length > 0) throw failedInHistory(file.name);
      const id = randomUUID();
      await client.query(`INSERT INTO ${HISTORY_TABLE} (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)`, [
        id,
        file.checksum,
        file.name,
      ]);
      await client.query(file.sql);
      await client.query(`UPDATE ${HISTORY_TABLE} SET finished_at = clock_timestamp(), applied_steps_count = 1 WHERE id = $1`, [id]);
      return true;
    });
  } catch (error) {
    if (error instanceof RunledgerError) throw error;
    // A lost connection says nothing about the migration: the transaction died with it, retry later.
    if (isConnectionFault(error)) throw normalizeDatabaseError(error, `migration ${file.name}`);
    throw new InternalError('migrate.migration_failed', `Migration ${file.name} failed and was rolled back.`, {
      internalMessage: `migration ${file.name}: ${(error as Error).message}`,
      details: { migration: file.name },
      cause: error,
    });
  }
}
