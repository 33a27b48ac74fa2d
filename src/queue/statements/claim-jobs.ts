/**
 * The claim (src/queue/claim.ts runs it and states its invariants): one statement leases a batch of
 * runnable jobs to one worker and returns what its handlers need.
 */
import { join, sqltag, type Sql } from '@prisma/client/runtime/client';
import { insertLeaseRows } from './lease-rows.js';
import { concurrencyOpen, concurrencyAdmission, takeConcurrencySeats } from './concurrency-slots.js';
import { rateAdmission, rateOpen, takeRateTokens } from './rate-slots.js';
import { CANDIDATE_COLUMNS, FAIR_NEXT, fairBranch } from './fair-turns.js';
import { FUNCTION_STEP_KEY } from '../../model/constants.js';

export interface ClaimParams {
  workerId: string;
  jobTypes?: string[] | undefined;
  limit: number;
  leaseSeconds: number;
  markRunning: boolean;
  /** Where the walk over fairness keys starts (src/queue/statements/fair-turns.ts); '' : the first key. */
  fairAfter: string;
}

export function claimJobsStatement({ workerId, jobTypes, limit, leaseSeconds, markRunning, fairAfter }: ClaimParams): Sql {
  // Statement shapes whose generic plan (a prepared statement's, see preparedStatementName) costs what a
  // custom one does, so PostgreSQL reuses it instead of planning the whole CTE on every claim (planning cost
  // about as much as running it): typed and untyped claims each have only their own branch (a dead branch
  // behind a one-time filter on a parameter is costed as if it ran), the types are one VALUES row each (an
  // unnest of an array parameter is estimated at 10 rows, whatever its length), so a worker's claims share
  // one statement per distinct number of types and limit bucket.
  // The locking scans' LIMIT is a literal (limitBucket: the next power of eight, or of two with several types) under an
  // outer `LIMIT limit`: a generic plan costs a parameter LIMIT as a tenth of the rows it estimates for the
  // scan, which grows with the backlog, so every claim would be re-planned (docs/operate/performance.md).
  // Rows are locked as the outer LIMIT pulls them, so a scan the outer LIMIT reads directly locks `limit`
  // rows, not the bucket.
  // Several types: each type's scan locks up to its bucket, so the buckets are close (powers of two); one scan
  // is read by the outer LIMIT, so a coarser bucket (powers of eight) locks no more and makes fewer statements.
  const bucket = limitBucket(limit, jobTypes === undefined || jobTypes.length === 1 ? 'coarse' : 'fine');
  // Concurrency keys first, then rate keys, each over what the one before let through (lock order).
  const admission = sqltag`${concurrencyAdmission('candidates', 'passed')},
      ${rateAdmission('passed')}`;
  const open = sqltag`${RESOURCE_FREE_HEAD} AND ${concurrencyOpen(limit, bucket)} AND ${rateOpen(limit)}`;
  // Jobs without a fairness key (the claim indexes hold only those): the order the claim gives them.
  const plain =
    jobTypes === undefined
      ? sqltag`
        -- No type filter: one ordered scan of job_queue_claim_idx. Its always-true \`priority >= -2147483648\`
        -- matches that index's predicate, which only this shape states, so a typed claim (whose planner
        -- cannot know how types and priorities correlate) never picks that index: see the migrations
        -- (20261201000000_job_step_link, 20261206000001_claim_idx_predicate).
        SELECT b.id, b.ctid, b.concurrency_key, b.rate_key, b.priority, b.next_run_at FROM (
          SELECT ${CANDIDATE_COLUMNS}
            FROM runledger.job_queue jq
           WHERE jq.claimable AND jq.fair_key IS NULL AND jq.priority >= -2147483648 AND jq.next_run_at <= now()
             AND ${open}
           ORDER BY jq.priority DESC, jq.next_run_at, jq.id
           LIMIT ${bucket}
             FOR UPDATE SKIP LOCKED
        ) b
        LIMIT ${limit}::int`
      : sqltag`
        -- One ordered scan of job_queue_claim_by_type_idx per requested type, merged. With one type the
        -- outer LIMIT reads the scan in order and locks \`limit\` rows; with several, each type's scan locks
        -- up to the bucket, and rows beyond the merged \`limit\` are unlocked when the statement commits.
        SELECT c.id, c.ctid, c.concurrency_key, c.rate_key, c.priority, c.next_run_at
          FROM (VALUES ${join(jobTypes.map((jobType) => sqltag`(${jobType}::text)`))}) AS t(job_type)
         CROSS JOIN LATERAL (
           SELECT ${CANDIDATE_COLUMNS}
             FROM runledger.job_queue jq
            WHERE jq.claimable AND jq.fair_key IS NULL AND jq.job_type = t.job_type AND jq.next_run_at <= now()
              AND ${open}
            ORDER BY jq.priority DESC, jq.next_run_at, jq.id
            LIMIT ${bucket}
              FOR UPDATE SKIP LOCKED
         ) c
         ${jobTypes.length === 1 ? sqltag`` : sqltag`ORDER BY c.priority DESC, c.next_run_at, c.id`}
         LIMIT ${limit}::int`;
  return sqltag`
      -- Cost O(limit x types), whatever the history (finished rows are outside the partial indexes) and
      -- other types' backlog (and, with fairness keys, one probe per open key walked: fair-turns.ts).
      WITH ${fairBranch({ jobTypes, limit, after: fairAfter, open })},
      plain AS (
        SELECT p.*, (row_number() OVER (ORDER BY p.priority DESC, p.next_run_at, p.id) - 1)::float8 AS turn FROM (${plain}) p
      ),
      -- Priority first; within a priority the keys (and the unkeyed jobs, as one more) take turns.
      candidates AS (
        SELECT u.id, u.ctid, u.concurrency_key, u.rate_key, u.priority, u.next_run_at FROM (
          SELECT id, ctid, concurrency_key, rate_key, priority, next_run_at, turn FROM plain
          UNION ALL
          SELECT id, ctid, concurrency_key, rate_key, priority, next_run_at, turn FROM fair
        ) u
        ORDER BY u.priority DESC, u.turn, u.next_run_at, u.id
        LIMIT ${limit}::int
      ),
      ${admission},
      -- Each claimed job's attempt number in its trail (job_events' sequence): its LEASED event's place, and
      -- with markRunning its RUNNING event's (right after).
      -- One row of two aligned arrays, read per claimed row by array_position (a linear scan in C): a lookup in
      -- a CTE of one row per job rescanned it for every claimed row.
      -- The same arrays carry each job's concurrency seat.
      numbers AS MATERIALIZED (
        SELECT array_agg(x.id) AS ids, array_agg(x.seq) AS seqs, array_agg(x.concurrency_seat) AS seats
          FROM (SELECT id, nextval('runledger.job_events_seq_seq') AS seq, concurrency_seat FROM admitted) x
      ),
      claimed AS (
        UPDATE runledger.job_queue jq
           SET status = 'LEASED',
               attempt = jq.attempt + 1,
               lease_owner = ${workerId},
               lease_expires_at = now() + make_interval(secs => ${leaseSeconds}::int),
               heartbeat_at = now(),
               started_at = CASE WHEN ${markRunning}::boolean THEN COALESCE(jq.started_at, now()) ELSE jq.started_at END,
               updated_at = now(),
               -- The open attempt, on the job row (src/queue/attempt-row.ts): no attempt or event row is written.
               attempt_seq = (SELECT n.seqs[array_position(n.ids, jq.id)] FROM numbers n),
               attempt_worker_id = ${workerId},
               attempt_started_at = now(),
               attempt_leased_until = now() + make_interval(secs => ${leaseSeconds}::int),
               attempt_running_seq = CASE WHEN ${markRunning}::boolean THEN (SELECT n.seqs[array_position(n.ids, jq.id)] FROM numbers n) END,
               attempt_running_at = CASE WHEN ${markRunning}::boolean THEN now() END,
               attempt_closed_seq = NULL
         -- By the tuple ids the candidates locked, through an InitPlan: a TID scan, the same plan whatever the
         -- candidates' row estimate, without finding each row again in the primary key (a quarter of the
         -- claim's buffers). A locked row cannot move; a candidate whose locked version is newer than this
         -- statement's snapshot is not visible here and stays PENDING (claimed by a later claim).
         WHERE jq.ctid = ANY(ARRAY(SELECT ctid FROM admitted))
        RETURNING jq.id, jq.run_number, jq.attempt, jq.lease_owner, jq.lease_expires_at, jq.job_type, jq.organization_id,
                  jq.payload, jq.checkpoint, jq.progress, jq.timeout_seconds, jq.max_attempts, jq.priority, jq.next_run_at,
                  jq.workflow_step_id, jq.workflow_step_id IS NOT NULL AS workflow_managed, jq.resource_key,
                  jq.trace_context, jq.stage, jq.concurrency_key, jq.rate_key, jq.fair_key,
                  CASE WHEN jq.concurrency_key IS NOT NULL THEN (SELECT n.seats[array_position(n.ids, jq.id)] FROM numbers n) END AS concurrency_seat
      ),
      leased AS (${insertLeaseRows('claimed')}),
      ${takeConcurrencySeats('claimed')},
      ${takeRateTokens('claimed')},
      numbered AS (
        SELECT claimed.*, row_number() OVER (ORDER BY priority DESC, next_run_at, id)::int AS n FROM claimed
      )
      -- A workflow job's step and its prerequisites' outcomes, for the handler context. The statement's snapshot
      -- holds them final: a job becomes PENDING in the transaction that made its prerequisites terminal, and
      -- terminal steps do not change.
      -- A direct job pays one probe of the primary key with NULL.
      -- Always one row at least: with no job claimed, one row of NULLs carrying the fairness cursor.
      SELECT c.id, c.run_number, c.attempt, c.lease_owner, c.lease_expires_at, c.job_type, c.organization_id, c.payload,
             c.checkpoint, c.progress, c.timeout_seconds, c.max_attempts, c.workflow_managed, c.resource_key, c.concurrency_key, c.rate_key, c.fair_key, c.stage,
             cur.fair_next,
             s.workflow_run_id AS step_run_id, s.step_key, s.prerequisites, s.function_record,
             COALESCE(c.trace_context, s.run_trace_context) AS trace_context,
             (extract(epoch FROM now() - c.next_run_at) * 1000)::float8 AS queue_wait_ms
        FROM (SELECT ${FAIR_NEXT}) cur
        LEFT JOIN numbered c ON true
        LEFT JOIN LATERAL (
          SELECT ws.workflow_run_id, ws.step_key,
                 COALESCE((
                   SELECT jsonb_agg(jsonb_build_object(
                            'key', p.step_key, 'status', p.status, 'releaseMode', d.release_mode, 'jobType', p.job_type,
                            'output', CASE WHEN p.status = 'SUCCEEDED' THEN p.output END) ORDER BY p.step_key)
                     FROM runledger.workflow_step_dependencies d
                     JOIN runledger.workflow_steps p ON p.id = d.prerequisite_step_id
                    WHERE d.dependent_step_id = ws.id), '[]'::jsonb) AS prerequisites,
                 (SELECT wr.trace_context FROM runledger.workflow_runs wr WHERE wr.id = ws.workflow_run_id) AS run_trace_context,
                 -- A durable function's body: the run's recorded steps, so its attempt starts without a read
                 -- (claimed-function-record.ts). Only its own lease writes them, and the lease is this claim's.
                 CASE WHEN ws.step_key = ${FUNCTION_STEP_KEY} THEN (
                   SELECT jsonb_build_object(
                            'now', extract(epoch FROM clock_timestamp()) * 1000,
                            'steps', COALESCE(jsonb_agg(jsonb_build_array(fs.step_key, fs.call_index, fs.output) ORDER BY fs.call_index), '[]'::jsonb))
                     FROM runledger.workflow_steps fs
                    WHERE fs.workflow_run_id = ws.workflow_run_id AND fs.execution_kind = 'FUNCTION'
                 ) END AS function_record
            FROM runledger.workflow_steps ws
           WHERE ws.id = c.workflow_step_id
        ) s ON true
       ORDER BY c.n`;
}

