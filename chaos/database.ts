/**
 * The chaos run's database: a fresh database on the server (embedded
 * PostgreSQL unless DATABASE_URL names one), owned by a fresh login role
 * that is not a superuser, so `ALTER DATABASE ... CONNECTION LIMIT 0` shuts
 * the workers and clients out while the controller (superuser) stays in.
 * Both are dropped at the end.
 */
import pg from 'pg';
import { startPostgresServer, type PostgresServer } from '../src/testing/index.js';
import { PROOF_DDL } from '../test/harness/function-proof.js';
import { EXECUTIONS_DDL } from './handlers.js';
import { KEYED_DDL } from './key-ledger.js';
import { migrateDatabase } from './api.js';

export interface ChaosDatabase {
  server: PostgresServer;
  /** Superuser, on the chaos database: observation and faults. */
  adminUrl: string;
  /** The chaos role, on the chaos database: workers and API calls. */
  url: string;
  name: string;
  role: string;
  /** False when the server's user cannot create roles: outages are then skipped (a superuser ignores connection limits). */
  canRefuseConnections: boolean;
  drop(): Promise<void>;
}

export async function createChaosDatabase(): Promise<ChaosDatabase> {
  const server = await startPostgresServer({
    url: process.env.DATABASE_URL,
    containers: false,
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
  });
  const suffix = `${Date.now().toString(36)}_${process.pid}`;
  const name = `runledger_chaos_${suffix}`;
  const role = `runledger_chaos_${suffix}`;
  const password = 'chaos';
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  let canRefuseConnections = true;
  try {
    try {
      await admin.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}' NOSUPERUSER`);
    } catch {
      canRefuseConnections = false;
    }
    await admin.query(canRefuseConnections ? `CREATE DATABASE "${name}" OWNER "${role}"` : `CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const adminUrl = withDatabase(server.url, name);
  const url = canRefuseConnections ? withRole(adminUrl, role, password) : adminUrl;
  await migrateDatabase(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(EXECUTIONS_DDL);
  await client.query(PROOF_DDL);
  await client.query(KEYED_DDL);
  await client.end();

  return {
    server,
    adminUrl,
    url,
    name,
    role,
    canRefuseConnections,
    async drop() {
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      try {
        await c.query(`ALTER DATABASE "${name}" CONNECTION LIMIT -1`).catch(() => undefined);
        await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
        await c.query(`DROP DATABASE IF EXISTS "${name}"`);
        if (canRefuseConnections) await c.query(`DROP ROLE IF EXISTS "${role}"`);
      } finally {
        await c.end();
      }
      await server.stop();
    },
  };
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

function withRole(url: string, user: string, password: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = password;
  return u.toString();
}
