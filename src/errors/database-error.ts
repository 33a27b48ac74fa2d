/**
 * The one place where driver errors (Prisma's P2010 wrapper around a driver
 * adapter error, or a raw `pg` DatabaseError) become RunledgerErrors. Callers
 * never inspect Prisma error shapes themselves.
 *
 * Connection faults (refused, reset, terminated by the server, timed out,
 * pool exhausted, a database not accepting connections, a server starting
 * up or shutting down) are `database.unavailable` (category `unavailable`)
 * however they arrive: a Node socket code, a Prisma P1xxx code, a
 * driver-adapter error kind, a SQLSTATE of class 08/53/57P or 55000 at
 * connect, or pg's code-less "Connection terminated unexpectedly". Retrying
 * callers (the worker) key on that.
 *
 * Three more have codes of their own because retrying as is cannot help:
 * `database.not_found` (3D000, the connection string names no database;
 * category `unavailable`, exit code 5 in the CLI), `migrate.required`
 * (runledger's own tables or schema are missing: run migrate()), and
 * `database.transaction_closed` (a transaction client used after it
 * committed or rolled back: a programming error, category `validation`),
 * `client.pool_ended` (the pg Pool under the client was ended: category
 * `validation` like the closed transaction, since no retry on that pool can
 * succeed) and `database.read_only` (25006: the session cannot write, a
 * replica URL or `default_transaction_read_only`; category `unavailable`,
 * since a demoted primary becomes writable again after a failover).
 */
import { RUNLEDGER_SCHEMA } from '../model/constants.js';
import { ConflictError, InternalError, RunledgerError, UnavailableError, ValidationError } from './runledger-error.js';

export interface DatabaseErrorInfo {
  /** Five-character SQLSTATE, when the error came from PostgreSQL. */
  sqlState: string | undefined;
  message: string;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Digs the SQLSTATE and server message out of a Prisma or pg error. */
export function databaseErrorInfo(error: unknown): DatabaseErrorInfo {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== null && typeof current === 'object'; depth += 1) {
    const record = current as Record<string, unknown>;
    const adapterCause = (record.meta as { driverAdapterError?: { cause?: Record<string, unknown> } } | undefined)?.driverAdapterError?.cause;
    if (adapterCause) {
      const code = adapterCause.originalCode ?? adapterCause.code;
      return {
        sqlState: typeof code === 'string' && SQLSTATE.test(code) ? code : undefined,
        message: String(adapterCause.originalMessage ?? adapterCause.message ?? adapterCause.kind ?? ''),
      };
    }
    // Prisma's interactive transaction API reports P2034 for serialization failures.
    if (record.code === 'P2034') return { sqlState: '40001', message: String(record.message ?? '') };
    if (typeof record.code === 'string' && SQLSTATE.test(record.code)) {
      return { sqlState: record.code, message: String(record.message ?? '') };
    }
    current = record.cause;
  }
  return { sqlState: undefined, message: error instanceof Error ? error.message : String(error) };
}

/** SQLSTATEs after which the whole transaction may be retried as is. */
export const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available (lock_timeout)
  '57014', // query_canceled (statement_timeout)
]);

/**
 * Wraps any non-runledger error thrown during `operation` into the family.
 * RunledgerErrors pass through untouched.
 */
