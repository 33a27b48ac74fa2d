/**
 * Debounce and throttle at enqueue, in one statement (src/queue/enqueue-windows.ts builds its batch: one entry
 * per key, the key's winning request). It writes job_queue twice: a debounce re-arm (an UPDATE of the window's
 * PENDING job) and the insert of a window's new job, which repeats the columns of insert-jobs.ts that an
 * enqueue sets (a window's job is a direct job: no step, no idempotency key, no ENQUEUED event row).
 *
 * Lock protocol (src/coordination/locking.ts, "Enqueue windows"): the batch's window rows first, FOR UPDATE in
 * key order (new keys: the unique insert, in key order), then the window's job row (the re-arm's UPDATE). A
 * job is the job of one window only, so two enqueues never want one job row without first queueing for its
 * window row; a claim holds job rows without waiting for any window row; the purge trigger takes window rows
 * with SKIP LOCKED. So the order adds no cycle.
 *
 * Why a key can come back 'raced'. The statement's snapshot is taken before its locks are granted. When a
 * concurrent enqueue of the key committed in between (it created the window row, or pointed it at a new job),
 * the snapshot cannot see that job, so nothing here can re-arm or return it. The statement detects it (the
 * row it locked is not the row its snapshot holds, or the key's insert met a row it cannot see), writes
 * nothing for that key, and reports it; the caller runs the statement again for those keys, with a new
 * snapshot, once the other transaction committed. A re-arm's own race with a claim needs no such pass: the
 * UPDATE waits for the claim's row lock and re-checks the row (READ COMMITTED), so a job claimed meanwhile
 * is not re-armed and the key opens a new window in this same statement.
 */
import { raw, sqltag, type Sql } from '@prisma/client/runtime/client';
import { JOB_AVAILABLE_CHANNEL } from '../../model/constants.js';
import { concurrencyLimitWrites } from './concurrency-limits.js';
import { rateLimitWrites } from './rate-limits.js';
import type { JobStatus } from '../../model/job-rows.js';

/** One key's outcome (`ord`: its batch entry), or a type the catalog refused, or the isolation that refused the batch. */
export interface WindowOutcomeRow {
  ord: number | null;
  outcome: 'opened' | 'debounced' | 'throttled' | 'raced' | null;
  job_id: string | null;
  status: JobStatus | null;
  run_number: number | null;
  refused: string | null;
  isolation: string | null;
}

const MS = sqltag`interval '1 millisecond'`;
/** The window key columns of `a` and `b` are equal (b's organization as its key: '' for none). */
const sameKey = (a: string, b: string) =>
  raw(`${a}.job_type = ${b}.job_type AND ${a}.organization_key = ${b}.organization_key AND ${a}.kind = ${b}.kind AND ${a}.window_key = ${b}.window_key`);

/**
 * Debounces or throttles the batch (jsonb array, src/queue/enqueue-windows.ts's windowEntry), unless the catalog
 * `gate` refuses a type or the transaction is not READ COMMITTED (then nothing is locked or written).
 */
