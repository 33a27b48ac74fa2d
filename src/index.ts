/**
 * runledger: a durable job queue and workflow (DAG) engine inside your own
 * PostgreSQL, for Prisma 7 backends. This module is the whole public API;
 * nothing is reached through deep imports.
 */
export {
  RunledgerError,
  ValidationError,
  NotFoundError,
  ConflictError,
  UnavailableError,
  InternalError,
  isRunledgerError,
  databaseErrorInfo,
  normalizeDatabaseError,
  RETRYABLE_SQLSTATES,
  type ErrorCategory,
  type RunledgerErrorOptions,
  type DatabaseErrorInfo,
} from './errors/index.js';

export type { Db, Tx, PrismaClientLike, PrismaTransactionLike } from './client/types.js';
export { isTransactionClient } from './client/types.js';
export {
  withTransaction,
  ensureReadCommitted,
  setLocalLockTimeout,
  setLocalStatementTimeout,
  type OwnedTransactionOptions,
  type TransactionContext,
} from './client/transaction.js';

export { migrate, PRISMA_MIGRATE_ADVISORY_LOCK_KEY, type MigrateOptions, type MigrateResult } from './migrate/migrate.js';
export { PACKAGED_MIGRATIONS_DIR } from './migrate/migration-files.js';
export { RUNLEDGER_SCHEMA, WORKFLOW_RUN_TERMINAL_CHANNEL, JOB_AVAILABLE_CHANNEL } from './db/constants.js';
export type { JsonValue } from './validation/primitives.js';
