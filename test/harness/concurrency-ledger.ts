/**
 * Concurrency keys' leases reconstructed from the ledger (issue 35), for the chaos run (chaos/key-ledger.ts)
 * and the concurrency_keys bench (bench/workloads/concurrency-keys.ts): each attempt of a keyed job as an
 * interval on job_events' sequence, and the most intervals of one key that hold at once.
 *
 * Why the sequence and not timestamps. A claim's attempt number (attempt_seq) is drawn after it locked the
 * key's row (src/queue/statements/concurrency-slots.ts: the claim's `numbers` reads `admitted`, which joins the
 * locked `gate`), and a lease's end is a stored event drawn inside the statement that deletes its lease row and
 * frees its slot under that same lock (SUCCEEDED: the job row's attempt_closed_seq). So if N + 1 attempts'
 * [start, end] share a point, the last of their claims saw the other N committed and none of their ends: a
 * real violation, never an artefact of the reconstruction. Timestamps would not do: a claim's
 * attempt_started_at is its transaction's start, which can precede the completion it waited for on the key's
 * row, so back-to-back leases would read as overlapping.
 *
 * A canceled lease holds its slot until the reaper deletes it, once run out; no ledger row records that. With
 * `runOutSamples` (a table of (at, seq): job_events' sequence read with the clock, chaos/key-ledger.ts), such
 * an interval ends no earlier than the last value read at or before the lease's granted expiry (attempt
 * leased_until; a heartbeat may have pushed the expiry later: the bound stays on the safe side). Without it, it
 * ends at its CANCELED event.
 */
import type pg from 'pg';

export interface KeyInterval {
  key: string;
  /** What the interval stands for (an attempt, a handler run), named in a violation. */
  id: string;
  start: bigint;
  /** null: still open (holds to the end). */
  end: bigint | null;
}

export interface KeyOverlap {
  key: string;
  /** The most intervals holding the key at one point. */
  max: number;
  /** A point where `max` hold, and the intervals holding there. */
  at: bigint;
  holders: string[];
}

/**
 * Per key, its highest overlap. Intervals are closed: one that starts at the point where another ends overlaps
 * it. Sequence points are all distinct, so an equal point only comes from the run-out bound, where it does mean
 * both held the key. Keys with no interval are absent.
 */
export function maxOverlapByKey(intervals: readonly KeyInterval[]): Map<string, KeyOverlap> {
  const byKey = new Map<string, KeyInterval[]>();
  for (const interval of intervals) {
    if (interval.end !== null && interval.end < interval.start)
      throw new Error(`interval ${interval.id} ends (${interval.end}) before it starts (${interval.start})`);
    const list = byKey.get(interval.key) ?? [];
    list.push(interval);
    byKey.set(interval.key, list);
  }
  const result = new Map<string, KeyOverlap>();
  for (const [key, list] of byKey) result.set(key, sweep(key, list));
  return result;
}

function sweep(key: string, list: readonly KeyInterval[]): KeyOverlap {
  // Starts before ends at one point (closed intervals); an open interval's end sorts after every point.
  const points: { at: bigint; open: boolean; interval: KeyInterval }[] = [];
  for (const interval of list) {
    points.push({ at: interval.start, open: true, interval });
    if (interval.end !== null) points.push({ at: interval.end, open: false, interval });
  }
  points.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.open === b.open ? 0 : a.open ? -1 : 1));
  const holding = new Set<KeyInterval>();
  let best: KeyOverlap = { key, max: 0, at: 0n, holders: [] };
  for (const point of points) {
    if (point.open) {
      holding.add(point.interval);
      if (holding.size > best.max) best = { key, max: holding.size, at: point.at, holders: [...holding].map((i) => i.id) };
    } else holding.delete(point.interval);
  }
  return best;
}

/** Stored events that end an attempt (the lease row deleted in the same statement, but CANCELED's). */
export const END_EVENTS = `('RETRY_SCHEDULED', 'DEAD_LETTERED', 'RELEASED', 'LEASE_EXPIRED', 'CANCELED', 'REQUEUED')`;

export interface LedgerAttempt {
  key: string;
  job_id: string;
  run_number: number;
  attempt: number;
  /** job_attempts' outcome, or SUCCEEDED / OPEN for the attempt on the job row. */
  outcome: string;
  start_seq: string;
  end_seq: string | null;
}

/**
 * Every attempt of a keyed job as an interval: archived ones (job_attempts) end at their first end event (a
 * canceled one no earlier than its run-out bound); the job row's SUCCEEDED one at its closed_seq; one still
 * open holds to the end. `missing`: archived attempts whose end event was not found.
 */
export async function ledgerLeaseIntervals(
  db: pg.Pool | pg.Client,
  options: { runOutSamples?: string } = {},
): Promise<{ intervals: KeyInterval[]; missing: LedgerAttempt[] }> {
  const runOut = options.runOutSamples
    ? `CASE WHEN a.outcome = 'CANCELED' AND a.leased_until IS NOT NULL THEN
         (SELECT max(s.seq) FROM ${options.runOutSamples} s WHERE s.at <= a.leased_until) END`
    : 'NULL::bigint';
  const { rows } = await db.query<LedgerAttempt>(`
    WITH keyed AS (SELECT id, concurrency_key FROM runledger.job_queue WHERE concurrency_key IS NOT NULL)
    SELECT k.concurrency_key AS key, a.job_id, a.run_number, a.attempt, a.outcome::text AS outcome, a.seq::text AS start_seq,
           GREATEST((SELECT min(e.seq) FROM runledger.job_events e
                      WHERE e.job_id = a.job_id AND e.seq > a.seq AND e.event_type IN ${END_EVENTS}),
                    ${runOut})::text AS end_seq
      FROM runledger.job_attempts a JOIN keyed k ON k.id = a.job_id
    UNION ALL
    SELECT j.concurrency_key, j.id, j.run_number, j.attempt, CASE WHEN j.status = 'SUCCEEDED' THEN 'SUCCEEDED' ELSE 'OPEN' END,
           j.attempt_seq::text, j.attempt_closed_seq::text
      FROM runledger.job_queue j
     WHERE j.concurrency_key IS NOT NULL AND j.attempt_seq IS NOT NULL`);
  const intervals: KeyInterval[] = [];
  const missing: LedgerAttempt[] = [];
  for (const row of rows) {
    if (row.end_seq === null && row.outcome !== 'OPEN') missing.push(row);
    intervals.push({
      key: row.key,
      id: `${row.job_id}#${row.run_number}.${row.attempt}:${row.outcome}`,
      start: BigInt(row.start_seq),
      end: row.end_seq === null ? null : BigInt(row.end_seq),
    });
  }
  return { intervals, missing };
}
