/**
 * Structural types for the Prisma clients runledger accepts. They name only
 * what runledger calls (`$queryRaw`, `$executeRaw`, `$transaction`), so the host
 * application's own generated client and its interactive-transaction client fit
 * without runledger importing their types (test/types proves it against a
 * client generated from another schema).
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
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
 * The one test of "is this a client runledger can run on": a Prisma client, an
 * interactive-transaction client, an `$extends` of either, or poolDb(pool), by
 * the tagged `$queryRaw`/`$executeRaw` pair runledger calls. One that claims
 * to be a root client (`$connect`, see isTransactionClient) must also open
 * transactions (`$transaction`). Only the shape can be checked: the host's
 * generated client is its own class.
 */
export function isPrismaClient(value: unknown): value is Db {
  const client = value as Partial<Record<'$queryRaw' | '$executeRaw' | '$connect' | '$transaction', unknown>> | null | undefined;
  return (
    (typeof client === 'object' || typeof client === 'function') &&
    client !== null &&
    typeof client.$queryRaw === 'function' &&
    typeof client.$executeRaw === 'function' &&
    (typeof client.$connect !== 'function' || typeof client.$transaction === 'function')
  );
}

/**
 * Refuses anything that is not a Prisma client or transaction client with a
 * coded error instead of the TypeError its first use would throw. Every
 * operation reaches it before any SQL: `withTransaction`, `withStatement` and
 * `canAutocommit` all ask `isTransactionClient` first.
 */
export function assertDb(db: unknown, field = 'db'): asserts db is Db {
  if (isPrismaClient(db)) return;
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

/** pg-pool's Pool, which pg's `Pool` (a `BoundPool`) extends: a pool built from 'pg-pool' directly is one too. */
const PG_POOL_BASE: unknown = Object.getPrototypeOf(pg.Pool.prototype)?.constructor;

/**
 * True for a `pg` Pool: an instance of runledger's copy of pg's Pool, or a pool from a second copy of pg (a
 * host that pins its own pg version beside runledger's, which npm installs twice), recognised by pg-pool's
 * class name on its prototype chain and the queues every pg-pool instance carries. An object that merely has
 * `connect`/`query`/`end` is not one: it would get past here and fail at its first statement.
 */
export function isPgPool(value: unknown): value is pg.Pool {
  if (value instanceof pg.Pool || (typeof PG_POOL_BASE === 'function' && value instanceof PG_POOL_BASE)) return true;
  if (!(value instanceof EventEmitter)) return false;
  let proto: unknown = Object.getPrototypeOf(value);
  while (proto !== null && proto !== EventEmitter.prototype) {
    const candidate = proto as { constructor?: { name?: unknown }; connect?: unknown; query?: unknown; end?: unknown };
    if (candidate.constructor?.name === 'Pool' && [candidate.connect, candidate.query, candidate.end].every((f) => typeof f === 'function')) {
      const pool = value as unknown as Record<string, unknown>;
      return (
        Array.isArray(pool._clients) &&
        Array.isArray(pool._idle) &&
        Array.isArray(pool._pendingQueue) &&
        typeof pool.options === 'object' &&
        typeof pool.Client === 'function'
      );
    }
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}
