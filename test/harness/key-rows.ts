/**
 * Flow-control rows in tests: a rate key's bucket read and aged (the clock moved by writing `refilled_at`
 * back, never slept), and the barrier helper for claims queued on a key row's lock.
 */
import type pg from 'pg';
import type { Db } from '../../src/index.js';

export interface BucketRow {
  max_starts: number;
  period_ms: number;
  burst: number;
  tokens: number;
  set_by: string;
}

/** A rate key's bucket row, or undefined when no job or operator named the key. */
export async function bucket(db: Db, key: string): Promise<BucketRow | undefined> {
  const [row] = (await db.$queryRaw`
    SELECT max_starts, period_ms, burst, tokens, set_by FROM runledger.rate_limits WHERE key = ${key}`) as BucketRow[];
  return row;
}

/** The bucket as if `ms` more had passed since its last refill. */
export async function ageBucket(db: Db, key: string, ms: number): Promise<void> {
  await db.$executeRaw`
    UPDATE runledger.rate_limits SET refilled_at = refilled_at - make_interval(secs => ${ms / 1000}::float8) WHERE key = ${key}`;
}

/**
 * Polls pg_stat_activity (not a sleep of a guessed length) until `n` sessions of this database wait for a lock:
 * the first on the holder's transaction, the others queued behind it on the row.
 */
export async function waitForLockWaiters(holder: pg.Client, n: number): Promise<void> {
  for (let i = 0; i < 1_000; i += 1) {
    // The holder is inside its transaction, whose statistics snapshot would otherwise stay as first read.
    await holder.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await holder.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND cardinality(pg_blocking_pids(pid)) > 0`,
    );
    if (rows[0]!.n >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`fewer than ${n} sessions waited on the key row`);
}
