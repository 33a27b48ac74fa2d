/**
 * Failing one lease: a retry or a dead-letter (src/queue/fail.ts runs it). Fencing and the lease clock:
 * src/queue/lifecycle.ts.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { LIVE_JOB_STEP, stepStartedAt } from '../../coordination/step-state.js';
import { CLEAR_LEASE, leaseFence, leaseIdentity, type LeaseName } from '../../db/fragments.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from '../attempt-row.js';
import { LEASE_ROW_KEY, endLeaseRows, withLeaseRowKey } from './lease-rows.js';
import { countFinished } from './finished-counts.js';

/** What the failure statement records besides the lease. */
export interface FailureFields {
  code: string;
  message: string;
  stack?: string | undefined;
  retryable: boolean;
  retryNotBefore?: Date | undefined;
}

export interface FailedRow {
  status: 'PENDING' | 'DEAD_LETTERED';
  next_run_at: Date;
  workflow_step_id: string | null;
  /** Set when the job's step became terminal (FAILED) in this statement. */
  step_run_id: string | null;
  has_dependents: boolean | null;
}

/** The retry delay from the worker's policy, and the jitter fraction in [0, 1) it was drawn with. */
export interface Backoff {
  delayMs: number;
  jitter: number;
}

export function failJobStatement(l: LeaseName, o: FailureFields, b: Backoff, eventId: string, directOnly: boolean): Sql {
  return sqltag`
    WITH locked AS MATERIALIZED (
      SELECT jq.id, ${ATTEMPT_COLUMNS}, ${LEASE_ROW_KEY} FROM runledger.job_queue jq
       WHERE ${leaseIdentity(l)}
         AND (NOT ${directOnly}::boolean OR jq.workflow_step_id IS NULL)
         FOR UPDATE
    ),
    -- Read after the lock above is held (see markJobRunning).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    failed AS (
      UPDATE runledger.job_queue jq
         SET status = CASE WHEN ${o.retryable}::boolean AND jq.attempt < jq.max_attempts
                           THEN 'PENDING'::runledger.job_status ELSE 'DEAD_LETTERED'::runledger.job_status END,
             next_run_at = CASE WHEN ${o.retryable}::boolean AND jq.attempt < jq.max_attempts
                                -- The row's own backoff (enqueue's or step's) over the worker's: retryDelayMs's formula
                                -- (retry-policy.ts) with the same jitter fraction, rounded half up.
                                THEN GREATEST(now() + (CASE WHEN jq.backoff_base_ms IS NULL THEN ${b.delayMs}::float8
                                   ELSE floor(LEAST(jq.backoff_max_ms::float8,
                                                    jq.backoff_base_ms::float8 * power(2::float8, LEAST(GREATEST(jq.attempt - 1, 0), 52)))
                                              * (0.5 + ${b.jitter}::float8 / 2) + 0.5) END) * interval '1 millisecond',
                                   ${o.retryNotBefore ?? null}::timestamptz)
                                ELSE jq.next_run_at END,
             finished_at = CASE WHEN ${o.retryable}::boolean AND jq.attempt < jq.max_attempts THEN NULL ELSE now() END,
             ${CLEAR_LEASE},
             last_error_code = ${o.code}, last_error_message = ${o.message}, updated_at = now(), ${CLEAR_ATTEMPT}
       WHERE ${leaseFence(l, sqltag`(SELECT at FROM clock)`)}
         AND jq.id IN (SELECT id FROM locked)
      RETURNING jq.id, jq.status, jq.next_run_at, jq.run_number, jq.attempt, jq.max_attempts, jq.workflow_step_id,
                jq.organization_id, jq.job_type, jq.finished_at
    ),
    ${endLeaseRows(withLeaseRowKey('failed', 'locked'))},
    counted AS (${countFinished(sqltag`failed`)}),
    steps AS (
      UPDATE runledger.workflow_steps ws
         SET status = CASE WHEN f.status = 'PENDING' THEN 'ENQUEUED' ELSE 'FAILED' END::runledger.workflow_step_status,
             finished_at = CASE WHEN f.status = 'PENDING' THEN NULL ELSE COALESCE(ws.finished_at, now()) END,
             status_reason = CASE WHEN f.status = 'PENDING' THEN 'job.retry_scheduled' ELSE NULL END,
             last_error_code = ${o.code}, last_error_message = ${o.message},
             started_at = ${stepStartedAt(sqltag`k.attempt_started_at`)},
             output = NULL, updated_at = now()
        FROM failed f JOIN locked k ON k.id = f.id
       WHERE ws.id = f.workflow_step_id
         AND (CASE WHEN f.status = 'PENDING' THEN ws.status IN ${LIVE_JOB_STEP} ELSE ws.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED') END)
      RETURNING ws.id, ws.workflow_run_id, ws.status,
                EXISTS (SELECT 1 FROM runledger.workflow_step_dependencies e WHERE e.prerequisite_step_id = ws.id) AS has_dependents
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT ${eventId}::uuid, id,
             CASE WHEN status = 'PENDING' THEN 'RETRY_SCHEDULED'::runledger.job_event_type
                  ELSE 'DEAD_LETTERED'::runledger.job_event_type END,
             run_number, attempt,
             CASE WHEN status = 'PENDING'
                  THEN jsonb_build_object('code', ${o.code}::text, 'message', ${o.message}::text,
                                          'delayMs', round(EXTRACT(EPOCH FROM (next_run_at - now())) * 1000)::bigint,
                                          'nextRunAt', next_run_at)
                  ELSE jsonb_build_object('code', ${o.code}::text, 'message', ${o.message}::text,
                                          'reason', CASE WHEN ${o.retryable}::boolean THEN 'attempts_exhausted' ELSE 'terminal' END)
             END
        FROM failed
    ),
    -- The lease's attempt closes with the delay it got and where that came from: the handler's retry-not-before
    -- when it decided the time (later than the backoff), the policy otherwise.
    ended AS (SELECT f.run_number, f.attempt, f.status, f.next_run_at, k.* FROM failed f JOIN locked k ON k.id = f.id),
    attempts AS (${archiveAttempts(sqltag`ended`, {
      finishedAt: sqltag`now()`,
      outcome: sqltag`CASE WHEN o.status = 'PENDING' THEN 'FAILED_RETRY' ELSE 'DEAD_LETTERED' END`,
      errorCode: sqltag`${o.code}::text`,
      errorMessage: sqltag`${o.message}::text`,
      errorStack: sqltag`${o.stack ?? null}::text`,
      retryDelayMs: sqltag`CASE WHEN o.status = 'PENDING' THEN round(EXTRACT(EPOCH FROM (o.next_run_at - now())) * 1000)::bigint END`,
      retryDelaySource: sqltag`CASE WHEN o.status <> 'PENDING' THEN NULL
                                    WHEN o.next_run_at = ${o.retryNotBefore ?? null}::timestamptz THEN 'HANDLER_NOT_BEFORE'
                                    ELSE 'POLICY' END`,
      requestedNextRunAt: sqltag`${o.retryNotBefore ?? null}::timestamptz`,
      nextRunAt: sqltag`CASE WHEN o.status = 'PENDING' THEN o.next_run_at END`,
    })}    )
    SELECT f.status, f.next_run_at, f.workflow_step_id,
           CASE WHEN s.status = 'FAILED' THEN s.workflow_run_id END AS step_run_id, s.has_dependents
      FROM failed f LEFT JOIN steps s ON s.id = f.workflow_step_id`;
}