export function enqueueWindowsStatement(
  batch: string,
  gate: 'off' | 'disabled' | 'strict',
  traceContext: string | null,
  notify: boolean,
  concurrency = false,
  rate = false,
): Sql {
  return sqltag`
    WITH input AS (
      SELECT i.ord, i.id, i.job_type, i.organization_id, COALESCE(i.organization_id, '') AS organization_key, i.payload -> 'v' AS payload,
             i.priority, i.max_attempts, i.timeout_seconds, i.next_run_at, i.delay_ms, i.resource_key, i.backoff_base_ms,
             i.backoff_max_ms, i.stage, i.concurrency_key, i.concurrency_limit, i.rate_key, i.rate_limit, i.rate_period_ms, i.rate_burst,
             i.fair_key, i.fair_weight,
             i.kind, i.window_key, i.window_ms, i.max_wait_ms
        FROM jsonb_to_recordset(${batch}::jsonb)
             AS i(ord int, id uuid, job_type text, organization_id text, payload jsonb, priority int, max_attempts int,
                  timeout_seconds int, next_run_at timestamptz, delay_ms int, resource_key text, backoff_base_ms int,
                  backoff_max_ms int, stage text, concurrency_key text, concurrency_limit int, rate_key text, rate_limit int,
                  rate_period_ms int, rate_burst int, fair_key text, fair_weight int, kind runledger.enqueue_window_kind,
                  window_key text, window_ms int, max_wait_ms int)
    ),
    c AS (SELECT now() AS at),
    -- READ COMMITTED only: the re-check of a row locked after a wait is what the protocol relies on (a stronger
    -- isolation raises a serialization failure instead).
    isolation AS (SELECT current_setting('transaction_isolation') AS level),
    refused AS (
      SELECT DISTINCT i.job_type
        FROM input i
        LEFT JOIN runledger.job_definitions d ON d.job_type = i.job_type
       WHERE ${gate}::text <> 'off'
         AND (NOT d.enabled OR (d.job_type IS NULL AND ${gate}::text = 'strict'))
    ),
    go AS MATERIALIZED (
      SELECT NOT EXISTS (SELECT 1 FROM refused) AND (SELECT level FROM isolation) IN ('read committed', 'read uncommitted') AS ok
    ),
    -- 1. The window rows that exist, as last committed, locked in key order.
    held AS MATERIALIZED (
      SELECT w.job_type, w.organization_key, w.kind, w.window_key, w.job_id, w.closes_at
        FROM runledger.enqueue_windows w
        JOIN input i ON ${sameKey('w', 'i')}
       WHERE (SELECT ok FROM go)
       ORDER BY w.job_type, w.organization_key, w.kind, w.window_key
         FOR UPDATE OF w
    ),
    -- 2. Each key against the snapshot: the window row as the snapshot holds it (raced when the locked one differs)
    --    and its job.
    state AS MATERIALIZED (
      SELECT i.*, h.job_id AS window_job_id, h.closes_at, h.job_id IS NOT NULL AS existed,
             h.job_id IS DISTINCT FROM s.job_id AS raced,
             jq.id IS NOT NULL AS job_visible, jq.status AS job_status, jq.run_number AS job_run_number,
             COALESCE(jq.status = 'PENDING' AND jq.attempt = 0 AND jq.run_number = 1, false) AS job_open
        FROM input i
        LEFT JOIN held h ON ${sameKey('h', 'i')}
        LEFT JOIN runledger.enqueue_windows s ON ${sameKey('s', 'i')}
        LEFT JOIN runledger.job_queue jq ON jq.id = h.job_id
       WHERE (SELECT ok FROM go)
    ),
    -- 3. Debounce: the window's job, if still PENDING and unstarted once its row is locked (a claim that got it
    --    first wins, and the key opens a new window below), takes this request's payload and settings and is due
    --    windowMs from now, never later than the window's cap.
    rearmed AS (
      UPDATE runledger.job_queue jq
         SET payload = st.payload, priority = st.priority, max_attempts = st.max_attempts, timeout_seconds = st.timeout_seconds,
             resource_key = st.resource_key, backoff_base_ms = st.backoff_base_ms, backoff_max_ms = st.backoff_max_ms,
             stage = st.stage, concurrency_key = st.concurrency_key, rate_key = st.rate_key, fair_key = st.fair_key, fair_weight = st.fair_weight, trace_context = ${traceContext}::jsonb,
             next_run_at = LEAST(GREATEST(jq.next_run_at, c.at + st.window_ms * ${MS}), st.closes_at),
             updated_at = GREATEST(jq.updated_at, c.at)
        FROM state st, c
       WHERE st.kind = 'DEBOUNCE' AND NOT st.raced AND st.job_open
         AND jq.id = st.window_job_id
         AND jq.status = 'PENDING' AND jq.attempt = 0 AND jq.run_number = 1
      RETURNING jq.id, jq.next_run_at
    ),
    -- 4. What each key that had a window does: keeps it (re-armed, or a throttle inside its window whose job is
    --    still kept) or opens a new one on a new job.
    -- The re-armed jobs as one jsonb object (job id -> due time), looked up per key: the planner takes a data-
    -- modifying CTE for one row, and a join to it became a nested loop, quadratic in the batch.
    rearmed_due AS MATERIALIZED (SELECT COALESCE(jsonb_object_agg(r.id::text, r.next_run_at), '{}'::jsonb) AS due FROM rearmed r),
    decided AS (
      SELECT st.*, (rd.due ->> st.window_job_id::text)::timestamptz AS rearmed_due,
             CASE WHEN st.kind = 'DEBOUNCE' THEN NOT rd.due ? st.window_job_id::text
                  ELSE NOT (st.job_visible AND c.at < st.closes_at) END AS opens
        FROM state st
        CROSS JOIN c
        CROSS JOIN rearmed_due rd
       WHERE st.existed AND NOT st.raced
    ),
    moved AS (
      UPDATE runledger.enqueue_windows w
         SET job_id = CASE WHEN d.opens THEN d.id ELSE w.job_id END,
             opened_at = CASE WHEN d.opens THEN c.at ELSE w.opened_at END,
             closes_at = CASE WHEN NOT d.opens THEN w.closes_at
                              WHEN d.kind = 'THROTTLE' THEN c.at + d.window_ms * ${MS}
                              ELSE c.at + d.max_wait_ms * ${MS} END,
             waiting_until = CASE WHEN d.kind = 'THROTTLE' THEN NULL
                                  WHEN d.opens THEN c.at + d.window_ms * ${MS}
                                  ELSE d.rearmed_due END
        FROM decided d, c
       WHERE ${sameKey('w', 'd')} AND (d.opens OR d.kind = 'DEBOUNCE')
      RETURNING w.job_id
    ),
    -- 5. Keys without a window row open one; a key whose insert meets a row the snapshot cannot see (a
    --    concurrent first request committed it) is raced.
    created AS (
      INSERT INTO runledger.enqueue_windows (job_type, organization_key, kind, window_key, job_id, opened_at, closes_at, waiting_until)
      SELECT st.job_type, st.organization_key, st.kind, st.window_key, st.id, c.at,
             c.at + (CASE WHEN st.kind = 'THROTTLE' THEN st.window_ms ELSE st.max_wait_ms END) * ${MS},
             CASE WHEN st.kind = 'DEBOUNCE' THEN c.at + st.window_ms * ${MS} END
        FROM state st, c
       WHERE NOT st.existed AND NOT st.raced
       ORDER BY st.job_type, st.organization_key, st.kind, st.window_key
      ON CONFLICT (job_type, organization_key, kind, window_key) DO NOTHING
      RETURNING job_id
    ),
    opened AS (SELECT job_id FROM created UNION ALL SELECT job_id FROM moved),
    -- 6. The new windows' jobs: a debounce's due windowMs from now, a throttle's when its request says.
    inserted AS (
      INSERT INTO runledger.job_queue
             (id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds, next_run_at,
              resource_key, backoff_base_ms, backoff_max_ms, stage, concurrency_key, rate_key, fair_key, fair_weight, trace_context, created_at, updated_at)
      SELECT st.id, st.job_type, st.organization_id, st.payload, st.priority, st.max_attempts, st.timeout_seconds,
             CASE WHEN st.kind = 'DEBOUNCE' THEN c.at + st.window_ms * ${MS}
                  WHEN st.delay_ms IS NOT NULL THEN c.at + st.delay_ms * ${MS}
                  ELSE COALESCE(st.next_run_at, c.at) END,
             st.resource_key, st.backoff_base_ms, st.backoff_max_ms, st.stage, st.concurrency_key, st.rate_key, st.fair_key, st.fair_weight, ${traceContext}::jsonb, c.at, c.at
        FROM state st
        JOIN opened o ON o.job_id = st.id
        CROSS JOIN c
       ORDER BY st.ord
      RETURNING id, job_type, next_run_at
    ),
    -- Only a batch naming a concurrency (rate) key has these (a statement shape of its own): the keys of the jobs this
    -- statement wrote (a throttle's answer writes nothing) get their rows and limits, as an insert's do.
    ${
      concurrency
        ? sqltag`concurrency_input AS (
      SELECT st.concurrency_key, st.concurrency_limit FROM state st
       WHERE st.id IN (SELECT id FROM inserted) OR st.window_job_id IN (SELECT id FROM rearmed)
    ),
    ${concurrencyLimitWrites('concurrency_input', sqltag`true`)},`
        : sqltag``
    }
    ${
      rate
        ? sqltag`rate_input AS (
      SELECT st.rate_key, st.rate_limit, st.rate_period_ms, st.rate_burst FROM state st
       WHERE st.id IN (SELECT id FROM inserted) OR st.window_job_id IN (SELECT id FROM rearmed)
    ),
    ${rateLimitWrites('rate_input')},`
        : sqltag``
    }
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type))::int AS n
        FROM (SELECT DISTINCT job_type FROM inserted WHERE ${notify}::boolean AND next_run_at <= now()) t
    )
    SELECT st.ord,
           CASE WHEN st.raced OR (NOT st.existed AND o.job_id IS NULL) THEN 'raced'
                WHEN o.job_id IS NOT NULL THEN 'opened'
                WHEN st.kind = 'DEBOUNCE' THEN 'debounced'
                ELSE 'throttled' END AS outcome,
           CASE WHEN o.job_id IS NOT NULL THEN st.id ELSE st.window_job_id END AS job_id,
           CASE WHEN o.job_id IS NOT NULL OR st.kind = 'DEBOUNCE' THEN 'PENDING'::runledger.job_status ELSE st.job_status END AS status,
           CASE WHEN o.job_id IS NOT NULL OR st.kind = 'DEBOUNCE' THEN 1 ELSE st.job_run_number END AS run_number,
           NULL::text AS refused, NULL::text AS isolation
      FROM notified
      CROSS JOIN state st
      LEFT JOIN (SELECT id AS job_id FROM inserted) o ON o.job_id = st.id
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, job_type, NULL FROM refused
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, level FROM isolation WHERE level NOT IN ('read committed', 'read uncommitted')`;
}
