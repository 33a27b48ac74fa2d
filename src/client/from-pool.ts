/**
 * `poolDb(pool)`: the public way to run any runledger operation on a `pg`
 * Pool instead of a Prisma client, without Prisma's query layer (the client
 * is src/client/pool-db.ts; createWorker's `db: pool` uses the same one).
 *
 * Prisma's raw-query path costs every statement its own client time: it
 * re-serializes the parameters as JSON and parses them back, and runs the
 * call through its query engine and tracing. For one `enqueueJob` that was
 * about 0.4 ms of 1.0 on a local PostgreSQL 15 (0.6 ms through the pool); a
 * bulk enqueue of 1,000 spent 6-9 us of Node CPU a job instead of 12-17, though
 * its wall time is the server's (bench/README.md, "Enqueue without Prisma's
 * query layer").
 */
import type pg from 'pg';
import { ValidationError } from '../errors/runledger-error.js';
import { CLIENT_INVALID, isPgPool, type PrismaClientLike } from './types.js';
import { PoolDb } from './pool-db.js';

export interface PoolDbOptions {
  /**
   * Name each distinct statement so PostgreSQL keeps its plan per connection (default true). False behind a
   * transaction-mode pooler without prepared-statement support (PgBouncer < 1.21).
   */
  preparedStatements?: boolean;
}

// One client per pool and naming choice: the client adds an 'error' listener to the pool (and one to each
// connection it opens), so a client per call would pile listeners up on a pool that lives for the process.
const clients = new WeakMap<pg.Pool, Map<boolean, PoolDb>>();

/**
 * A runledger client over a `pg` Pool: pass it wherever an operation takes a
 * Prisma client (`enqueueJob(db, ...)`, `getJob(db, ...)`, `createWorker({
 * db })`, `createDashboard({ db })`). Its statements go to pg directly; its
 * `$transaction(fn, { isolationLevel, maxWait, timeout })` behaves as
 * Prisma's, and runledger joins it as it joins a Prisma transaction client.
 * The pool stays yours: runledger never ends it. Calling it again with the
 * same pool returns the same client.
 *
 * Use the pool your `PrismaPg` adapter runs on, so both share its
 * connections. A call that must commit with your own Prisma writes still
 * takes your Prisma transaction client (`prisma.$transaction(async (tx) =>
 * enqueueJob(tx, ...))`): a client over the pool cannot join it.
 *
 * @example
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
 * const db = poolDb(pool);
 * await enqueueJob(db, { jobType: 'email.send', payload: { to } });
 */
export function poolDb(pool: pg.Pool, options: PoolDbOptions = {}): PrismaClientLike {
  if (!isPgPool(pool)) {
    throw new ValidationError(CLIENT_INVALID, 'pool', 'Invalid pool: must be a pg Pool (new pg.Pool(...)), not a Prisma client or a single pg.Client.');
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(CLIENT_INVALID, 'options', 'Invalid options: must be an object.');
  }
  const unknown = Object.keys(options).filter((key) => key !== 'preparedStatements');
  if (unknown.length > 0) throw new ValidationError(CLIENT_INVALID, `options.${unknown[0]}`, `Invalid options.${unknown[0]}: not an option of poolDb.`);
  if (options.preparedStatements !== undefined && typeof options.preparedStatements !== 'boolean') {
    throw new ValidationError(CLIENT_INVALID, 'options.preparedStatements', 'Invalid options.preparedStatements: must be a boolean.');
  }
  const named = options.preparedStatements ?? true;
  let byNaming = clients.get(pool);
  if (byNaming === undefined) {
    byNaming = new Map();
    clients.set(pool, byNaming);
  }
  const existing = byNaming.get(named);
  if (existing !== undefined && !existing.disconnected) return existing;
  const client = new PoolDb(pool, { preparedStatements: named });
  byNaming.set(named, client);
  return client;
}
