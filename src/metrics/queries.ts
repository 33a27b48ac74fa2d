/**
 * The SQL of the queue metrics, one named query per section. Each section is
 * a function of the clock and the scope returning one statement, so that a
 * new section (continuation counts, the intent backlog) is one more entry
 * here plus its field in `QueueMetrics`, and the plan test
 * (test/integration/metrics-plans.test.ts) EXPLAINs every entry.
 *
 * Cost on a large table: no section reads finished history beyond its window.
 *   - live counts read the PENDING partial index (job_queue_claim_by_type_idx,
 *     index-only) and the lease rows (job_leases, one per live lease), whose
 *     size is the backlog, not the history; the oldest runnable job reads
 *     job_queue_claim_idx;
 *   - the oldest runnable job walks the claim index once per distinct
 *     priority (a loose index scan), taking the first due entry of each;
 *   - recent finished counts and dead letters sum job_counts (per-minute
 *     counters every terminal statement adds to; migration
 *     20261229000001_finished_reads) over their window's minutes;
 *   - the duration sample walks the primary key newest first (ids are
 *     time-ordered) from the window's start, at most MAX_DURATION_SCAN rows;
 *   - workflow runs: live ones by workflow_runs_status_idx, finished ones in
 *     the recent window by workflow_runs_finished_idx;
 *   - debounce waits: enqueue_windows_waiting_idx (the open debounce windows),
 *     and each one's job by primary key;
 *   - continuations: job_attempts_continued_idx (attempts closed as
 *     CONTINUED, by close time; migration 20261218000000) in the window, and
 *     each one's job by primary key for the scope;
 *   - concurrency keys: the keyed backlog by job_queue_concurrency_waiting_idx
 *     (keyed PENDING rows only), the lease rows (job_leases), and each key's
 *     row by primary key; at most MAX_CONCURRENCY_KEYS keys returned;
 *   - rate keys: the rate-keyed backlog by job_queue_rate_waiting_idx, each
 *     key's bucket by primary key; at most MAX_RATE_KEYS keys returned.
 * Scope is a filter on those rows (exact, as everywhere: an organization sees
 * only its rows, `noOrganizationScope()` only rows without one).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { scopeParams, type Scope } from '../db/scope.js';
import { DEAD_LETTER_WINDOW_MS, MAX_CONCURRENCY_KEYS, MAX_DURATION_SAMPLES, MAX_DURATION_SCAN, MAX_RATE_KEYS, RECENT_WINDOW_MS } from './inputs.js';
import { LEASED_JOBS, TERMINAL_RUN, inScope, pendingJobs } from '../db/fragments.js';
import { ID_CLOCK_MARGIN_MS, uuidv7Floor } from '../db/ids.js';
import { finishedCountRows } from '../queue/finished-counts.js';

export interface MetricsQueryContext {
  now: Date;
  scope: Scope;
}

const _jq = sqltag`jq`;
const _wr = sqltag`wr`;
const windowStart = (now: Date, ms: number) => new Date(now.getTime() - ms);

export interface LiveCountRow {
  job_type: string;
  workflow: boolean;
  status: 'PENDING' | 'LEASED';
  count: number;
  runnable: number;
}

/**
 * PENDING (and of those, due) and LEASED jobs by type and kind. The PENDING
 * branch reads only columns job_queue_claim_by_type_idx holds (migration
 * 20261227000000: organization_id and workflow_step_id included), so it is an
 * index-only scan of the backlog: with a 1M backlog in an 11M-row table a
 * plain index scan would fetch a heap page per pending job, and PostgreSQL
 * chose a sequential scan of the whole table instead (1.8 s). No
 * `priority >= ...` test here: that would let the untyped claim's index
 * (job_queue_claim_idx, which does not cover these columns) qualify too.
 */
export function liveJobCounts({ now, scope }: MetricsQueryContext): Sql {
  return sqltag`
    SELECT jq.job_type, jq.workflow_step_id IS NOT NULL AS workflow, 'PENDING' AS status,
           count(*)::int AS count, (count(*) FILTER (WHERE jq.next_run_at <= ${now}::timestamptz))::int AS runnable
      FROM ${pendingJobs(sqltag`jq.job_type, jq.workflow_step_id, jq.next_run_at`, inScope(scope, 'jq.organization_id'))}
     GROUP BY 1, 2
    UNION ALL
    SELECT jq.job_type, jq.workflow_step_id IS NOT NULL, 'LEASED', count(*)::int, 0
      FROM ${LEASED_JOBS} AND ${inScope(scope, 'jq.organization_id')}
     GROUP BY 1, 2`;
}

export interface FinishedCountRow {
  job_type: string;
  workflow: boolean;
  status: 'SUCCEEDED' | 'DEAD_LETTERED' | 'CANCELED';
  count: number;
}

