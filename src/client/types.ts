/**
 * Structural types for the Prisma clients runledger accepts. They name only
 * what runledger calls (`$queryRaw`, `$executeRaw`, `$transaction`), so the host
 * application's own generated client and its interactive-transaction client fit
 * without runledger importing their types (test/types proves it against a
 * client generated from another schema).
 */
import type pg from 'pg';
import { ValidationError } from '../errors/runledger-error.js';

/** What a tagged `$queryRaw`/`$executeRaw` accepts: the template and its values. */
export type RawQueryArgs = [query: TemplateStringsArray, ...values: unknown[]];

interface RawSqlCapable {
  $queryRaw<T = unknown>(query: TemplateStringsArray, ...values: any[]): PromiseLike<T>;
  $executeRaw(query: TemplateStringsArray, ...values: any[]): PromiseLike<number>;
}

/** The options runledger passes when it opens an interactive transaction. */
export interface TransactionOptions {
  isolationLevel?: 'ReadUncommitted' | 'ReadCommitted' | 'RepeatableRead' | 'Serializable';
  maxWait?: number;
  timeout?: number;
}

/** A Prisma client (or a `$extends` of one): runledger opens its own transactions on it. */
export interface PrismaClientLike extends RawSqlCapable {
  $transaction<R>(fn: (tx: any) => Promise<R>, options?: any): Promise<R>;
  $connect(): Promise<void>;
}

/**
 * An interactive-transaction client handed to `prisma.$transaction(async (tx) => ...)`.
 * Runledger joins it and never commits or rolls it back.
 */
export interface PrismaTransactionLike extends RawSqlCapable {}

/** The first argument of every runledger operation. */
export type Db = PrismaClientLike | PrismaTransactionLike;

/** The client runledger's SQL runs on once a transaction is open. */
export type Tx = RawSqlCapable;

/**
 * Tells a root client from a transaction client. A Prisma 7 transaction client
 * still has `$transaction` (type and runtime) but lacks `$connect`, so that
 * decides, not `$transaction`. (`$parent` cannot decide: Prisma 7 defines it on
 * every client, the root included.)
 */
export function isTransactionClient(db: Db): db is PrismaTransactionLike {
  assertDb(db);
  return typeof (db as { $connect?: unknown }).$connect !== 'function';
}

export const CLIENT_INVALID = 'client.invalid';

/**
 * Refuses anything that is not a Prisma client or transaction client with a
 * coded error instead of the TypeError its first use would throw. Every
 * operation reaches it before any SQL: `withTransaction`, `withStatement` and
 * `canAutocommit` all ask `isTransactionClient` first.
 */
export function assertDb(db: unknown, field = 'db'): asserts db is Db {
  const client = db as Partial<Record<'$queryRaw' | '$executeRaw', unknown>> | null | undefined;
  if (
    (typeof client === 'object' || typeof client === 'function') &&
    client !== null &&
    typeof client.$queryRaw === 'function' &&
    typeof client.$executeRaw === 'function'
  ) {
    return;
  }
  const given = db === null ? 'null' : Array.isArray(db) ? 'an array' : typeof db === 'object' ? 'an object without $queryRaw/$executeRaw' : typeof db;
  // A pg Pool is one call away from a client: say which.
  throw new ValidationError(
    CLIENT_INVALID,
    field,
    isPgPool(db)
      ? `Invalid ${field}: a pg Pool; pass poolDb(pool) to run on it without Prisma.`
      : `Invalid ${field}: must be a Prisma client, an interactive-transaction client or poolDb(pool) (got ${given}).`,
  );
}

/**
 * True for a `pg` Pool: `connect`, `query` and `end`, and the pool's counters (a single `pg.Client` has the
 * methods but no counters, and cannot serve concurrent statements), and no Prisma `$queryRaw`.
 */
export function isPgPool(value: unknown): value is pg.Pool {
  const candidate = value as Partial<Record<'connect' | 'query' | 'end' | 'totalCount' | '$queryRaw', unknown>> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.connect === 'function' &&
    typeof candidate.query === 'function' &&
    typeof candidate.end === 'function' &&
    typeof candidate.totalCount === 'number' &&
    candidate.$queryRaw === undefined
  );
}
