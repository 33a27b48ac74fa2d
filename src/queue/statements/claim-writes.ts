/**
 * What both claim statements (claim-jobs.ts, claim-lean.ts) write for the jobs they admitted: the job rows'
 * lease and open attempt, and the lease rows (lock order: job rows, then lease rows; src/queue/claim.ts).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { insertLeaseRows } from './lease-rows.js';

export interface ClaimWrites {
  workerId: string;
  leaseSeconds: number;
  markRunning: boolean;
}

/**
 * CTEs `numbers`, `claimed` and `leased`, over a CTE `admitted` (id, ctid, concurrency_seat) of locked rows.
 * `claimed` returns the claimed rows with their concurrency seat.
 */
export function claimWrites({ workerId, leaseSeconds, markRunning }: ClaimWrites): Sql {
  return sqltag`
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
      leased AS (${insertLeaseRows('claimed')})`;
}