/**
 * Jobs that finished in the recent window, by type, kind and terminal status, from the per-minute counters:
 * every minute that overlaps the window counts whole (so up to a minute before it).
 */
export function recentlyFinishedJobCounts({ now, scope }: MetricsQueryContext): Sql {
  return finishedCounts(now, RECENT_WINDOW_MS, scope, sqltag`c.job_type, c.workflow, c.status::text AS status,`, sqltag`GROUP BY 1, 2, 3`);
}

/** The counters of the minutes that overlap (now - windowMs, now], with `select` before the sum. */
function finishedCounts(now: Date, windowMs: number, scope: Scope, select: Sql, tail: Sql): Sql {
  const rows = finishedCountRows(scope, sqltag`${windowStart(now, windowMs)}::timestamptz`, sqltag`${now}::timestamptz`);
  return sqltag`SELECT ${select} coalesce(sum(c.count), 0)::int AS count FROM (${rows}) c ${tail}`;
}

export interface OldestRunnableRow {
  oldest: Date | null;
}

/**
 * The earliest `next_run_at` among due PENDING jobs. The claim index is
 * ordered by priority first, so a plain min() would read the whole backlog;
 * instead the recursive part finds each distinct priority with one index
 * probe, and the first due entry of each priority is one more.
 */
export function oldestRunnable({ now, scope }: MetricsQueryContext): Sql {
  const pending = sqltag`jq.claimable AND jq.fair_key IS NULL AND jq.priority >= -2147483648 AND ${inScope(scope, 'jq.organization_id')}`;
  return sqltag`
    WITH RECURSIVE priorities AS (
      (SELECT jq.priority FROM runledger.job_queue jq WHERE ${pending} ORDER BY jq.priority DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT jq.priority FROM runledger.job_queue jq
               WHERE ${pending} AND jq.priority < p.priority ORDER BY jq.priority DESC LIMIT 1)
        FROM priorities p
       WHERE p.priority IS NOT NULL
    )
    SELECT least(
             min((SELECT jq.next_run_at FROM runledger.job_queue jq
                   WHERE ${pending} AND jq.priority = p.priority AND jq.next_run_at <= ${now}::timestamptz
                   ORDER BY jq.next_run_at LIMIT 1)),
             -- Fair jobs (outside that index): their own index, read whole (only the fair backlog).
             (SELECT min(jq.next_run_at) FROM runledger.job_queue jq
               WHERE jq.claimable AND jq.fair_key IS NOT NULL AND jq.next_run_at <= ${now}::timestamptz
                 AND ${inScope(scope, 'jq.organization_id')})) AS oldest
      FROM priorities p
     WHERE p.priority IS NOT NULL`;
}

export interface DurationRow {
  samples: number;
  wait_p50: number | null;
  wait_p95: number | null;
  run_p50: number | null;
  run_p95: number | null;
}

/**
 * Wait and run time of the latest jobs that finished (SUCCEEDED or
 * DEAD_LETTERED) in the recent window and had started; canceled jobs are left
 * out (their run time is the cancellation's, not the handler's).
 *
 * Wait: from when the job was due to its first start. `next_run_at` is the
 * due time until a retry moves it past `started_at`; then the original due
 * time is gone and `created_at` stands in. Run: first start to finish, so
 * retries and their backoff count (what a caller waiting for the job sees).
 *
 * "Latest" by the primary key, newest first (ids are time-ordered: no index
 * over finished jobs is needed): the newest MAX_DURATION_SCAN jobs of the
 * scope created since the window began (less the id clock margin), of which
 * the first MAX_DURATION_SAMPLES that finished in the window. A job created
 * before the window that finished in it is not in the sample.
 */
export function durationSample({ now, scope }: MetricsQueryContext): Sql {
  const from = windowStart(now, RECENT_WINDOW_MS);
  const since = uuidv7Floor(new Date(from.getTime() - ID_CLOCK_MARGIN_MS));
  return sqltag`
    WITH sample AS (
      SELECT s.* FROM (
        SELECT jq.status, jq.created_at, jq.next_run_at, jq.started_at, jq.finished_at
          FROM runledger.job_queue jq
         WHERE jq.id >= ${since}::uuid AND ${inScope(scope, 'jq.organization_id')}
         ORDER BY jq.id DESC
         LIMIT ${MAX_DURATION_SCAN}
      ) s
       WHERE s.status IN ('SUCCEEDED', 'DEAD_LETTERED') AND s.started_at IS NOT NULL
         AND s.finished_at > ${from}::timestamptz AND s.finished_at <= ${now}::timestamptz
       LIMIT ${MAX_DURATION_SAMPLES}
    ),
    d AS (
      SELECT 1000 * EXTRACT(EPOCH FROM s.started_at - GREATEST(s.created_at,
                                CASE WHEN s.next_run_at <= s.started_at THEN s.next_run_at ELSE s.created_at END)) AS wait_ms,
             1000 * EXTRACT(EPOCH FROM s.finished_at - s.started_at) AS run_ms
        FROM sample s
    )
    SELECT count(*)::int AS samples,
           (percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_ms))::float8 AS wait_p50,
           (percentile_cont(0.95) WITHIN GROUP (ORDER BY wait_ms))::float8 AS wait_p95,
           (percentile_cont(0.5) WITHIN GROUP (ORDER BY run_ms))::float8 AS run_p50,
           (percentile_cont(0.95) WITHIN GROUP (ORDER BY run_ms))::float8 AS run_p95
      FROM d`;
}

