/**
 * Rows written by a timed part: `pg_stat_user_tables` deltas (n_tup_ins +
 * n_tup_upd + n_tup_del, and n_tup_hot_upd, the updates that wrote no index
 * entry) of every user table in the system's database.
 *
 * Every run has a database of its own (a clone of the system's template), so
 * its user tables are the system's tables (schemas runledger, pgboss,
 * graphile_worker) plus, for the peers' fan-out/fan-in, the harness-created
 * counter row table their handlers update (bench_fan_counter, the peers'
 * stand-in for runledger's dependency counters): summing every user table
 * counts exactly what the system wrote to do the work. TOAST tables are not
 * user tables and are not counted.
 *
 * The counters are published asynchronously: a backend keeps its table
 * counters in local memory and flushes them at most once a second while busy
 * (up to 10 s when idle), and always when it exits. pg_stat_force_next_flush()
 * (PostgreSQL 15+) would have to run in every session that wrote, and the
 * peers' sessions are inside their libraries. So the reading waits instead:
 * every system method closes its connections before it returns, the runner
 * waits until no client backend is connected to the database and
 * pg_stat_database.xact_commit (flushed in the same pass as the table
 * counters) has been still for a quiet period (settledCommits), and only
 * then opens a fresh connection to read pg_stat_user_tables (a backend's
 * view of the counters is fetched on first access, so a new session sees
 * everything flushed before it). The reading connection writes no rows; its
 * own commits are kept out of the commit count by the order of the readings
 * (countersBefore / countersAfter).
 */
import type pg from 'pg';
import { settledCommits, withClient } from './db.js';

export interface TupleCounts {
  inserted: number;
  updated: number;
  deleted: number;
  /** Of `updated`, the HOT ones (no index entry written). */
  hotUpdated: number;
}

/** Per table ("schema.table"). */
export type TupleSnapshot = Record<string, TupleCounts>;

export const ZERO_TUPLES: TupleCounts = { inserted: 0, updated: 0, deleted: 0, hotUpdated: 0 };

export async function readTuples(url: string): Promise<TupleSnapshot> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ name: string; ins: string; upd: string; del: string; hot: string }>(
      `SELECT schemaname || '.' || relname AS name, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del, n_tup_hot_upd AS hot
         FROM pg_stat_user_tables`,
    );
    return Object.fromEntries(
      rows.map((r) => [r.name, { inserted: Number(r.ins), updated: Number(r.upd), deleted: Number(r.del), hotUpdated: Number(r.hot) }]),
    );
  });
}

/** after - before per table, keeping only the tables that changed (tables created in between count from 0). */
export function tupleDelta(before: TupleSnapshot, after: TupleSnapshot): TupleSnapshot {
  const delta: TupleSnapshot = {};
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? ZERO_TUPLES;
    const d = { inserted: a.inserted - b.inserted, updated: a.updated - b.updated, deleted: a.deleted - b.deleted, hotUpdated: a.hotUpdated - b.hotUpdated };
    if (d.inserted !== 0 || d.updated !== 0 || d.deleted !== 0 || d.hotUpdated !== 0) delta[name] = d;
  }
  return delta;
}

export function sumTuples(snapshot: TupleSnapshot): TupleCounts {
  const total = { ...ZERO_TUPLES };
  for (const t of Object.values(snapshot)) {
    total.inserted += t.inserted;
    total.updated += t.updated;
    total.deleted += t.deleted;
    total.hotUpdated += t.hotUpdated;
  }
  return total;
}

/** Inserted + updated + deleted: the rows (heap tuples) written. */
export const rowsWritten = (t: TupleCounts): number => t.inserted + t.updated + t.deleted;

export interface Counters {
  commits: number;
  tuples: TupleSnapshot;
}

/**
 * Before a timed part: wait until every writer has exited and published its
 * counters, read the tuples on a fresh connection, then read the settled
 * commit counter again, which now includes the reading connection's own
 * commits, so they fall before the timed part instead of into it.
 */
export async function countersBefore(admin: pg.Client, url: string, database: string, quietMs?: number): Promise<Counters> {
  await settledCommits(admin, database, quietMs);
  const tuples = await readTuples(url);
  return { tuples, commits: await settledCommits(admin, database, quietMs) };
}

/** After a timed part: the settled commit counter first (the reading connection's commits come after it), then the tuples. */
export async function countersAfter(admin: pg.Client, url: string, database: string, quietMs?: number): Promise<Counters> {
  const commits = await settledCommits(admin, database, quietMs);
  return { commits, tuples: await readTuples(url) };
}
