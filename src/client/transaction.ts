/**
 * Join-or-own transactions. Every operation takes `db`, either a Prisma client
 * (the operation opens its own READ COMMITTED transaction and commits it) or an
 * interactive-transaction client (the operation joins it and never commits or
 * rolls it back: the caller's business write and the enqueue share one fate).
 */
import { isDatabaseError, normalizeDatabaseError } from '../errors/database-error.js';
import { ValidationError } from '../errors/runledger-error.js';
import { isTransactionClient, type Db, type PrismaClientLike, type Tx } from './types.js';

export interface OwnedTransactionOptions {
  /** How long to wait for a pooled connection, in ms (Prisma's `maxWait`). */
  maxWaitMs?: number;
  /** Upper bound of the whole transaction, in ms (Prisma's `timeout`). */
  timeoutMs?: number;
}

const DEFAULT_MAX_WAIT_MS = 10_000;
const DEFAULT_TIMEOUT_MS = 60_000;

export interface TransactionContext {
  tx: Tx;
  /** True when runledger opened the transaction itself (so it is READ COMMITTED). */
  owned: boolean;
}

/**
 * Runs `fn` in a transaction on `db` and normalises database failures into the
 * RunledgerError family, naming `operation` in the internal message. Errors
 * that are not the database's (the caller's own, RunledgerErrors) pass through.
 */
export async function withTransaction<R>(
  db: Db,
  operation: string,
  fn: (context: TransactionContext) => Promise<R>,
  options: OwnedTransactionOptions = {},
): Promise<R> {
  try {
    if (isTransactionClient(db)) return await fn({ tx: db, owned: false });
    return await (db as PrismaClientLike).$transaction((tx: Tx) => fn({ tx, owned: true }), {
      isolationLevel: 'ReadCommitted',
      maxWait: options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS,
      timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    });
  } catch (error) {
    throw isDatabaseError(error) ? normalizeDatabaseError(error, operation) : error;
  }
}

/**
 * Release-sensitive operations rely on READ COMMITTED: each statement sees rows
 * committed while an earlier lock wait blocked it. READ UNCOMMITTED behaves the
 * same in PostgreSQL; anything stronger is refused before a lock is taken.
 * A transaction runledger opened itself is READ COMMITTED by construction, so
 * the check costs a round trip only on a joined transaction.
 */
export async function ensureReadCommitted(context: TransactionContext, code: string, operationLabel: string): Promise<void> {
  if (context.owned) return;
  const rows = await context.tx.$queryRaw<{ level: string }[]>`SELECT current_setting('transaction_isolation') AS level`;
  const level = rows[0]?.level;
  if (level === 'read committed' || level === 'read uncommitted') return;
  throw new ValidationError(code, 'transaction.isolationLevel', `${operationLabel} requires a READ COMMITTED transaction.`, {
    internalMessage: `${operationLabel}: caller transaction isolation is ${level ?? 'unknown'}`,
    details: { isolationLevel: level },
  });
}

/** `SET LOCAL lock_timeout`: bounds every lock wait for the rest of the transaction. */
export async function setLocalLockTimeout(tx: Tx, ms: number): Promise<void> {
  await tx.$queryRaw`SELECT set_config('lock_timeout', ${`${Math.max(0, Math.trunc(ms))}ms`}, true)`;
}

/** `SET LOCAL statement_timeout`: bounds every statement for the rest of the transaction. */
export async function setLocalStatementTimeout(tx: Tx, ms: number): Promise<void> {
  await tx.$queryRaw`SELECT set_config('statement_timeout', ${`${Math.max(0, Math.trunc(ms))}ms`}, true)`;
}
