/**
 * `--pooler`: a transaction-mode PgBouncer in front of the chaos server
 * (src/testing/pgbouncer.ts), logging in as the chaos role, so the role's
 * outages and terminations reach its pooled server connections.
 */
import pg from 'pg';
import { startPgBouncer, type PgBouncer } from '../src/testing/pgbouncer.js';
import type { ChaosDatabase } from './database.js';

export interface ChaosPooler {
  /** The chaos database as the chaos role, through the pooler, statements unnamed. */
  url: string;
  adminUrl: string;
  version: string;
  stop(): Promise<void>;
}

export async function startChaosPooler(database: ChaosDatabase): Promise<ChaosPooler> {
  const role = new URL(database.url);
  const bouncer: PgBouncer = await startPgBouncer({
    serverUrl: database.server.url,
    users: [{ user: decodeURIComponent(role.username), password: decodeURIComponent(role.password) }],
  });
  const url = new URL(database.url);
  const through = new URL(bouncer.url);
  url.hostname = through.hostname;
  url.port = through.port;
  url.searchParams.set('pgbouncer', 'true');
  return { url: url.toString(), adminUrl: bouncer.adminUrl, version: bouncer.version, stop: () => bouncer.stop() };
}

/** The pooler's own totals (SHOW STATS) for the chaos run's summary: transactions and queries it routed. */
export async function pooledTotals(adminUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ database: string; total_xact_count: string; total_query_count: string }>('SHOW STATS');
    const chaos = rows.filter((row) => row.database.startsWith('runledger_chaos_'));
    const sum = (key: 'total_xact_count' | 'total_query_count') => chaos.reduce((n, row) => n + Number(row[key]), 0);
    return `${sum('total_xact_count')} transactions, ${sum('total_query_count')} statements through PgBouncer`;
  } finally {
    await client.end();
  }
}