export function normalizeDatabaseError(error: unknown, operation: string): RunledgerError {
  if (error instanceof RunledgerError) return error;
  const { sqlState, message } = databaseErrorInfo(error);
  const internalMessage = `${operation}: ${sqlState ?? 'no sqlstate'}: ${message}`;
  // Before the connection rules: Prisma reports a closed transaction with P2028, the code it also uses for a
  // transaction that could not start in time; this one can never succeed, however long the caller waits.
  if (isClosedTransaction(error)) {
    return new ValidationError(
      'database.transaction_closed',
      'db',
      'The transaction client passed as db has already committed or rolled back; pass the Prisma client, or a transaction that is still open.',
      { internalMessage: `${operation}: ${describe(error)}`, cause: error },
    );
  }
  if (isEndedPool(error)) {
    return new ValidationError('client.pool_ended', 'db', 'The pg Pool under db has been ended (pool.end()); pass a client over a pool that is still open.', {
      internalMessage: `${operation}: ${describe(error)}`,
      cause: error,
    });
  }
  // Before the SQLSTATE rules: a connection that died inside a statement can
  // carry the statement's own code too, and the cure is the same (retry later).
  const fault = connectionFault(error);
  if (fault !== undefined) {
    return new UnavailableError('database.unavailable', 'The database is unavailable; retry later.', {
      internalMessage: `${operation}: connection fault (${fault}): ${message || describe(error)}`,
      cause: error,
      details: { reason: fault },
    });
  }
  if (sqlState === '40001' || sqlState === '40P01') {
    return new ConflictError('database.transaction_conflict', 'The operation conflicted with a concurrent one; retry it.', {
      internalMessage,
      cause: error,
      details: { sqlState },
    });
  }
  if (sqlState === '3D000') {
    return new UnavailableError('database.not_found', 'The database named by the connection string does not exist.', {
      internalMessage,
      cause: error,
      details: { sqlState },
    });
  }
  if (sqlState === '25006') {
    return new UnavailableError(
      'database.read_only',
      'The database session is read-only (a replica, or default_transaction_read_only = on): point runledger at the primary.',
      { internalMessage, cause: error, details: { sqlState } },
    );
  }
  if (sqlState !== undefined && isMissingOwnObject(sqlState, message)) {
    return new InternalError('migrate.required', "runledger's tables are missing from this database: run migrate() (or `runledger migrate`) first.", {
      internalMessage,
      cause: error,
      details: { sqlState },
    });
  }
  if (sqlState === '55P03' || sqlState === '57014') {
    return new UnavailableError('database.timeout', 'The database did not answer in time; retry later.', {
      internalMessage,
      cause: error,
      details: { sqlState },
    });
  }
  return new InternalError('database.error', 'The operation failed inside the database.', {
    internalMessage,
    cause: error,
    details: sqlState ? { sqlState } : {},
  });
}

/** True for errors raised by PostgreSQL, the pg driver or Prisma (as opposed to a caller's own errors). */
export function isDatabaseError(error: unknown): boolean {
  if (error instanceof RunledgerError) return false;
  if (databaseErrorInfo(error).sqlState !== undefined || connectionFault(error) !== undefined || isEndedPool(error)) return true;
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' && (name.startsWith('PrismaClient') || name === 'DriverAdapterError' || name === 'DatabaseError');
}

/** True when `error` says the connection to PostgreSQL failed or was lost (see `connectionFault`). */
export function isConnectionFault(error: unknown): boolean {
  return connectionFault(error) !== undefined;
}

/** Socket-level failures Node reports by `code` on the error pg or pg-pool raises. */
const SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);

/**
 * Prisma's codes for an unreachable server (P1001), a connect timeout
 * (P1002), a socket timeout (P1008), a closed connection (P1017), too many
 * connections (P2037), and P2028, an interactive transaction that could not
 * start in time (its pool could not get a connection) or whose connection
 * went away (not one that is closed: see isClosedTransaction).
 */
const PRISMA_CODES: ReadonlySet<string> = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2028', 'P2037']);

/** @prisma/adapter-pg's error kinds for the same failures (`meta.driverAdapterError.cause.kind`). */
const ADAPTER_KINDS: ReadonlySet<string> = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);

/**
 * SQLSTATEs of a lost or refused session: class 08 (connection exception),
 * class 53 (insufficient resources: too many connections, out of memory),
 * 57P01-57P05 (admin shutdown / pg_terminate_backend, crash shutdown, cannot
 * connect now, database dropped, idle session timeout).
 */
function isConnectionSqlState(sqlState: string): boolean {
  return sqlState.startsWith('08') || sqlState.startsWith('53') || sqlState.startsWith('57P');
}

/**
 * 55000 (object_not_in_prerequisite_state) is a connection fault only when
 * the server refuses the session: `database "x" is not currently accepting
 * connections` (ALTER DATABASE ... ALLOW_CONNECTIONS false, as operators and
 * restores do), raised FATAL while connecting. Inside a session 55000 means
 * other things (a sequence's currval before nextval, a replication slot in
 * use), ERROR-level and not cured by retrying. Severity and message are both
 * looked at: either identifies the connect phase (the message may be
 * translated by the server's lc_messages, the severity word too).
 */
function isRefusedSession(sqlState: string, record: Record<string, unknown>): boolean {
  if (sqlState !== '55000') return false;
  const message = String(record.originalMessage ?? record.message ?? '');
  return record.severity === 'FATAL' || /\bnot currently accepting connections\b/.test(message);
}

