/**
 * Reaping: leases whose expiry has passed belong to workers that crashed or
 * stalled. One statement handles a bounded batch:
 *   attempt < max_attempts -> PENDING, runnable now          (LEASE_EXPIRED)
 *   otherwise              -> DEAD_LETTERED, job.lease_expired (LEASE_EXPIRED, DEAD_LETTERED)
 * The stale worker's later writes fail their lease fence (status and owner
 * changed), so its result is never recorded over the next attempt's.
 *
 * Lock order: job rows oldest expiry first with SKIP LOCKED (a row a worker is
 * completing right now is left for the next pass, never waited for), then
 * step rows in the workflow hooks.
 */
import type { Db } from '../client/types.js';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import { JOB_AVAILABLE_CHANNEL } from '../db/constants.js';
import { newIds } from '../db/ids.js';
import { parseInput } from '../validation/parse.js';
import { markWorkflowStepsEnqueuedForRetry, processWorkflowJobTerminals } from '../workflow/job-hooks.js';
import { JOB_INVALID_INPUT, reapExpiredLeasesInputSchema, type ReapExpiredLeasesInput } from './schemas.js';

export const LEASE_EXPIRED_CODE = 'job.lease_expired';
const LEASE_EXPIRED_MESSAGE = 'The lease expired before the job finished.';

export interface ReapResult {
  /** Back to PENDING for another attempt. */
  retried: string[];
  /** Out of attempts. */
  deadLettered: string[];
}

/**
 * Retries or dead-letters up to `limit` jobs whose lease has expired. Call it
 * in a loop until both lists come back shorter than `limit`.
 */
export async function reapExpiredLeases(db: Db, input: ReapExpiredLeasesInput): Promise<ReapResult> {
  const { limit } = parseInput(reapExpiredLeasesInputSchema, input, JOB_INVALID_INPUT);
  // All LEASE_EXPIRED ids precede all DEAD_LETTERED ids, so a job's events sort as they happened.
  const eventIds = newIds(limit * 2);
  return withTransaction(db, 'reap expired leases', async (context) => {
    // Before the first write: dead-lettering a workflow job releases steps, which needs READ COMMITTED.
    await ensureReadCommitted(context, 'job.reap_unsupported_isolation', 'Reaping expired leases');
    const { tx } = context;
    const rows = await tx.$queryRaw<{ id: string; status: 'PENDING' | 'DEAD_LETTERED'; workflow_managed: boolean }[]>`
      WITH expired AS (
        SELECT id, lease_owner, lease_expires_at
          FROM runledger.job_queue
         WHERE status = 'LEASED' AND lease_expires_at <= now()
         ORDER BY lease_expires_at, id
         LIMIT ${limit}::int
           FOR UPDATE SKIP LOCKED
      ),
      reaped AS (
        UPDATE runledger.job_queue jq
           SET status = CASE WHEN jq.attempt < jq.max_attempts
                             THEN 'PENDING'::runledger.job_status ELSE 'DEAD_LETTERED'::runledger.job_status END,
               next_run_at = CASE WHEN jq.attempt < jq.max_attempts THEN now() ELSE jq.next_run_at END,
               finished_at = CASE WHEN jq.attempt < jq.max_attempts THEN NULL ELSE now() END,
               lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL,
               last_error_code = ${LEASE_EXPIRED_CODE}, last_error_message = ${LEASE_EXPIRED_MESSAGE},
               updated_at = now()
          FROM expired e
         WHERE jq.id = e.id AND jq.status = 'LEASED'
        RETURNING jq.id, jq.status, jq.job_type, jq.run_number, jq.attempt, e.lease_owner AS expired_owner,
                  e.lease_expires_at AS expired_at,
                  jq.workflow_step_id IS NOT NULL AS workflow_managed
      ),
      numbered AS (
        SELECT reaped.*, row_number() OVER (ORDER BY expired_at, id)::int AS n FROM reaped
      ),
      -- One INSERT, ordered, so a job's LEASE_EXPIRED event takes a lower seq than its DEAD_LETTERED event.
      events AS (
        INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
        SELECT e.event_id, e.job_id, e.event_type, e.run_number, e.attempt, e.payload
          FROM (
            SELECT (${eventIds}::uuid[])[n] AS event_id, id AS job_id, 'LEASE_EXPIRED'::runledger.job_event_type AS event_type,
                   run_number, attempt, jsonb_build_object('workerId', expired_owner, 'leaseExpiresAt', expired_at) AS payload,
                   n, 0 AS phase
              FROM numbered
            UNION ALL
            SELECT (${eventIds}::uuid[])[n + ${limit}::int], id, 'DEAD_LETTERED'::runledger.job_event_type, run_number, attempt,
                   jsonb_build_object('code', ${LEASE_EXPIRED_CODE}::text, 'message', ${LEASE_EXPIRED_MESSAGE}::text, 'reason', 'attempts_exhausted'),
                   n, 1
              FROM numbered
             WHERE status = 'DEAD_LETTERED'
          ) e
         ORDER BY e.n, e.phase
      ),
      -- Retried jobs are runnable now: wake listening workers (polling would find them too, later).
      notified AS (
        SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type)) AS n
          FROM (SELECT DISTINCT job_type FROM numbered WHERE status = 'PENDING') t
      )
      SELECT id, status, workflow_managed FROM numbered CROSS JOIN notified ORDER BY numbered.n`;
    const retried = rows.filter((row) => row.status === 'PENDING');
    const deadLettered = rows.filter((row) => row.status === 'DEAD_LETTERED');
    const managedRetries = retried.filter((row) => row.workflow_managed);
    if (managedRetries.length > 0) {
      await markWorkflowStepsEnqueuedForRetry(
        tx,
        managedRetries.map((row) => ({ jobId: row.id, errorCode: LEASE_EXPIRED_CODE, errorMessage: LEASE_EXPIRED_MESSAGE })),
      );
    }
    const managedDead = deadLettered.filter((row) => row.workflow_managed);
    if (managedDead.length > 0) {
      await processWorkflowJobTerminals(
        tx,
        managedDead.map((row) => ({ jobId: row.id, status: 'FAILED' as const, errorCode: LEASE_EXPIRED_CODE, errorMessage: LEASE_EXPIRED_MESSAGE })),
      );
    }
    return { retried: retried.map((row) => row.id), deadLettered: deadLettered.map((row) => row.id) };
  });
}
