/**
 * A database-level outage on the real server, as operators and restores make
 * one: `ALTER DATABASE <db> ALLOW_CONNECTIONS false` (every new session is
 * refused with SQLSTATE 55000 "database ... is not currently accepting
 * connections", superusers included) and, optionally, every session on it
 * terminated (57P01 to whatever was running). Done from a session on the
 * server's maintenance database, which the outage does not touch.
 */
import pg from 'pg';
import { inject } from 'vitest';

export interface DatabaseOutage {
  /** Lets sessions in again (idempotent). */
  end(): Promise<void>;
}

export async function refuseConnections(database: string, options: { terminate?: boolean } = {}): Promise<DatabaseOutage> {
  if (!/^[a-z_][a-z0-9_]*$/.test(database)) throw new Error(`unsafe database name: ${database}`);
  const admin = new pg.Client({ connectionString: inject('runledgerServerUrl') });
  await admin.connect();
  let ended = false;
  try {
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    if (options.terminate)
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  } catch (error) {
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`).catch(() => undefined);
    await admin.end();
    throw error;
  }
  return {
    async end() {
      if (ended) return;
      ended = true;
      try {
        await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
      } finally {
        await admin.end();
      }
    },
  };
}
