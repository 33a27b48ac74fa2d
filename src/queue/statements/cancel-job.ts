/**
 * Canceling one job the caller has locked (src/queue/cancel.ts runs it).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { JOB_ROW_COLUMNS, type JobRow } from '../../model/job-rows.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from '../attempt-row.js';
import { LEASE_ROW_KEY, cancelLeaseRows, withLeaseRowKey } from './lease-rows.js';
import { countFinished } from './finished-counts.js';

export type CanceledJobRow = JobRow & { workflow_managed: boolean; ended_attempt_started_at: string | null };

/** Cancels the locked job `jobId` (PENDING or LEASED, `previousStatus`), with its event and ended attempt. */
export function cancelJobStatement(jobId: string, previousStatus: string, reason: string | null, eventId: string): Sql {
  return sqltag`
      -- The cancellation time is read now that the row is locked (the statement above), not this transaction's
      -- now(): the lock wait, or a caller's transaction begun earlier, can put now() before the job's creation
      -- (a workflow release) or its claim, which committed first. Time follows cause.
      WITH clock AS MATERIALIZED (SELECT clock_timestamp() AS at),
      -- The row as locked above (this statement's snapshot), before the update: its attempt, if leased.
      before AS (SELECT jq.id, jq.run_number, jq.attempt, ${ATTEMPT_COLUMNS}, ${LEASE_ROW_KEY} FROM runledger.job_queue jq WHERE jq.id = ${jobId}::uuid),
      canceled AS (
        UPDATE runledger.job_queue jq
           SET status = 'CANCELED', lease_owner = NULL, heartbeat_at = NULL,
               finished_at = c.at, updated_at = c.at, ${CLEAR_ATTEMPT}
          FROM clock c
         WHERE jq.id = ${jobId}::uuid AND jq.status IN ('PENDING', 'LEASED')
        RETURNING ${JOB_ROW_COLUMNS},
                  jq.workflow_step_id IS NOT NULL AS workflow_managed, jq.workflow_step_id
      ),
      quiescing AS (${cancelLeaseRows(withLeaseRowKey('canceled', 'before'))}),
      counted AS (${countFinished(sqltag`canceled`)}),
      events AS (
        INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload, created_at)
        SELECT ${eventId}::uuid, id, 'CANCELED'::runledger.job_event_type, run_number, attempt,
               jsonb_build_object('previousStatus', ${previousStatus}::text, 'reason', ${reason}::text), finished_at
          FROM canceled
      ),
      -- A leased job's attempt ends with the cancellation (its handler may still run until the lease expires), and
      -- moves into job_attempts (src/queue/attempt-row.ts).
      ended AS (SELECT b.* FROM before b WHERE b.id IN (SELECT id FROM canceled)),
      attempts AS (${archiveAttempts(sqltag`ended`, {
        finishedAt: sqltag`(SELECT at FROM clock)`,
        outcome: sqltag`'CANCELED'`,
        errorMessage: sqltag`${reason}::text`,
      })})
      -- The ended attempt's start, as text (microseconds kept), for the step's started_at (step-state.ts).
      SELECT c.*, (SELECT e.attempt_started_at::text FROM ended e) AS ended_attempt_started_at FROM canceled c`;
}