/**
 * An undefined table, schema, type or function (42P01, 3F000, 42704, 42883)
 * that is runledger's own: the database was never migrated, or not to this
 * version. Keyed on the name in the server's message (an identifier, the
 * same in every lc_messages language), so a host's missing table (a trigger
 * of its own, say) stays a plain database error.
 */
const MISSING_OBJECT_SQLSTATES: ReadonlySet<string> = new Set(['42P01', '3F000', '42704', '42883']);
/** `"runledger"`, `"runledger".x`, `"runledger.x"` or `runledger.x`, not `myrunledger.x` nor `"runledger_old"`. */
const OWN_OBJECT = new RegExp(`(?<![\\w$])"?${RUNLEDGER_SCHEMA}(?:"?\\.|"(?![\\w$]))`);
function isMissingOwnObject(sqlState: string, message: string): boolean {
  return MISSING_OBJECT_SQLSTATES.has(sqlState) && OWN_OBJECT.test(message);
}

/**
 * Prisma's answer to a statement on an interactive-transaction client that
 * already committed or rolled back (P2028 "Transaction already closed", or
 * "Transaction not found" once Prisma has forgotten it), or the driver
 * adapter's TransactionAlreadyClosed (P1018).
 */
function isClosedTransaction(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth += 1) {
    const record = current as Record<string, unknown>;
    if (record.code === 'P1018') return true;
    if (record.code === 'P2028' && typeof record.message === 'string' && /Transaction already closed|Transaction not found/.test(record.message)) return true;
    current = record.cause;
  }
  return false;
}

/** pg-pool's plain Error for `connect()`/`query()` after `end()`, however deep a wrapper holds it. */
function isEndedPool(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth += 1) {
    const record = current as Record<string, unknown>;
    if (typeof record.message === 'string' && record.message.includes('Cannot use a pool after calling end on the pool')) return true;
    current = record.cause ?? (record.meta as Record<string, unknown> | undefined)?.driverAdapterError;
  }
  return false;
}

/**
 * pg raises these as plain Errors without a code: the socket closed under a
 * query ("Connection terminated unexpectedly"), the client was ended with
 * queries queued ("Connection terminated"), a connect or pool wait timed out,
 * or a query was sent on a client that already failed. @prisma/adapter-pg
 * rethrows them untouched, so their message is all there is to go by.
 */
const PG_CONNECTION_MESSAGES: readonly RegExp[] = [
  /\bConnection terminated( unexpectedly| due to connection timeout)?$/m,
  /\bClient has encountered a connection error and is not queryable$/m,
  /\bClient was closed and is not queryable$/m,
  /\btimeout exceeded when trying to connect$/m,
  /^timeout expired$/m,
  /\bQuery read timeout$/m,
];

/**
 * Why `error` is a connection fault (a short reason for logs and `details`),
 * or undefined when it is not one. Walks the wrappers Prisma, the driver
 * adapter and pg-pool put around the original error (`cause`,
 * `meta.driverAdapterError`). An unavailable RunledgerError stays one.
 */
function connectionFault(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0 && seen.size < 12) {
    const current = queue.shift();
    if (current === null || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    if (current instanceof RunledgerError) {
      if (current.code === 'database.unavailable') return String(current.details.reason ?? 'unavailable');
      continue;
    }
    const record = current as Record<string, unknown>;
    if (isClosedTransaction(record)) continue;
    const code = typeof record.code === 'string' ? record.code : undefined;
    const originalCode = typeof record.originalCode === 'string' ? record.originalCode : undefined;
    if (code && SOCKET_CODES.has(code)) return code;
    if (code && PRISMA_CODES.has(code)) return code;
    if (typeof record.kind === 'string' && ADAPTER_KINDS.has(record.kind)) return record.kind;
    const sqlState = originalCode ?? code;
    if (sqlState && SQLSTATE.test(sqlState) && (isConnectionSqlState(sqlState) || isRefusedSession(sqlState, record))) return sqlState;
    if (typeof record.message === 'string' && PG_CONNECTION_MESSAGES.some((pattern) => pattern.test(record.message as string))) {
      return record.message;
    }
    queue.push(record.cause, (record.meta as Record<string, unknown> | undefined)?.driverAdapterError);
  }
  return undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
