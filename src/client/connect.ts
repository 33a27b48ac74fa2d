/**
 * runledger's own Prisma client, for the pool-owning conveniences (CLI, a
 * worker given a connection string, the demo). Applications normally pass
 * their own client instead; they can give it the same prepared-statement
 * naming (`preparedStatementName`) to get the same effect.
 *
 * Behind a transaction-mode pooler without protocol-level prepared statements
 * (PgBouncer before 1.21, and poolers like it) a named statement lives on the
 * backend that prepared it, not on the next transaction's: statements are then
 * sent unnamed (`preparedStatements: false`, or `pgbouncer=true` in the
 * connection string, Prisma's own spelling of it, removed before pg sees it).
 */
import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';
import { listenForLife, PoolDb, pinSessionOnConnect } from './pool-db.js';

export type RunledgerPrismaClient = PrismaClient;

/**
 * Names each distinct statement (SQL text + parameter types), so `pg` prepares
 * it once per connection and PostgreSQL can reuse its plan: runledger's hot
 * statements are large CTEs whose planning otherwise costs as much as running
 * them. Pass it as `new PrismaPg({ ..., statementNameGenerator: preparedStatementName })`.
 */
export function preparedStatementName(query: { sql: string; argTypes: readonly unknown[] }): string {
  const { sql } = query;
  const argTypes = JSON.stringify(query.argTypes);
  // A short fingerprint finds the candidates; the full text and types are compared before a name is reused.
  const fingerprint = `${sql.length}:${sql.slice(0, 48)}:${sql.slice(-48)}:${argTypes}`;
  let candidates = namesByFingerprint.get(fingerprint);
  if (candidates !== undefined) for (const known of candidates) if (known.sql === sql) return known.name;
  const name = `rl_${createHash('sha1').update(sql).update('\0').update(argTypes).digest('hex').slice(0, 24)}`;
  // Bounded: a host may name all its own Prisma queries with it, and those shapes are open-ended.
  if (namesByFingerprint.size >= MAX_REMEMBERED_NAMES || (candidates?.length ?? 0) >= MAX_TEXTS_PER_FINGERPRINT) {
    namesByFingerprint.clear();
    candidates = undefined;
  }
  if (candidates === undefined) {
    candidates = [];
    namesByFingerprint.set(fingerprint, candidates);
  }
  candidates.push({ sql, name });
  return name;
}

/**
 * Names already computed, found by a fingerprint of the text (length, both ends, parameter types) and
 * confirmed by comparing the whole text: SHA-1 of a workflow start's ~4.5 KB cost ~6 us on every call, and
 * so did a map keyed by the text itself (the string hash walks every character of a freshly built string).
 */
const namesByFingerprint = new Map<string, { sql: string; name: string }[]>();
const MAX_REMEMBERED_NAMES = 2_000;
const MAX_TEXTS_PER_FINGERPRINT = 16;

export interface PrismaClientOptions {
  /** Pooled connections (default 10). */
  max?: number;
  /**
   * Gives up on a connection attempt after this many ms (pg's
   * `connectionTimeoutMillis`: the TCP connect and PostgreSQL's handshake,
   * and also a wait for a free pooled connection). Default: none, pg waits
   * for ever, which a server that accepts TCP and never answers turns into a
   * hang. The CLI sets it (--connect-timeout).
   */
  connectTimeoutMs?: number;
  /**
   * Name each statement so the server reuses its plan (default true). False
   * behind a transaction-mode pooler without prepared-statement support
   * (PgBouncer < 1.21): each statement is then parsed where it runs. A
   * connection string with `pgbouncer=true` means false.
   */
  preparedStatements?: boolean;
}

/** The connection string without `pgbouncer=true`, and whether it asked for unnamed statements. */
export function poolerConnectionString(connectionString: string): { connectionString: string; pooled: boolean } {
  if (!/[?&]pgbouncer=/i.test(connectionString)) return { connectionString, pooled: false };
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return { connectionString, pooled: false }; // not a URL: pg reports it when it connects
  }
  const pooled = url.searchParams.get('pgbouncer')?.toLowerCase() === 'true';
  url.searchParams.delete('pgbouncer');
  return { connectionString: url.toString(), pooled };
}

export function createPrismaClient(given: string, options: PrismaClientOptions = {}): PrismaClient {
  const { pool, named } = createPool(given, options);
  return new PrismaClient({
    adapter: new PrismaPg(pool, { ...(named ? { statementNameGenerator: preparedStatementName } : {}), disposeExternalPool: true }),
  });
}

/**
 * runledger's own client over a pg Pool without Prisma's query layer (src/client/pool-db.ts): what a worker
 * given a connection string uses. `$disconnect()` ends the pool.
 */
export function createPoolDb(given: string, options: PrismaClientOptions = {}): PoolDb {
  const { pool, named } = createPool(given, options);
  return new PoolDb(pool, { preparedStatements: named, ownsPool: true });
}

/** The pool both clients above run on, and whether its statements may be named (not behind `pgbouncer=true`). */
function createPool(given: string, options: PrismaClientOptions): { pool: pg.Pool; named: boolean } {
  const { connectionString, pooled } = poolerConnectionString(given);
  const named = (options.preparedStatements ?? true) && !pooled;
  const config: pg.PoolConfig = {
    connectionString,
    max: options.max ?? 10,
    ...(options.connectTimeoutMs ? { connectionTimeoutMillis: options.connectTimeoutMs } : {}),
    // A runledger-owned pool: its sessions are pinned before first use, for the Prisma client built on it as well.
    onConnect: pinSessionOnConnect,
  };
  const pool = new pg.Pool(config);
  // Every connection keeps an 'error' listener for life. The adapter listens on a connection only after its
  // `await pool.connect()` resumes; a backend terminated just as it finished connecting sends its FATAL in
  // the same read as the end of the handshake, so pg emitted 'error' with no listener in between and the
  // process crashed (found by the chaos run: pg_terminate_backend during an outage). The failure still
  // reaches whoever uses the connection next, as a query error (database.unavailable).
  pool.on('connect', listenForLife);
  return { pool, named };
}
