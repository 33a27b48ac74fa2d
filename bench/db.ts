/** Plain pg helpers the benchmark needs around the systems: databases, counters, one-off queries. */
import pg from 'pg';

export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe identifier: ${name}`);
  return `"${name}"`;
}

export async function withClient<R>(url: string, fn: (client: pg.Client) => Promise<R>): Promise<R> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function createDatabase(admin: pg.Client, name: string): Promise<void> {
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
}

export async function dropDatabase(admin: pg.Client, name: string): Promise<void> {
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
}

export async function countRows(url: string, sql: string, params: unknown[] = []): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ n: string }>(sql, params);
    return Number(rows[0]?.n ?? 0);
  });
}

/**
 * Waits until no client backend is connected to `database`. A pool's end()
 * resolves once it has sent its connections' Terminate messages, before the
 * backends have exited; dropping the database then would kill them mid-exit.
 */
export async function waitForNoConnections(admin: pg.Client, database: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`, [
      database,
    ]);
    if (Number(rows[0]?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`connections to ${database} are still open; a system did not close its pool`);
    await sleep(20);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads `pg_stat_database.xact_commit` for `database` once it has settled.
 *
 * Backends publish their counters lazily (at most once a second, and an idle
 * one may hold them for up to 10 s), but always when they exit. So: wait until
 * no client backend is connected to the database, then poll until the value
 * has not changed for `quietMs`. The reading connection is on the maintenance
 * database, so it adds nothing to the counter it reads.
 */
export async function settledCommits(admin: pg.Client, database: string, quietMs = 500): Promise<number> {
  const deadline = Date.now() + 15_000;
  await waitForNoConnections(admin, database);
  const read = async (): Promise<number> => {
    const { rows } = await admin.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1', [database]);
    return Number(rows[0]?.n ?? 0);
  };
  let value = await read();
  let stableSince = Date.now();
  while (Date.now() - stableSince < quietMs) {
    if (Date.now() > deadline) throw new Error(`xact_commit of ${database} did not settle`);
    await sleep(100);
    const next = await read();
    if (next !== value) {
      value = next;
      stableSince = Date.now();
    }
  }
  return value;
}
