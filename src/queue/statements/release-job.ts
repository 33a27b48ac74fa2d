/**
 * Giving a lease back unfinished (src/queue/release-lease.ts runs it and states the step rule). Fencing and
 * the lease clock: src/queue/lifecycle.ts.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { LIVE_JOB_STEP } from '../../coordination/step-state.js';
import { CLEAR_LEASE, leaseFence, lockedLeaseAndClock, type LeaseName } from '../../db/fragments.js';
import { JOB_AVAILABLE_CHANNEL } from '../../model/constants.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from '../attempt-row.js';
import { LEASE_ROW_KEY, endLeaseRows, withLeaseRowKey } from './lease-rows.js';

export function releaseJobStatement(l: LeaseName, reason: string, eventId: string): Sql {
  return sqltag`
    WITH ${lockedLeaseAndClock(l, sqltag`, ${ATTEMPT_COLUMNS}, ${LEASE_ROW_KEY}`)},
    released AS (
      UPDATE runledger.job_queue jq
         SET status = 'PENDING', attempt = jq.attempt - 1, next_run_at = c.at,
             ${CLEAR_LEASE}, updated_at = c.at, ${CLEAR_ATTEMPT}
        FROM clock c
       WHERE ${leaseFence(l, sqltag`c.at`)}
      RETURNING jq.id, jq.job_type, jq.run_number, jq.attempt
    ),
    ${endLeaseRows(withLeaseRowKey('released', 'locked'))},
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT ${eventId}::uuid, id, 'RELEASED', run_number, attempt,
             jsonb_build_object('reason', ${reason}::text, 'workerId', ${l.workerId}::text, 'releasedAttempt', ${l.attempt}::int)
        FROM released
    ),
    -- The released attempt moves into job_attempts (src/queue/attempt-row.ts) under the lease's attempt number.
    ended AS (SELECT r.run_number, ${l.attempt}::int AS attempt, k.* FROM released r JOIN locked k ON k.id = r.id),
    attempts AS (${archiveAttempts(sqltag`ended`, {
      finishedAt: sqltag`(SELECT at FROM clock)`,
      outcome: sqltag`'RELEASED'`,
      errorCode: sqltag`${reason}::text`,
      nextRunAt: sqltag`(SELECT at FROM clock)`,
    })}),
    -- The step rule in the module comment; a direct job matches no step row.
    steps AS (
      UPDATE runledger.workflow_steps ws
         SET status = 'ENQUEUED',
             started_at = CASE WHEN (SELECT attempt FROM released) = 0 THEN NULL ELSE ws.started_at END,
             finished_at = NULL, status_reason = NULL, last_error_code = NULL, last_error_message = NULL,
             output = NULL, updated_at = now()
       WHERE ws.job_id = ANY(ARRAY(SELECT id FROM released))
         AND ws.status IN ${LIVE_JOB_STEP}
    ),
    notified AS (SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, job_type)) AS n FROM released)
    SELECT id FROM released CROSS JOIN notified`;
}
