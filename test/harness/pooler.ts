/**
 * The harness's PgBouncer (transaction mode, see src/testing/pgbouncer.ts)
 * as tests see it: whether there is one (a file without it says why and
 * skips, visibly), and its admin console's view of one database.
 */
import pg from 'pg';
import { inject } from 'vitest';

/** True when the harness runs a PgBouncer; otherwise prints, once per file, why `what` is skipped. */
export function poolerAvailable(what: string): boolean {
  const found = inject('runledgerPoolerUrl') !== '';
  if (!found) console.warn(`${what} SKIPPED: ${inject('runledgerPoolerMissing')}`);
  return found;
}

/** What the pooler holds for `database`: its client connections (described) and the backend pids of its server connections. */
export async function pooledBackends(adminUrl: string, database: string): Promise<{ clients: string[]; serverPids: number[] }> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    // The console speaks the simple query protocol only: no parameters.
    const clients = (await admin.query<{ database: string; state: string; application_name?: string }>('SHOW CLIENTS')).rows
      .filter((row) => row.database === database)
      .map((row) => `pgbouncer client ${row.state}${row.application_name ? ` (${row.application_name})` : ''}`);
    const serverPids = (await admin.query<{ database: string; remote_pid: string }>('SHOW SERVERS')).rows
      .filter((row) => row.database === database)
      .map((row) => Number(row.remote_pid));
    return { clients, serverPids };
  } finally {
    await admin.end();
  }
}
