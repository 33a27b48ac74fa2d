/**
 * Index entries a timed part wrote, read from the WAL: `pg_stat_user_indexes` counts scans, not inserted
 * entries, so this counts the btree records that carry one (INSERT_LEAF, INSERT_POST, and the SPLIT_L /
 * SPLIT_R that insert the entry which split the page) for the indexes of the system's database, between
 * two flush positions, through `pg_walinspect` (PostgreSQL 15+). Every index of the user schemas counts, the
 * peers' too, so the figure compares across systems as rows written does (bench/tuples.ts).
 *
 * Read around the settled counters (see throughputWorkload): `walStart` before `countersBefore`, `walEnd`
 * after `countersAfter`, so these readings' own commits stay out of the commit count. Null, and the column
 * reads n/a, where the extension cannot be created or the WAL was recycled before it was read.
 */
import { withClient } from './db.js';

/** The flush position before a timed part (creating pg_walinspect in the database first), or null. */
export async function walStart(url: string): Promise<string | null> {
  return withClient(url, async (client) => {
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
      return (await client.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn')).rows[0]!.lsn;
    } catch {
      return null;
    }
  });
}

/** Btree entries written to the database's user indexes since `start` (its commits are flushed: synchronous_commit on). */
export async function indexEntriesSince(url: string, start: string | null): Promise<number | null> {
  if (start === null) return null;
  return withClient(url, async (client) => {
    try {
      const { rows } = await client.query<{ entries: string }>(
        `WITH db AS (SELECT oid::text AS oid FROM pg_database WHERE datname = current_database()),
              idx AS (SELECT c.relfilenode::text AS node FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE c.relkind = 'i' AND c.relfilenode <> 0
                         AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%')
         SELECT count(*) AS entries
           FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn()) w
          WHERE w.resource_manager = 'Btree'
            AND split_part(w.record_type, ' ', 1) IN ('INSERT_LEAF', 'INSERT_POST', 'SPLIT_L', 'SPLIT_R')
            AND substring(w.block_ref FROM 'rel [0-9]+/([0-9]+)/') = (SELECT oid FROM db)
            AND substring(w.block_ref FROM 'rel [0-9]+/[0-9]+/([0-9]+)') IN (SELECT node FROM idx)`,
        [start],
      );
      return Number(rows[0]!.entries);
    } catch (error) {
      console.error(`[bench] index entries not read: ${(error as Error).message}`);
      return null;
    }
  });
}