/**
 * The claim scans' LIMIT, written as a literal (see claimJobs): the smallest bucket at or above `limit`,
 * so a worker whose claim size varies with its free slots shares a few statements, not one per size.
 * Static text from this table, never from input.
 */
const LIMIT_BUCKETS: readonly (readonly [number, Sql])[] = [
  [1, sqltag`1`],
  [2, sqltag`2`],
  [4, sqltag`4`],
  [8, sqltag`8`],
  [16, sqltag`16`],
  [32, sqltag`32`],
  [64, sqltag`64`],
  [128, sqltag`128`],
  [256, sqltag`256`],
  [512, sqltag`512`],
  [1024, sqltag`1024`],
];

/**
 * A generic plan costs the outer `LIMIT limit` parameter as a tenth of the scan's rows (at most the bucket), and
 * PostgreSQL keeps it only when that costs no more than the custom plans did: a bucket at most 8x the limit keeps
 * the generic plan behind any backlog (queue-claim-generic-plan.test.ts).
 */
const COARSE_BUCKETS = new Set([1, 8, 64, 512, 1024]);

export function limitBucket(limit: number, spacing: 'fine' | 'coarse' = 'fine'): Sql {
  const found = LIMIT_BUCKETS.find(([size]) => size >= limit && (spacing === 'fine' || COARSE_BUCKETS.has(size)));
  if (!found) throw new RangeError(`claim limit ${limit} is above the largest bucket`);
  return found[1];
}

/**
 * The execution-resource condition of a candidate (see the header): no key, or the key free and this job its
 * head, tested by `runledger.resource_claimable` (migration 20261206000001_claim_plans: one index probe per
 * test, only for jobs with a key; the `IS NULL` arm short-circuits the rest). A function rather than inline
 * subqueries so the planner costs it as one cheap test and keeps the ordered index scan. A claim reads past
 * the blocked jobs ahead of the first runnable ones, so a deep backlog of one key ahead of other work costs
 * each claim in proportion to that backlog (docs/operate/performance.md says so).
 */
const RESOURCE_FREE_HEAD = sqltag`(jq.resource_key IS NULL OR runledger.resource_claimable(jq.resource_key, jq.id))`;
