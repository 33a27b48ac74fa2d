/**
 * runledger's own Prisma client, for the pool-owning conveniences (CLI, a
 * worker given a connection string, the demo). Applications normally pass
 * their own client instead; they can give it the same prepared-statement
 * naming (`preparedStatementName`) to get the same effect.
 */
import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type RunledgerPrismaClient = PrismaClient;

/**
 * Names each distinct statement (SQL text + parameter types), so `pg` prepares
 * it once per connection and PostgreSQL can reuse its plan: runledger's hot
 * statements are large CTEs whose planning otherwise costs as much as running
 * them. Pass it as `new PrismaPg({ ..., statementNameGenerator: preparedStatementName })`.
 */
export function preparedStatementName(query: { sql: string; argTypes: readonly unknown[] }): string {
  return `rl_${createHash('sha1').update(query.sql).update('\0').update(JSON.stringify(query.argTypes)).digest('hex').slice(0, 24)}`;
}

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
}

export function createPrismaClient(connectionString: string, options: PrismaClientOptions = {}): PrismaClient {
  const pool = new pg.Pool({ connectionString, max: options.max ?? 10, ...(options.connectTimeoutMs ? { connectionTimeoutMillis: options.connectTimeoutMs } : {}) });
  // Every connection keeps an 'error' listener for life. The adapter listens on a connection only after its
  // `await pool.connect()` resumes; a backend terminated just as it finished connecting sends its FATAL in
  // the same read as the end of the handshake, so pg emitted 'error' with no listener in between and the
  // process crashed (found by the chaos run: pg_terminate_backend during an outage). The failure still
  // reaches whoever uses the connection next, as a query error (database.unavailable).
  pool.on('connect', (client) => void client.on('error', ignoreConnectionError));
  return new PrismaClient({
    adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName, disposeExternalPool: true }),
  });
}

function ignoreConnectionError(): void {
  // Reported through the query that meets the broken connection.
}
