/**
 * `useTestDatabase()` gives a test file its own database, cloned from the
 * migrated template, plus a Prisma client on it. After the file it checks
 * that nothing the file started (worker, listener, open transaction) still
 * holds a connection, then drops the database.
 *
 * In the pooler project (vitest.pooler.config.ts) the Prisma clients
 * (`prisma`, `newClient`) go through the harness's transaction-mode PgBouncer
 * with unnamed statements, as a host behind PgBouncer < 1.21 runs them; `url`
 * and `newPool` stay direct, as a host's LISTEN, migrations and the tests'
 * own scaffolding (barrier transactions, LISTEN probes) would.
 */
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { createPrismaClient } from '../../src/client/connect.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { cloneDatabase, databaseUrl, dropDatabase } from '../../src/testing/test-database.js';
import { pooledBackends } from './pooler.js';

export interface TestDatabase {
  readonly name: string;
  /** Direct to the server (LISTEN, migrations, raw pools). */
  readonly url: string;
  /** This database through the harness's PgBouncer (transaction mode); undefined when the machine has none. */
  readonly poolerUrl: string | undefined;
  /** True in the pooler project: `prisma` and `newClient()` go through `poolerUrl`. */
  readonly viaPooler: boolean;
  readonly prisma: PrismaClient;
  /** A new Prisma client on this database (closed automatically after the file). */
  newClient(options?: { max?: number }): PrismaClient;
  /** A plain pg pool on this database (closed automatically after the file). */
  newPool(options?: { max?: number }): pg.Pool;
}

export function useTestDatabase(): TestDatabase {
  const serverUrl = inject('runledgerServerUrl');
  const template = inject('runledgerTemplate');
  const poolerServerUrl = inject('runledgerPoolerUrl') || undefined;
  const poolerAdminUrl = inject('runledgerPoolerAdminUrl') || undefined;
  const viaPooler = inject('runledgerViaPooler');
  let name = '';
  let url = '';
  let prisma: PrismaClient | undefined;
  const clients: PrismaClient[] = [];
  const pools: pg.Pool[] = [];

  const newClient = (options: { max?: number } = {}): PrismaClient => {
    // runledger's own client factory: prepared statements, as the worker and CLI use them.
    // (Tests with a host application's client cover the unprepared path; so does the pooler project.)
    const client = viaPooler
      ? createPrismaClient(databaseUrl(poolerServerUrl!, name), { max: options.max ?? 10, preparedStatements: false })
      : createPrismaClient(url, { max: options.max ?? 10 });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    name = await cloneDatabase(serverUrl, template);
    url = databaseUrl(serverUrl, name);
    prisma = newClient();
  });

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.$disconnect()));
    await Promise.all(pools.map((pool) => pool.end()));
    // Through the pooler a leak is a client still connected to it; the server connections it keeps are its own.
    const pooled = poolerAdminUrl ? await pooledBackends(poolerAdminUrl, name) : { clients: [], serverPids: [] };
    const leaked = [...pooled.clients, ...(await connectionsStillOpen(serverUrl, name, pooled.serverPids))];
    await dropDatabase(serverUrl, name);
    if (leaked.length > 0) {
      throw new Error(`test file left ${leaked.length} connection(s) open on its database: ${leaked.join('; ')}`);
    }
  });

  return {
    get name() {
      return name;
    },
    get url() {
      return url;
    },
    get poolerUrl() {
      return poolerServerUrl && name ? databaseUrl(poolerServerUrl, name) : undefined;
    },
    viaPooler,
    get prisma() {
      if (!prisma) throw new Error('useTestDatabase(): the database is ready only inside tests and hooks');
      return prisma;
    },
    newClient,
    newPool(options = {}) {
      const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 });
      pools.push(pool);
      return pool;
    },
  };
}

/** Backends still connected to `database`, waiting briefly for closing sockets to be noticed by the server. */
async function connectionsStillOpen(serverUrl: string, database: string, poolerPids: number[]): Promise<string[]> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const deadline = Date.now() + 3_000;
    for (;;) {
      const { rows } = await admin.query<{ state: string | null; query: string }>(
        // Client backends only: an autovacuum worker (on in the embedded server) is the server's, not a leak.
        `SELECT state, left(query, 80) AS query FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> ALL($2::int[]) AND backend_type = 'client backend'`,
        [database, poolerPids],
      );
      if (rows.length === 0 || Date.now() > deadline) return rows.map((row) => `${row.state}: ${row.query}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await admin.end();
  }
}
