/**
 * The one place where driver errors (Prisma's P2010 wrapper around a driver
 * adapter error, or a raw `pg` DatabaseError) become RunledgerErrors. Callers
 * never inspect Prisma error shapes themselves.
 */
import { ConflictError, InternalError, RunledgerError, UnavailableError } from './runledger-error.js';

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
    const adapterCause = (record.meta as { driverAdapterError?: { cause?: Record<string, unknown> } } | undefined)
      ?.driverAdapterError?.cause;
    if (adapterCause) {
      const code = adapterCause.originalCode ?? adapterCause.code;
      return {
        sqlState: typeof code === 'string' && SQLSTATE.test(code) ? code : undefined,
        message: String(adapterCause.originalMessage ?? adapterCause.message ?? ''),
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

const CONNECTION_CLASS = ['08', '53', '57P'];

/**
 * Wraps any non-runledger error thrown during `operation` into the family.
 * RunledgerErrors pass through untouched.
 */
export function normalizeDatabaseError(error: unknown, operation: string): RunledgerError {
  if (error instanceof RunledgerError) return error;
  const { sqlState, message } = databaseErrorInfo(error);
  const internalMessage = `${operation}: ${sqlState ?? 'no sqlstate'}: ${message}`;
  if (sqlState === '40001' || sqlState === '40P01') {
    return new ConflictError('database.transaction_conflict', 'The operation conflicted with a concurrent one; retry it.', {
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
  if (sqlState !== undefined && CONNECTION_CLASS.some((prefix) => sqlState.startsWith(prefix))) {
    return new UnavailableError('database.unavailable', 'The database is unavailable.', { internalMessage, cause: error });
  }
  if (sqlState === undefined && isConnectionFailure(error)) {
    return new UnavailableError('database.unavailable', 'The database is unavailable.', { internalMessage, cause: error });
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
  if (databaseErrorInfo(error).sqlState !== undefined || isConnectionFailure(error)) return true;
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' && (name.startsWith('PrismaClient') || name === 'DriverAdapterError' || name === 'DatabaseError');
}

function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'P1001', 'P1017', 'P2028'].includes(code);
}
