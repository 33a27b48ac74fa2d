/**
 * pg_stat_statements helpers: what the server itself ran during a timed part
 * (its statements include the foreign-key checks PostgreSQL runs per row,
 * which no client counter sees). Only when the server preloads the extension
 * (BENCH_PG_STAT_STATEMENTS=1 for the embedded server); BENCH_DEBUG_PGSS=1
 * also prints the statements that took the most server time.
 */
import { withClient } from './db.js';

/**
 * pg_stat_statements, when the server preloads it (BENCH_PG_STAT_STATEMENTS=1
 * for the embedded server): reset before the timed call, summed after. Its
 * own queries are excluded; the harness's `SELECT 1` is subtracted by the caller.
 */
export async function resetServerStatements(url: string): Promise<boolean> {
  return withClient(url, async (client) => {
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await client.query('SELECT pg_stat_statements_reset()');
      return true;
    } catch {
      return false; // not in shared_preload_libraries: the client-side count stands alone
    }
  });
}

/**
 * Total statements, and how many of them are foreign-key checks: PostgreSQL
 * runs a referential-integrity query per inserted or updated referencing row
 * (`SELECT 1 FROM ONLY <table> x WHERE ... FOR KEY SHARE OF x`), and
 * pg_stat_statements lists them as top-level statements. They are the
 * server-side work that grows with W while the client's statements do not.
 */
export async function serverStatementCount(url: string): Promise<{ total: number; fkChecks: number }> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ n: string; fk: string }>(
      `SELECT coalesce(sum(calls), 0) AS n,
              coalesce(sum(calls) FILTER (WHERE query ~ '^SELECT \\S+ FROM ONLY .* FOR KEY SHARE OF x$'), 0) AS fk
         FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT ILIKE '%pg_stat_statements%'`,
    );
    if (process.env.BENCH_DEBUG_PGSS) {
      const top = await client.query<{ calls: string; ms: string; rows: string; toplevel: boolean; query: string }>(
        `SELECT calls, round(total_exec_time::numeric, 1) || ' ms + plan ' || round(total_plan_time::numeric, 1) || ' ms (plans ' || plans AS ms, rows, toplevel, left(regexp_replace(query, '\\s+', ' ', 'g'), 200) AS query FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT 15`,
      );
      for (const row of top.rows) console.log(`[pgss] ${row.calls} calls, ${row.ms} ms, ${row.rows} rows, ${row.toplevel ? 'top' : 'nested'}: ${row.query}`);
    }
    return { total: Number(rows[0]?.n ?? 0), fkChecks: Number(rows[0]?.fk ?? 0) };
  });
}
