/**
 * The concurrency-key shape's proof (issue 35), read after the drain: at no point did more than a key's limit
 * of its leases hold it, reconstructed from the ledger (test/harness/concurrency-ledger.ts), with the handlers'
 * own runs as a second witness; every key's slot count equals its live lease rows; every keyed job ended once.
 *
 * A canceled lease holds its slot until the reaper deletes it, after it ran out: the controller samples
 * job_events' sequence with the clock (chaos.seq_clock, every 50 ms) to place that end on the sequence.
 */
import type pg from 'pg';
import { END_EVENTS, ledgerLeaseIntervals, maxOverlapByKey, type KeyInterval, type KeyOverlap } from '../test/harness/concurrency-ledger.js';

export const KEYED_DDL = `
  CREATE SCHEMA IF NOT EXISTS chaos;
  -- The handler side: each chaos.keyed run's span (the machine's monotonic clock in ns, process.hrtime: after
  -- its claim committed, and before its completion), across every worker process, written once it ended.
  CREATE TABLE IF NOT EXISTS chaos.key_holds (
    id bigserial PRIMARY KEY,
    key text NOT NULL,
    job_id uuid NOT NULL,
    run_number int NOT NULL,
    attempt int NOT NULL,
    worker text NOT NULL,
    started_ns bigint NOT NULL,
    ended_ns bigint NOT NULL
  );
  -- job_events' sequence read with the clock by the controller (see key-ledger.ts).
  CREATE TABLE IF NOT EXISTS chaos.seq_clock (
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    seq bigint NOT NULL
  );
  CREATE INDEX IF NOT EXISTS seq_clock_at_idx ON chaos.seq_clock (at);`;

/** The controller's sample: the sequence's last value and the clock, in one statement. */
export async function sampleSequenceClock(admin: pg.Pool): Promise<void> {
  await admin.query('INSERT INTO chaos.seq_clock (at, seq) SELECT clock_timestamp(), last_value FROM runledger.job_events_seq_seq');
}

/**
 * The handlers' spans. A span lies inside its lease when the worker ended the lease after the handler (success,
 * failure, release); a canceled or reaped lease ended without it, so its handler may outlive it (the lease is
 * the fence, not the handler): those spans are left out here (`unfenced`), the ledger's check covers them.
 */
export async function handlerIntervals(db: pg.Pool | pg.Client): Promise<{ intervals: KeyInterval[]; unfenced: number }> {
  const { rows } = await db.query<{ key: string; id: string; start_ns: string; end_ns: string; outcome: string | null }>(`
    SELECT h.key, h.job_id || '#' || h.run_number || '.' || h.attempt || '@' || h.worker AS id,
           h.started_ns::text AS start_ns, h.ended_ns::text AS end_ns,
           (SELECT a.outcome::text FROM runledger.job_attempt_history a
             WHERE a.job_id = h.job_id AND a.run_number = h.run_number AND a.attempt = h.attempt LIMIT 1) AS outcome
      FROM chaos.key_holds h`);
  const intervals: KeyInterval[] = [];
  let unfenced = 0;
  for (const row of rows) {
    if (row.outcome === 'CANCELED' || row.outcome === 'LEASE_EXPIRED') unfenced += 1;
    else intervals.push({ key: row.key, id: row.id, start: BigInt(row.start_ns), end: BigInt(row.end_ns) });
  }
  return { intervals, unfenced };
}

