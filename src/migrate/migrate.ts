/**
 * A Prisma-compatible migrator. Hand-written because no library applies
 * Prisma's migration folders and writes `_prisma_migrations` the way
 * `prisma migrate deploy` does, and the Prisma CLI needs a native engine that
 * air-gapped builds cannot download. Either tool can take over from the other:
 * same table shape, same checksum (sha256 of migration.sql), same advisory
 * lock key as Prisma's schema engine, so the two also exclude each other.
 *
 * Protocol: one dedicated connection takes the session advisory lock, then
 * each pending migration runs in its own transaction together with its
 * history row, so a failure leaves neither half behind.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ConflictError, InternalError, RunledgerError, UnavailableError, ValidationError } from '../errors/runledger-error.js';
import { isConnectionFault, normalizeDatabaseError } from '../errors/database-error.js';
import { RUNLEDGER_SCHEMA } from '../db/constants.js';
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
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_ADVISORY_LOCK_KEY]);
    try {
      return await applyPending(client, files, options.log ?? (() => undefined));
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_ADVISORY_LOCK_KEY]).catch(() => {
        broken = true;
      });
    }
  } catch (error) {
    if (error instanceof RunledgerError) throw error;
    throw normalizeDatabaseError(error, 'migrate');
  } finally {
    if (ownClient) await ownClient.end().catch(() => undefined);
    else (client as pg.PoolClient).release(broken);
  }
}

function invalid(field: string, message: string): ValidationError {
  return new ValidationError('migrate.invalid_options', field, message);
}

function validateOptions(options: unknown): asserts options is MigrateOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw invalid('options', 'Invalid options: must be an object with connectionString or pool.');
  const o = options as Record<string, unknown>;
  const hasUrl = o.connectionString !== undefined;
  const hasPool = o.pool !== undefined;
  if (hasUrl && hasPool) throw invalid('pool', 'Invalid pool: give connectionString or pool, not both.');
  if (!hasUrl && !hasPool) throw invalid('connectionString', 'Invalid connectionString: give connectionString (a postgres:// URL) or pool; without either, pg would connect wherever the PG* environment variables point.');
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
      throw new ValidationError('migrate.invalid_options', 'migrationsDir', `Invalid migrationsDir: ${code === 'EACCES' ? 'cannot be read' : 'is not a directory'}.`, {
        internalMessage: `migrate: ${(error as Error).message}`,
        details: { migrationsDir: dir },
      });
    }
    throw error;
  }
}

async function applyPending(
  client: pg.ClientBase,
  files: MigrationFile[],
  log: (line: string) => void,
): Promise<MigrateResult> {
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
  const { rows } = await client.query<HistoryRow>(
    `SELECT migration_name, checksum, finished_at, rolled_back_at FROM ${HISTORY_TABLE} ORDER BY started_at`,
  );

  const failed = rows.find((row) => row.finished_at === null && row.rolled_back_at === null);
  if (failed) {
    throw new ConflictError('migrate.failed_migration_in_history', `Migration ${failed.migration_name} failed earlier and was never resolved.`, {
      internalMessage: `migration ${failed.migration_name} has neither finished_at nor rolled_back_at; resolve it (prisma migrate resolve) before migrating`,
      details: { migration: failed.migration_name },
    });
  }
  const applied = new Map(rows.filter((row) => row.finished_at !== null && row.rolled_back_at === null).map((row) => [row.migration_name, row]));

  await ensurePendingNotAppliedElsewhere(
    client,
    files.filter((file) => !applied.has(file.name)).map((file) => file.name),
    applied.size,
  );

  const result: MigrateResult = { applied: [], alreadyApplied: [] };
  for (const file of files) {
    const existing = applied.get(file.name);
    if (existing) {
      if (!file.acceptedChecksums.has(existing.checksum)) {
        throw new ConflictError('migrate.checksum_mismatch', `Migration ${file.name} was modified after it was applied.`, {
          internalMessage: `migration ${file.name}: recorded checksum ${existing.checksum}, file checksum ${file.checksum}`,
          details: { migration: file.name },
        });
      }
      result.alreadyApplied.push(file.name);
      continue;
    }
    await applyOne(client, file);
    log(`applied ${file.name}`);
    result.applied.push(file.name);
  }
  return result;
}

async function applyOne(client: pg.ClientBase, file: { name: string; sql: string; checksum: string }): Promise<void> {
  const id = randomUUID();
  await client.query('BEGIN');
  try {
    await client.query(`INSERT INTO ${HISTORY_TABLE} (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)`, [
      id,
      file.checksum,
      file.name,
    ]);
    await client.query(file.sql);
    await client.query(`UPDATE ${HISTORY_TABLE} SET finished_at = clock_timestamp(), applied_steps_count = 1 WHERE id = $1`, [id]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    // A lost connection says nothing about the migration: the transaction died with it, retry later.
    if (isConnectionFault(error)) throw normalizeDatabaseError(error, `migration ${file.name}`);
    throw new InternalError('migrate.migration_failed', `Migration ${file.name} failed and was rolled back.`, {
      internalMessage: `migration ${file.name}: ${(error as Error).message}`,
      details: { migration: file.name },
      cause: error,
    });
  }
}