export interface CountRow {
  count: number;
}

/** Jobs dead-lettered in the dead-letter window (its minutes, as recentlyFinishedJobCounts). */
export function deadLetteredCount({ now, scope }: MetricsQueryContext): Sql {
  return finishedCounts(now, DEAD_LETTER_WINDOW_MS, scope, sqltag``, sqltag`WHERE c.status = 'DEAD_LETTERED'`);
}

/**
 * Slices that ended in a continuation in the recent window (attempts closed as CONTINUED), and the distinct jobs
 * they belong to: job_attempts_continued_idx holds only those attempts, and the scope is read from each one's job
 * (a primary-key probe), so the cost is the window's continuations, never the attempt history.
 */
export function continuationCounts({ now, scope }: MetricsQueryContext): Sql {
  return sqltag`
    SELECT count(*)::int AS slices, count(DISTINCT a.job_id)::int AS jobs
      FROM runledger.job_attempts a
      JOIN runledger.job_queue jq ON jq.id = a.job_id
     WHERE a.outcome = 'CONTINUED'
       AND a.finished_at > ${windowStart(now, RECENT_WINDOW_MS)}::timestamptz AND a.finished_at <= ${now}::timestamptz
       AND ${inScope(scope, 'jq.organization_id')}`;
}

export interface ContinuationCountRow {
  slices: number;
  jobs: number;
}

export interface RunCountRow {
  status: 'RUNNING' | 'WAITING_FOR_EXTERNAL' | 'SUCCEEDED' | 'COMPLETED_WITH_ERRORS' | 'CANCELED';
  count: number;
}

/** Live workflow runs by status, and runs that finished in the recent window by status. */
export function workflowRunCounts({ now, scope }: MetricsQueryContext): Sql {
  return sqltag`
    SELECT wr.status::text AS status, count(*)::int AS count
      FROM runledger.workflow_runs wr
     WHERE wr.status IN ('RUNNING', 'WAITING_FOR_EXTERNAL') AND ${inScope(scope, 'wr.organization_id')}
     GROUP BY 1
    UNION ALL
    SELECT wr.status::text, count(*)::int
      FROM runledger.workflow_runs wr
     WHERE wr.status IN ${TERMINAL_RUN}
       AND wr.finished_at > ${windowStart(now, RECENT_WINDOW_MS)}::timestamptz AND wr.finished_at <= ${now}::timestamptz
       AND ${inScope(scope, 'wr.organization_id')}
     GROUP BY 1`;
}

export interface ConcurrencyKeyRow {
  key: string;
  max_leased: number;
  leased: number;
  waiting: number;
  set_by: 'enqueue' | 'operator';
  /** Keys with waiting or leased jobs in the scope, before the cap. */
  keys: number;
  /** Due keyed jobs in the scope, over every key. */
  total_waiting: number;
}

/**
 * Concurrency keys with due PENDING jobs (waiting for a slot or for the next claim) or live leases in the scope,
 * the most waiting first, at most MAX_CONCURRENCY_KEYS, counted as listConcurrencyLimits counts them: the admin
 * scope reads a key's leases from its row (the counter the claim keeps), a narrower scope counts its own lease
 * rows (a tenant sees its own jobs, and the limit every job of the key shares). The waiting count reads
 * job_queue_concurrency_waiting_idx, which holds keyed PENDING rows only: the keyed backlog, never the history
 * nor the unkeyed backlog. Lease rows are one per live lease.
 */
