/**
 * Join-or-own transactions. Every operation takes `db`, either a Prisma client
 * (the operation opens its own READ COMMITTED transaction and commits it) or an
 * interactive-transaction client (the operation joins it and never commits or
 * rolls it back: the caller's business write and the enqueue share one fate).
 *
 * Join-or-autocommit (`withStatement`): an operation that is ONE statement
 * needs no transaction of its own, since a single statement is atomic. On a
 * root client it is sent as one autocommit statement (one round trip instead
 * of BEGIN, SET TRANSACTION ISOLATION LEVEL, the statement, COMMIT); on a
 * transaction client it joins like `withTransaction`. Autocommit statements
 * run at the session's default isolation, so a root client whose sessions do
 * not default to READ COMMITTED (checked once per client) gets an owned READ
 * COMMITTED transaction instead: the fenced writes and SKIP LOCKED claims rely
 * on READ COMMITTED's re-check of a row updated concurrently, where REPEATABLE
 * READ and SERIALIZABLE raise serialization failures.
 */
import { isDatabaseError, normalizeDatabaseError } from '../errors/database-error.js';
import { ValidationError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { MAX_TIMER_MS } from '../validation/primitives.js';
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
  const maxWait = timerOption(options.maxWaitMs, 'maxWaitMs', DEFAULT_MAX_WAIT_MS);
  const timeout = timerOption(options.timeoutMs, 'timeoutMs', DEFAULT_TIMEOUT_MS);
  try {
    if (isTransactionClient(db)) return await fn({ tx: db, owned: false });
    const root = db as PrismaClientLike;
    // A client whose transactions already start READ COMMITTED (its session
    // default and its own `transactionOptions`, checked once per client) needs
    // no SET TRANSACTION: one round trip less per transaction.
    const isolation = (await ownedTransactionsAreReadCommitted(root, operation)) ? {} : { isolationLevel: 'ReadCommitted' as const };
    return await root.$transaction((tx: Tx) => fn({ tx, owned: true }), { ...isolation, maxWait, timeout });
  } catch (error) {
    throw isDatabaseError(error) ? normalizeDatabaseError(error, operation) : error;
  }
}

/** Prisma arms Node timers with these (so does poolDb): NaN, 0 or more than 2^31-1 ms would fire them at once. */
export function timerOption(value: unknown, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_TIMER_MS) return value;
  throw new ValidationError('client.invalid_options', field, `Invalid ${field}: must be an integer number of milliseconds from 1 to ${MAX_TIMER_MS}.`);
}

export interface StatementOptions {
  /**
   * True (default): the statement relies on READ COMMITTED (a fenced write, a
   * SKIP LOCKED claim), so it autocommits only where the session's default
   * isolation is READ COMMITTED. False: any isolation will do (a plain read).
   */
  readCommitted?: boolean;
}

/**
 * Runs `fn`, which must send exactly one statement, joined to `db` when it is
 * a transaction client and as an autocommit statement on a root client (see
 * the module comment), normalising database failures like `withTransaction`.
 * `fn` must not rely on a second statement seeing the first's writes: on a
 * root client each statement commits on its own, on whatever pooled
 * connection it gets.
 */
export async function withStatement<R>(db: Db, operation: string, fn: (client: Tx) => Promise<R>, options: StatementOptions = {}): Promise<R> {
  if (!isTransactionClient(db) && (options.readCommitted ?? true) && !(await autocommitIsReadCommitted(db as PrismaClientLike, operation))) {
    return withTransaction(db, operation, ({ tx }) => fn(tx));
  }
  try {
    return await fn(db);
  } catch (error) {
    throw isDatabaseError(error) ? normalizeDatabaseError(error, operation) : error;
  }
}

/**
 * True when `db` is a root client whose autocommit statements run at READ
 * COMMITTED: a READ COMMITTED statement sent on it commits on its own. False
 * on a transaction client (statements join it) and on a root client whose
 * sessions default to a stronger isolation.
 */
export async function canAutocommit(db: Db, operation: string): Promise<boolean> {
  return !isTransactionClient(db) && (await autocommitIsReadCommitted(db as PrismaClientLike, operation));
}

/** Per root client: whether its autocommit statements run at READ COMMITTED (or READ UNCOMMITTED, the same in PostgreSQL). */
const autocommitReadCommitted = new WeakMap<object, Promise<boolean>>();

/**
 * Whether an autocommit statement on `db` runs at READ COMMITTED: the
 * session default (`default_transaction_isolation`, settable per server,
 * database, role or connection string). Asked once per client; a failed check
 * is not remembered.
 */
export async function autocommitIsReadCommitted(db: PrismaClientLike, operation = 'check isolation'): Promise<boolean> {
  return rememberedPerClient(autocommitReadCommitted, db, operation, async () => isReadCommitted(db));
}

/**
 * The isolation option a transaction opened on `db` needs to run at READ
 * COMMITTED: none when its transactions already do (asked once per client),
 * else `ReadCommitted`. For callers that open the transaction themselves
 * (the worker's transactional attempts) rather than through withTransaction.
 */
export async function readCommittedIsolation(db: PrismaClientLike, operation: string): Promise<{ isolationLevel?: 'ReadCommitted' }> {
  return (await ownedTransactionsAreReadCommitted(db, operation)) ? {} : { isolationLevel: 'ReadCommitted' };
}

/** Per root client: whether a transaction opened without an isolation level runs at READ COMMITTED. */
const defaultTransactionReadCommitted = new WeakMap<object, Promise<boolean>>();

/**
 * Whether `db.$transaction(fn)` without an isolation level runs at READ
 * COMMITTED: asked once per client by opening one such transaction, so both
 * the session default and a `transactionOptions.isolationLevel` given to the
 * client's constructor are taken into account. A failed check is not
 * remembered.
 */
async function ownedTransactionsAreReadCommitted(db: PrismaClientLike, operation: string): Promise<boolean> {
  return rememberedPerClient(defaultTransactionReadCommitted, db, operation, () => db.$transaction((tx: Tx) => isReadCommitted(tx)));
}

async function isReadCommitted(client: Tx): Promise<boolean> {
  const rows = await client.$queryRaw<{ level: string }[]>`SELECT current_setting('transaction_isolation') AS level`;
  const level = rows[0]?.level;
  return level === 'read committed' || level === 'read uncommitted';
}

/** One answer per client, shared by concurrent callers; a failure is forgotten so the next call asks again. */
async function rememberedPerClient(cache: WeakMap<object, Promise<boolean>>, db: object, operation: string, ask: () => Promise<boolean>): Promise<boolean> {
  let check = cache.get(db);
  if (!check) {
    check = ask();
    cache.set(db, check);
    check.catch(() => {
      if (cache.get(db) === check) cache.delete(db);
    });
  }
  try {
    return await check;
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
export async function ensureReadCommitted(context: TransactionContext, code: ErrorCode, operationLabel: string): Promise<void> {
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
