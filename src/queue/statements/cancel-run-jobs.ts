/**
 * Canceling a run's live jobs, whose rows the caller has locked (src/workflow/cancel.ts runs it).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from '../attempt-row.js';
import { cancelLeaseRows } from './lease-rows.js';
import { countFinished } from './finished-counts.js';

/** The error code a canceled run's steps and jobs record. */
export const WORKFLOW_RUN_CANCELED = 'workflow.run_canceled';

/** Cancels the PENDING and LEASED jobs among `jobIds` (a leased one keeps its expiry: the quiescence marker) at `at`. */
export function cancelRunJobsStatement(jobIds: string[], eventIds: readonly string[], runId: string, reason: string, at: string): Sql {
  return sqltag`
        -- The rows as locked above (this statement's snapshot), before the update: the leased ones' attempts.
        WITH before AS (SELECT jq.id, jq.run_number, jq.attempt, ${ATTEMPT_COLUMNS} FROM runledger.job_queue jq WHERE jq.id = ANY(${jobIds}::uuid[])),
        canceled AS (
          UPDATE runledger.job_queue
             SET status = 'CANCELED', ${CLEAR_ATTEMPT},
                 lease_owner = NULL,
                 heartbeat_at = NULL,
                 lease_expires_at = CASE WHEN status = 'LEASED' THEN lease_expires_at END,
                 finished_at = ${at}::timestamptz,
                 last_error_code = ${WORKFLOW_RUN_CANCELED},
                 last_error_message = ${reason},
                 updated_at = ${at}::timestamptz
           WHERE id = ANY(${jobIds}::uuid[]) AND status IN ('PENDING', 'LEASED')
          -- A leased row keeps its expiry (as locked): the key of its lease row.
          RETURNING id, run_number, attempt, organization_id, job_type, status, finished_at, workflow_step_id,
                    lease_expires_at AS lease_row_expires_at
        ),
        quiescing AS (${cancelLeaseRows(sqltag`canceled`)}),
        counted AS (${countFinished(sqltag`canceled`)}),
        numbered AS (SELECT c.*, row_number() OVER (ORDER BY c.id) AS n FROM canceled c),
        -- Leased jobs' attempts end with the cancellation (src/queue/cancel.ts), moved into job_attempts.
        ended AS (SELECT b.* FROM before b WHERE b.id IN (SELECT id FROM canceled)),
        attempts AS (${archiveAttempts(sqltag`ended`, {
          finishedAt: sqltag`${at}::timestamptz`,
          outcome: sqltag`'CANCELED'`,
          errorCode: sqltag`${WORKFLOW_RUN_CANCELED}::text`,
          errorMessage: sqltag`${reason}::text`,
        })})
        INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload, created_at)
        SELECT (${eventIds as string[]}::uuid[])[n], id, 'CANCELED', run_number, attempt,
               json_build_object('reason', ${reason}::text, 'workflowRunId', ${runId}::text)::jsonb, ${at}::timestamptz
          FROM numbered`;
}