export function concurrencyKeys({ now, scope }: MetricsQueryContext): Sql {
  const s = scopeParams(scope);
  return sqltag`
    WITH waiting AS (
      SELECT jq.concurrency_key AS key, count(*)::int AS waiting
        FROM runledger.job_queue jq
       WHERE jq.claimable AND jq.concurrency_key IS NOT NULL AND jq.next_run_at <= ${now}::timestamptz
         AND ${inScope(s, 'jq.organization_id')}
       GROUP BY 1
    ),
    holding AS (
      SELECT l.concurrency_key AS key, count(*)::int AS leased
        FROM runledger.job_leases l JOIN runledger.job_queue jq ON jq.id = l.job_id
       WHERE l.concurrency_key IS NOT NULL AND ${inScope(s, 'jq.organization_id')}
       GROUP BY 1
    ),
    keyed AS (
      SELECT k.key, k.max_leased, k.set_by, coalesce(w.waiting, 0) AS waiting,
             CASE WHEN ${s.all}::boolean THEN k.leased ELSE coalesce(h.leased, 0) END AS leased
        FROM (SELECT key FROM waiting UNION SELECT key FROM holding) x
        JOIN runledger.concurrency_slots k ON k.key = x.key
        LEFT JOIN waiting w ON w.key = x.key
        LEFT JOIN holding h ON h.key = x.key
    )
    SELECT k.key, k.max_leased, k.set_by, k.waiting, k.leased,
           (count(*) OVER ())::int AS keys, (sum(k.waiting) OVER ())::int AS total_waiting
      FROM keyed k
     ORDER BY k.waiting DESC, k.leased DESC, k.key
     LIMIT ${MAX_CONCURRENCY_KEYS}::int`;
}

export interface RateKeyRow {
  key: string;
  max_starts: number;
  period_ms: number;
  burst: number;
  /** The bucket's tokens at the metrics' `now` (fractional; a start takes a whole one). */
  tokens: number;
  waiting: number;
  set_by: 'enqueue' | 'operator';
  /** Keys with waiting jobs in the scope, before the cap. */
  keys: number;
  /** Due rate-keyed jobs in the scope, over every key. */
  total_waiting: number;
}

/**
 * Rate keys with due PENDING jobs in the scope (waiting for a token or for the next claim), the most waiting
 * first, at most MAX_RATE_KEYS, with each key's bucket refilled to `now` (runledger.rate_tokens). The waiting
 * count reads job_queue_rate_waiting_idx (rate-keyed claimable rows only), each key's row by primary key.
 */
export function rateKeys({ now, scope }: MetricsQueryContext): Sql {
  const s = scopeParams(scope);
  return sqltag`
    WITH waiting AS (
      SELECT jq.rate_key AS key, count(*)::int AS waiting
        FROM runledger.job_queue jq
       WHERE jq.claimable AND jq.rate_key IS NOT NULL AND jq.next_run_at <= ${now}::timestamptz
         AND ${inScope(s, 'jq.organization_id')}
       GROUP BY 1
    )
    SELECT r.key, r.max_starts, r.period_ms, r.burst, r.set_by, w.waiting,
           runledger.rate_tokens(r.tokens, r.refilled_at, ${now}::timestamptz, r.max_starts, r.period_ms, r.burst) AS tokens,
           (count(*) OVER ())::int AS keys, (sum(w.waiting) OVER ())::int AS total_waiting
      FROM waiting w
      JOIN runledger.rate_limits r ON r.key = w.key
     ORDER BY w.waiting DESC, r.key
     LIMIT ${MAX_RATE_KEYS}::int`;
}

/** Every section's statement, by name: what the metrics read and what the plan test explains. */
export interface DebounceWaitRow {
  job_type: string;
  count: number;
}

/**
 * PENDING jobs waiting for their debounce window to close (issue 35): the debounce windows whose job was last
 * due after now, read from enqueue_windows_waiting_idx (debounce rows only, by that due time), so the rows read
 * are the windows still open, not every key ever used; each one's job by primary key, to count only a job
 * still PENDING, unstarted and not yet due (one canceled or brought forward meanwhile is not waiting).
 */
export function debounceWaits({ now, scope }: MetricsQueryContext): Sql {
  return sqltag`
    SELECT w.job_type, count(*)::int AS count
      FROM runledger.enqueue_windows w
      JOIN runledger.job_queue jq ON jq.id = w.job_id
     WHERE w.kind = 'DEBOUNCE' AND w.waiting_until > ${now}::timestamptz
       AND jq.claimable AND jq.attempt = 0 AND jq.next_run_at > ${now}::timestamptz
       AND ${inScope(scope, 'jq.organization_id')}
     GROUP BY 1`;
}

export const METRICS_QUERIES = {
  liveJobCounts,
  recentlyFinishedJobCounts,
  oldestRunnable,
  durationSample,
  deadLetteredCount,
  workflowRunCounts,
  continuationCounts,
  concurrencyKeys,
  rateKeys,
  debounceWaits,
} as const satisfies Record<string, (context: MetricsQueryContext) => Sql>;