/** The ledger's attempts of handler spans (`job#run.attempt@worker`), to explain a handler-side finding. */
async function describeHolders(db: pg.Pool, holders: readonly string[]): Promise<string> {
  const parsed = holders.map((h) => /^(.+)#(\d+)\.(\d+)@(.+)$/.exec(h)).filter((m) => m !== null);
  const { rows } = await db.query(
    `SELECT h.job_id, h.run_number, h.attempt, h.worker_id, h.seq::text, h.outcome, h.started_at, h.finished_at, h.leased_until,
            (SELECT min(e.seq)::text FROM runledger.job_events e WHERE e.job_id = h.job_id AND e.seq > h.seq AND e.event_type IN ${END_EVENTS}) AS end_seq,
            (SELECT string_agg(e.event_type::text || '@' || e.seq || ' ' || e.created_at::text, '; ' ORDER BY e.seq) FROM runledger.job_events e WHERE e.job_id = h.job_id) AS events,
            (SELECT string_agg(k.started_ns || '..' || k.ended_ns || '@' || k.worker, '; ') FROM chaos.key_holds k
              WHERE k.job_id = h.job_id AND k.run_number = h.run_number AND k.attempt = h.attempt) AS spans
       FROM runledger.job_attempt_history h
       JOIN unnest($1::uuid[], $2::int[], $3::int[]) AS x(job_id, run_number, attempt)
         ON x.job_id = h.job_id AND x.run_number = h.run_number AND x.attempt = h.attempt`,
    [parsed.map((m) => m[1]), parsed.map((m) => Number(m[2])), parsed.map((m) => Number(m[3]))],
  );
  return JSON.stringify(rows);
}

export interface KeyFindings {
  keys: number;
  jobs: Record<string, number>;
  attempts: number;
  canceledLeases: number;
  /** Per key: its limit and the most leases (ledger) and handler runs seen holding it at once. */
  perKey: { key: string; limit: number; ledgerMax: number; handlerMax: number }[];
  handlerSpans: number;
  /** Spans of canceled or reaped leases, left out of the handler-side check. */
  handlerUnfenced: number;
  /** Dead-lettered jobs the shape meant to succeed (faults used up their attempts). */
  deadLetteredUnplanned: number;
  violations: string[];
}

/**
 * The shape's checks, after the drain and once the reaper deleted every run-out lease: (a) overlap per key at
 * most its limit, from the ledger and from the handlers; (b) no lease row left, and every seat of every key free
 * again, once; (c) every keyed job terminal, each success executed exactly once in its attempt.
 */
export async function verifyConcurrencyKeys(admin: pg.Pool): Promise<KeyFindings> {
  const violations: string[] = [];
  const limits = new Map<string, number>();
  const { rows: limitRows } = await admin.query<{ key: string; max_leased: number; leased: number }>(`
    SELECT k.key, k.max_leased, k.leased FROM runledger.concurrency_slots k ORDER BY k.key`);
  for (const row of limitRows) {
    limits.set(row.key, row.max_leased);
    // (b) Every lease ended (the drain waited for the reaper).
    if (row.leased !== 0) violations.push(`key ${row.key}: ${row.leased} lease rows still live after the drain and the reaper`);
  }
  const { rows: stray } = await admin.query<{ key: string }>(`
    SELECT DISTINCT l.concurrency_key AS key FROM runledger.job_leases l
     WHERE l.concurrency_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runledger.concurrency_limits k WHERE k.key = l.concurrency_key)`);
  for (const row of stray) violations.push(`lease rows hold key ${row.key}, which has no concurrency_limits row`);
  // Every seat free again, once each: seats 1..seats of the key and nothing else.
  const { rows: seatRows } = await admin.query<{ key: string; seats: number; free: number; stray: number }>(`
    SELECT k.key, k.seats, count(s.seat)::int AS free, count(s.seat) FILTER (WHERE s.seat > k.seats)::int AS stray
      FROM runledger.concurrency_limits k LEFT JOIN runledger.concurrency_seats s ON s.key = k.key
     GROUP BY k.key, k.seats`);
  for (const row of seatRows) {
    if (row.free !== row.seats || row.stray !== 0) {
      violations.push(`key ${row.key}: ${row.free} free seats (${row.stray} numbered above ${row.seats}) after the drain, not its ${row.seats}`);
    }
  }

  // (a) Overlap from the ledger, then from the handlers' spans.
  const ledger = await ledgerLeaseIntervals(admin, { runOutSamples: 'chaos.seq_clock' });
  for (const row of ledger.missing.slice(0, 10)) violations.push(`attempt with no end event in the ledger: ${JSON.stringify(row)}`);
  const handlers = await handlerIntervals(admin);
  const ledgerMax = maxOverlapByKey(ledger.intervals);
  const handlerMax = maxOverlapByKey(handlers.intervals);
  const over = (what: string, overlap: KeyOverlap, limit: number) =>
    `${what}: key ${overlap.key} held by ${overlap.max} at once (limit ${limit}) at ${overlap.at}: ${overlap.holders.join(', ')}`;
  const perKey: KeyFindings['perKey'] = [];
  for (const key of new Set([...ledgerMax.keys(), ...handlerMax.keys()])) {
    const limit = limits.get(key);
    if (limit === undefined) {
      violations.push(`key ${key} has leases in the ledger but no concurrency_limits row`);
      continue;
    }
    const l = ledgerMax.get(key);
    const h = handlerMax.get(key);
    if (l && l.max > limit) violations.push(over('ledger (job_events sequence)', l, limit));
    if (h && h.max > limit) violations.push(`${over('handler spans (monotonic clock)', h, limit)}; in the ledger: ${await describeHolders(admin, h.holders)}`);
    perKey.push({ key, limit, ledgerMax: l?.max ?? 0, handlerMax: h?.max ?? 0 });
  }
  perKey.sort((a, b) => a.key.localeCompare(b.key));

  // (c) Every keyed job ended, once: terminal, and a success's attempt executed exactly once.
  const { rows: statuses } = await admin.query<{ status: string; n: number }>(`
    SELECT status::text AS status, count(*)::int AS n FROM runledger.job_queue WHERE concurrency_key IS NOT NULL GROUP BY 1`);
  const jobs = Object.fromEntries(statuses.map((row) => [row.status, row.n]));
  const { rows: live } = await admin.query(`
    SELECT id, status FROM runledger.job_queue WHERE concurrency_key IS NOT NULL AND status IN ('PENDING', 'LEASED') LIMIT 10`);
  if (live.length > 0) violations.push(`keyed jobs not terminal after the drain: ${JSON.stringify(live)}`);
  // Every chaos.keyed job holds the key its payload names (a job without it would run beside the limit, and
  // the ledger's check, which reads keyed rows, would not see it).
  const { rows: unkeyed } = await admin.query(`
    SELECT id, payload->>'key' AS key FROM runledger.job_queue
     WHERE job_type = 'chaos.keyed' AND concurrency_key IS DISTINCT FROM payload->>'key' LIMIT 10`);
  if (unkeyed.length > 0) violations.push(`chaos.keyed jobs without the concurrency key their payload names: ${JSON.stringify(unkeyed)}`);
  const { rows: wrongRuns } = await admin.query(`
    SELECT j.id, j.run_number, j.attempt,
           (SELECT count(*)::int FROM chaos.executions x WHERE x.job_id = j.id AND x.run_number = j.run_number AND x.attempt = j.attempt) AS n
      FROM runledger.job_queue j
     WHERE j.concurrency_key IS NOT NULL AND j.status = 'SUCCEEDED'
       AND (SELECT count(*) FROM chaos.executions x WHERE x.job_id = j.id AND x.run_number = j.run_number AND x.attempt = j.attempt) <> 1
     LIMIT 10`);
  if (wrongRuns.length > 0) violations.push(`keyed jobs whose succeeding attempt did not execute exactly once: ${JSON.stringify(wrongRuns)}`);
  // A job the shape did not mean to fail runs out of its 10 attempts only if faults cut most of them: counted, shown.
  const { rows: unplanned } = await admin.query<{ n: number }>(`
    SELECT count(*)::int AS n FROM runledger.job_queue
     WHERE concurrency_key IS NOT NULL AND status = 'DEAD_LETTERED' AND NOT COALESCE((payload->>'fail')::boolean, false)`);

  return {
    keys: limitRows.length,
    jobs,
    attempts: ledger.intervals.length,
    canceledLeases: ledger.intervals.filter((i) => i.id.endsWith(':CANCELED')).length,
    perKey,
    handlerSpans: handlers.intervals.length,
    handlerUnfenced: handlers.unfenced,
    deadLetteredUnplanned: unplanned[0]?.n ?? 0,
    violations,
  };
}
