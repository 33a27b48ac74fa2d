/**
 * The reaper's statement: expired leases back to PENDING or DEAD_LETTERED, their events and attempts, the
 * steps of never-started workflow jobs put back (src/queue/reap.ts runs it and says what follows).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { LIVE_JOB_STEP } from '../../coordination/step-state.js';
import { CLEAR_LEASE } from '../../db/fragments.js';
import { JOB_AVAILABLE_CHANNEL } from '../../model/constants.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from '../attempt-row.js';
import { EXPIRED_LEASE_ROWS, deleteLeaseRows, deleteRunOutCanceledLeases } from './lease-rows.js';
import { freeConcurrencySlots } from './concurrency-slots.js';
import { countFinished } from './finished-counts.js';

export const LEASE_EXPIRED_CODE = 'job.lease_expired';
export const LEASE_EXPIRED_MESSAGE = 'The lease expired before the job finished.';

export interface ReapedRow {
  id: string;
  status: 'PENDING' | 'DEAD_LETTERED';
  workflow_managed: boolean;
  started: boolean;
  attempt_started_at: string | null;
}

/** Retries or dead-letters up to `limit` expired leases (src/queue/reap.ts); `eventIds` holds `2 * limit` ids. */
export function reapExpiredLeasesStatement(limit: number, eventIds: readonly string[]): Sql {
  return sqltag`
      WITH expired AS (
        SELECT jq.id, jq.lease_owner, jq.lease_expires_at, l.expires_at AS lease_row_expires_at, jq.attempt AS lease_attempt,
               ${ATTEMPT_COLUMNS},
               -- Started: the lease's attempt recorded RUNNING (markRunning at claim, or markJobRunning).
               jq.attempt_running_seq IS NOT NULL AS started
          FROM ${EXPIRED_LEASE_ROWS}
         LIMIT ${limit}::int
           FOR UPDATE OF jq SKIP LOCKED
      ),
      reaped AS (
        UPDATE runledger.job_queue jq
           SET status = CASE WHEN NOT e.started OR jq.attempt < jq.max_attempts
                             THEN 'PENDING'::runledger.job_status ELSE 'DEAD_LETTERED'::runledger.job_status END,
               attempt = CASE WHEN e.started THEN jq.attempt ELSE jq.attempt - 1 END,
               next_run_at = CASE WHEN NOT e.started OR jq.attempt < jq.max_attempts THEN now() ELSE jq.next_run_at END,
               finished_at = CASE WHEN NOT e.started OR jq.attempt < jq.max_attempts THEN NULL ELSE now() END,
               ${CLEAR_LEASE},
               last_error_code = CASE WHEN e.started THEN ${LEASE_EXPIRED_CODE} ELSE jq.last_error_code END,
               last_error_message = CASE WHEN e.started THEN ${LEASE_EXPIRED_MESSAGE} ELSE jq.last_error_message END,
               updated_at = now(), ${CLEAR_ATTEMPT}
          FROM expired e
         WHERE jq.id = e.id AND jq.status = 'LEASED'
        RETURNING jq.id, jq.status, jq.job_type, jq.run_number, jq.attempt, e.lease_attempt, e.started,
                  e.lease_owner AS expired_owner, e.lease_expires_at AS expired_at,
                  jq.workflow_step_id IS NOT NULL AS workflow_managed,
                  -- As text: the step stores it (src/coordination/step-state.ts) with its microseconds.
                  e.attempt_started_at::text AS attempt_started_at, jq.organization_id, jq.workflow_step_id, jq.finished_at,
                  e.lease_row_expires_at
      ),
      unleased AS (${deleteLeaseRows(sqltag`reaped`)}),
      -- Canceled leases that ran out: their keys' quiescence is over.
      run_out AS (${deleteRunOutCanceledLeases(limit)}),
      ended_leases AS (SELECT concurrency_key, concurrency_seat FROM unleased UNION ALL SELECT concurrency_key, concurrency_seat FROM run_out),
      ${freeConcurrencySlots('ended_leases')},
      counted AS (${countFinished(sqltag`reaped`)}),
      numbered AS (
        SELECT reaped.*, row_number() OVER (ORDER BY expired_at, id)::int AS n FROM reaped
      ),
      -- One INSERT, ordered, so a job's LEASE_EXPIRED event takes a lower seq than its DEAD_LETTERED event.
      events AS (
        INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
        SELECT e.event_id, e.job_id, e.event_type, e.run_number, e.attempt, e.payload
          FROM (
            SELECT (${eventIds as string[]}::uuid[])[n] AS event_id, id AS job_id, 'LEASE_EXPIRED'::runledger.job_event_type AS event_type,
                   run_number, attempt,
                   jsonb_build_object('workerId', expired_owner, 'leaseExpiresAt', expired_at, 'started', started,
                                      'leaseAttempt', lease_attempt) AS payload,
                   n, 0 AS phase
              FROM numbered
            UNION ALL
            SELECT (${eventIds as string[]}::uuid[])[n + ${limit}::int], id, 'DEAD_LETTERED'::runledger.job_event_type, run_number, attempt,
                   jsonb_build_object('code', ${LEASE_EXPIRED_CODE}::text, 'message', ${LEASE_EXPIRED_MESSAGE}::text, 'reason', 'attempts_exhausted'),
                   n, 1
              FROM numbered
             WHERE status = 'DEAD_LETTERED'
          ) e
         ORDER BY e.n, e.phase
      ),
      -- The expired lease's attempt moves into job_attempts (src/queue/attempt-row.ts): its error when a handler
      -- ran, its next run time when the job goes back.
      ended AS (
        SELECT r.run_number, r.status, x.lease_attempt AS attempt, x.* FROM reaped r JOIN expired x ON x.id = r.id
      ),
      attempts AS (${archiveAttempts(sqltag`ended`, {
        finishedAt: sqltag`now()`,
        outcome: sqltag`'LEASE_EXPIRED'`,
        errorCode: sqltag`CASE WHEN o.started THEN ${LEASE_EXPIRED_CODE} END`,
        errorMessage: sqltag`CASE WHEN o.started THEN ${LEASE_EXPIRED_MESSAGE} END`,
        nextRunAt: sqltag`CASE WHEN o.status = 'PENDING' THEN now() END`,
      })}),
      -- Steps of never-started workflow jobs: put back as unclaimed (the rule in src/queue/release-lease.ts). The
      -- InitPlans run the job UPDATE to completion first, so job rows are locked before step rows.
      unclaimed_steps AS (
        UPDATE runledger.workflow_steps ws
           SET status = 'ENQUEUED',
               started_at = CASE WHEN ws.job_id = ANY(ARRAY(SELECT id FROM reaped WHERE NOT started AND attempt = 0))
                                 THEN NULL ELSE ws.started_at END,
               finished_at = NULL, status_reason = NULL, last_error_code = NULL, last_error_message = NULL,
               output = NULL, updated_at = now()
         WHERE ws.job_id = ANY(ARRAY(SELECT id FROM reaped WHERE NOT started AND workflow_managed))
           AND ws.status IN ${LIVE_JOB_STEP}
      ),
      -- Retried jobs are runnable now: wake listening workers (polling would find them too, later).
      notified AS (
        SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type)) AS n
          FROM (SELECT DISTINCT job_type FROM numbered WHERE status = 'PENDING') t
      )
      SELECT id, status, workflow_managed, started, attempt_started_at FROM numbered CROSS JOIN notified ORDER BY numbered.n`;
}
