/**
 * Completing a batch of leases (src/queue/complete.ts runs it). Lock order and the lease clock:
 * src/coordination/locking.ts and src/queue/lifecycle.ts.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { boundedReleaseLocksShared } from '../../coordination/locking.js';
import { stepStartedAt } from '../../coordination/step-state.js';
import { CLEAR_LEASE, leaseIdentity, leaseLive } from '../../db/fragments.js';
import { countFinished } from './finished-counts.js';
import type { JsonValue } from '../../model/json.js';
import { LEASE_ROW_KEY, endLeaseRows } from './lease-rows.js';

/** A lease to complete and its output. */
export interface CompleteItem {
  lease: { jobId: string; runNumber: number; attempt: number; workerId: string };
  output?: JsonValue | null | undefined;
}

export interface CompletedRow {
  id: string;
  run_number: number;
  attempt: number;
  worker_id: string;
  finished_at: Date;
  workflow_step_id: string | null;
  /** Set when the job's step became terminal in this statement. */
  step_run_id: string | null;
  has_dependents: boolean | null;
}

/**
 * The completion statement for a set of leases: job rows (locked in id
 * order, rung 1; each keeps its attempt, closed: src/queue/attempt-row.ts), and the steps of workflow-managed
 * ones (locked in id order, rung 2a) moved to SUCCEEDED with the output, all
 * in one statement, which then takes the release locks (rung 3) of the runs
 * whose new terminal steps have dependents. A step already terminal (a
 * cancellation got there first) is left as it is. `directOnly` leaves workflow-managed jobs untouched (not
 * even locked): the autocommit path, whose result needs no release.
 *
 * The fence compares with `clock_timestamp()` read once the rows are locked,
 * the moment of the write, not the statement's start: a write that waited for
 * a row past the lease's expiry is refused.
 */
export function completeJobsStatement(items: readonly CompleteItem[], directOnly: boolean): Sql {
  const batch = JSON.stringify(
    items.map(({ lease: l, output }) => ({ job_id: l.jobId, run_number: l.runNumber, attempt: l.attempt, worker_id: l.workerId, output: output ?? null })),
  );
  const written = sqltag`
    -- One jsonb parameter for the batch (as enqueue's insertJobsTx: cheaper to send than an array per column).
    -- A JSON null output reads as SQL NULL, as it is stored.
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${batch}::jsonb) AS i(job_id uuid, run_number int, attempt int, worker_id text, output jsonb)
    ),
    -- Rung 1: the batch's job rows, in id order, so two overlapping batches cannot deadlock. Driven by the
    -- input, one primary-key probe per lease: the status and direct-only tests are written so no partial
    -- index matches them (docs/operate/performance.md, "Plans the hot statements keep").
    locked AS MATERIALIZED (
      SELECT jq.id, i.worker_id, i.output, ${LEASE_ROW_KEY}
        FROM input i
        JOIN runledger.job_queue jq ON ${leaseIdentity({ rows: 'i' })}
       WHERE ${leaseLive(sqltag`clock_timestamp()`)}
         AND (jq.workflow_step_id IS NULL OR NOT ${directOnly}::boolean) IS TRUE
       ORDER BY jq.id
         FOR UPDATE OF jq
    ),
    -- Read once every lock above is held: a row another transaction only locked is not re-checked after the
    -- wait, so the fence below compares with the time of the write (see markJobRunning).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    done AS (
      UPDATE runledger.job_queue jq
         SET status = 'SUCCEEDED', ${CLEAR_LEASE},
             output = k.output, finished_at = now(), updated_at = now(),
             -- The attempt stays on the job row, closed: its number is the trail's SUCCEEDED event
             -- (src/queue/attempt-row.ts). No attempt or event row is written.
             attempt_closed_seq = CASE WHEN jq.attempt_seq IS NOT NULL THEN nextval('runledger.job_events_seq_seq') END
        FROM locked k
       -- The rows are locked with their lease matched; what can have changed since is the clock.
       WHERE jq.id = k.id AND ${leaseLive(sqltag`(SELECT at FROM clock)`)}
      RETURNING jq.id, jq.run_number, jq.attempt, k.worker_id, jq.finished_at, jq.output, jq.workflow_step_id, jq.attempt_started_at,
                jq.organization_id, jq.job_type, jq.status, k.lease_row_expires_at
    ),
    ${endLeaseRows(sqltag`done`)},
    counted AS (${countFinished(sqltag`done`)})`;
  // Direct jobs only: no step can change, so the statement has no step or release-lock part (a plan that names
  // them opens their tables and indexes on every call, which costs more than a small batch's own work).
  if (directOnly) {
    return sqltag`${written}
    SELECT d.id, d.run_number, d.attempt, d.worker_id, d.finished_at, d.workflow_step_id,
           NULL::uuid AS step_run_id, NULL::boolean AS has_dependents
      FROM done d`;
  }
  return sqltag`${written},
    -- Rung 2a: the steps of the workflow-managed jobs, in id order.
    -- Each carries its job's outcome, so the update below is driven by it alone, one primary-key probe per step
    -- (a semi-join against this CTE rescanned it for every step).
    steps_locked AS MATERIALIZED (
      SELECT ws.id, d.output, d.attempt_started_at
        FROM (SELECT * FROM done WHERE workflow_step_id IS NOT NULL ORDER BY workflow_step_id OFFSET 0) d
       CROSS JOIN LATERAL (SELECT ws.id FROM runledger.workflow_steps ws WHERE ws.id = d.workflow_step_id FOR UPDATE) ws
    ),
    steps AS (
      UPDATE runledger.workflow_steps ws
         SET status = 'SUCCEEDED', finished_at = COALESCE(ws.finished_at, now()),
             status_reason = NULL, last_error_code = NULL, last_error_message = NULL,
             started_at = ${stepStartedAt(sqltag`d.attempt_started_at`)},
             output = d.output, updated_at = now()
        FROM steps_locked d
       WHERE ws.id = d.id
         AND ws.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED')
      RETURNING ws.id, ws.workflow_run_id,
                EXISTS (SELECT 1 FROM runledger.workflow_step_dependencies e WHERE e.prerequisite_step_id = ws.id) AS has_dependents
    ),
    -- Rung 3 in the same statement: the release locks (shared) of the runs whose new terminal steps have
    -- dependents, in run id order, after every job and step lock above (\`prev\` reads \`steps\` whole), with
    -- a bounded wait (see src/coordination/locking.ts); the caller's lock_timeout is read first and restored
    -- last (\`restored\` is the outer side of the final join, so it always runs).
    ${boundedReleaseLocksShared(sqltag`SELECT DISTINCT workflow_run_id AS id FROM steps WHERE has_dependents ORDER BY 1`, sqltag`, (SELECT count(*) FROM steps) AS n`)},
    -- The steps as one row of aligned arrays, read per job by array_position (a join of the two CTEs was a
    -- nested loop rescanning one for every row of the other).
    step_arrays AS MATERIALIZED (
      SELECT array_agg(id) AS ids, array_agg(workflow_run_id) AS runs, array_agg(has_dependents) AS dependents FROM steps
    )
    SELECT x.* FROM restored LEFT JOIN (
      SELECT d.id, d.run_number, d.attempt, d.worker_id, d.finished_at, d.workflow_step_id,
             sa.runs[array_position(sa.ids, d.workflow_step_id)] AS step_run_id,
             sa.dependents[array_position(sa.ids, d.workflow_step_id)] AS has_dependents
        FROM done d CROSS JOIN step_arrays sa
    ) x ON true
     WHERE x.id IS NOT NULL`;
}
