/**
 * Continuing a batch of leases (src/queue/continue.ts runs it and explains the transition). Lock order:
 * job rows in id order (rung 1), then their step rows (rung 2a); the lease clock: src/queue/lifecycle.ts.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { LIVE_JOB_STEP, stepStartedAt } from '../../coordination/step-state.js';
import { CLEAR_LEASE, leaseIdentity, leaseLive } from '../../db/fragments.js';
import { JOB_AVAILABLE_CHANNEL } from '../../model/constants.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from '../attempt-row.js';
import { LEASE_ROW_KEY, endLeaseRows } from './lease-rows.js';

/** The step status reason of a continued job's step. */
export const CONTINUED_STEP_REASON = 'job.continued';

/** The batch, one array per column (aligned): each lease, its delay, and the checkpoint/progress to set (`set*` false: keep). */
export interface ContinueColumns {
  jobIds: string[];
  runNumbers: number[];
  attempts: number[];
  workerIds: string[];
  delayMs: number[];
  setCheckpoint: boolean[];
  checkpoints: (string | null)[];
  setProgress: boolean[];
  progress: (string | null)[];
  eventIds: string[];
}

export interface ContinuedRow {
  id: string;
  run_number: number | null;
  next_run_at: Date | null;
  not_enabled: boolean;
}

export function continueJobsStatement(c: ContinueColumns): Sql {
  return sqltag`
    WITH input AS (
      SELECT *
        FROM unnest(${c.jobIds}::uuid[], ${c.runNumbers}::int[],
                    ${c.attempts}::int[], ${c.workerIds}::text[],
                    ${c.delayMs}::bigint[],
                    ${c.setCheckpoint}::boolean[], ${c.checkpoints}::jsonb[],
                    ${c.setProgress}::boolean[], ${c.progress}::jsonb[],
                    ${c.eventIds}::uuid[])
             AS i(job_id, run_number, attempt, worker_id, delay_ms, set_checkpoint, checkpoint, set_progress, progress, event_id)
    ),
    -- Rung 1: the batch's job rows in id order, one primary-key probe per lease, carrying the lease's input
    -- (as the completion statement, complete.ts, and for the same reason: no join rescans a CTE per row).
    locked AS MATERIALIZED (
      SELECT jq.id, jq.workflow_step_id, ${ATTEMPT_COLUMNS}, ${LEASE_ROW_KEY},
             jq.workflow_step_id IS NULL
               OR COALESCE((SELECT ws.allow_continuation FROM runledger.workflow_steps ws WHERE ws.id = jq.workflow_step_id), false) AS allowed,
             i.attempt AS slice_attempt, i.delay_ms, i.set_checkpoint, i.checkpoint AS new_checkpoint,
             i.set_progress, i.progress AS new_progress, i.event_id, i.worker_id
        FROM input i
        JOIN runledger.job_queue jq ON ${leaseIdentity({ rows: 'i' })}
       ORDER BY jq.id
         FOR UPDATE OF jq
    ),
    -- Read once the locks are held (the lease clock, lifecycle.ts).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    continued AS (
      UPDATE runledger.job_queue jq
         SET status = 'PENDING', run_number = jq.run_number + 1, attempt = 0,
             -- A durable function woken while this attempt ran (src/coordination/function-wake.ts) is due at once.
             next_run_at = c.at + CASE WHEN jq.wake_requested_at >= k.attempt_started_at THEN 0 ELSE k.delay_ms END
                                  * interval '1 millisecond',
             wake_requested_at = NULL,
             checkpoint = CASE WHEN k.set_checkpoint THEN k.new_checkpoint ELSE jq.checkpoint END,
             progress = CASE WHEN k.set_progress THEN k.new_progress ELSE jq.progress END,
             ${CLEAR_LEASE},
             last_error_code = NULL, last_error_message = NULL, updated_at = c.at, ${CLEAR_ATTEMPT}
        FROM locked k, clock c
       -- Locked with the lease matched; what can have changed since is the clock.
       WHERE jq.id = k.id AND k.allowed
         AND ${leaseLive(sqltag`c.at`)}
      RETURNING jq.id, jq.job_type, jq.run_number, jq.next_run_at, jq.checkpoint, jq.progress, jq.workflow_step_id,
                k.slice_attempt, k.delay_ms, k.event_id, k.worker_id, k.lease_row_expires_at
    ),
    ${endLeaseRows(sqltag`continued`)},
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT event_id, id, 'REQUEUED'::runledger.job_event_type, run_number, 0,
             jsonb_build_object('kind', 'HANDLER_CONTINUATION', 'previousRunNumber', run_number - 1,
                                'previousAttempt', slice_attempt, 'workerId', worker_id, 'delayMs', delay_ms,
                                'nextRunAt', next_run_at, 'checkpoint', checkpoint, 'progress', progress)
        FROM continued
       ORDER BY id
    ),
    -- The slice's attempt moves into job_attempts (src/queue/attempt-row.ts), as run_number - 1.
    ended AS (SELECT c.run_number - 1 AS run_number, c.slice_attempt AS attempt, c.next_run_at, k.*
                FROM continued c JOIN locked k ON k.id = c.id),
    attempts AS (${archiveAttempts(sqltag`ended`, {
      finishedAt: sqltag`(SELECT at FROM clock)`,
      outcome: sqltag`'CONTINUED'`,
      nextRunAt: sqltag`o.next_run_at`,
      requestedNextRunAt: sqltag`o.next_run_at`,
    })}),
    -- Rung 2a: the steps stay live, waiting for the next slice.
    steps AS (
      UPDATE runledger.workflow_steps ws
         SET status = 'ENQUEUED', status_reason = ${CONTINUED_STEP_REASON}, last_error_code = NULL, last_error_message = NULL,
             started_at = ${stepStartedAt(sqltag`(SELECT k.attempt_started_at FROM locked k WHERE k.id = ws.job_id)`)},
             output = NULL, updated_at = now()
       WHERE ws.id = ANY(ARRAY(SELECT workflow_step_id FROM continued WHERE workflow_step_id IS NOT NULL))
         AND ws.status IN ${LIVE_JOB_STEP}
    ),
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type)) AS n
        FROM (SELECT DISTINCT job_type FROM continued WHERE next_run_at <= (SELECT at FROM clock)) t
    )
    SELECT c.id, c.run_number, c.next_run_at, false AS not_enabled FROM continued c CROSS JOIN notified
    UNION ALL
    SELECT l.id, NULL, NULL, true FROM locked l
     WHERE NOT l.allowed
       AND EXISTS (SELECT 1 FROM runledger.job_queue jq JOIN input i ON i.job_id = jq.id
                    WHERE jq.id = l.id AND ${leaseLive(sqltag`(SELECT at FROM clock)`)})`;
}
