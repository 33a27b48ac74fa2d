/**
 * Reaping: leases whose expiry has passed belong to workers that crashed or
 * stalled. One statement handles a bounded batch:
 *   never started          -> PENDING, runnable now, attempt given back (LEASE_EXPIRED, started: false)
 *   attempt < max_attempts -> PENDING, runnable now          (LEASE_EXPIRED)
 *   otherwise              -> DEAD_LETTERED, job.lease_expired (LEASE_EXPIRED, DEAD_LETTERED)
 * The stale worker's later writes fail their lease fence (status and owner
 * changed), so its result is never recorded over the next attempt's.
 *
 * "Never started": claimed without `markRunning` and no `markJobRunning`
 * since, i.e. no RUNNING event after the lease's LEASED event (the job row has
 * no per-lease start mark: `started_at` is the first start ever, and a
 * released attempt is claimed again under the same number, so an older
 * RUNNING event of the same attempt does not count). No handler ran, so the
 * expiry is no failure of the job: it is returned as `releaseJob` would
 * return it (attempt - 1, its last error kept, a workflow step put back as
 * unclaimed by the rule in src/queue/release-lease.ts), and never dead-lettered,
 * even at `maxAttempts: 1`. A RUNNING event committed after this statement's
 * snapshot is not seen; that needs a mark-running written before the lease
 * expired (its fence) yet committed after the reaper started, and costs at
 * most one uncharged attempt.
 *
 * Lock order: job rows oldest expiry first with SKIP LOCKED (a row a worker is
 * completing right now is left for the next pass, never waited for), then
 * step rows in the workflow hooks.
 */
import { sqltag } from '@prisma/client/runtime/client';
import type { Db } from '../client/types.js';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import { JOB_AVAILABLE_CHANNEL } from '../model/constants.js';
import { newIds } from '../db/ids.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from './attempt-row.js';
import { parseInput } from '../validation/parse.js';
import { markWorkflowStepsEnqueuedForRetry } from '../coordination/job-hooks.js';
import { processWorkflowJobTerminals } from '../coordination/terminal.js';
import { LIVE_JOB_STEP } from '../coordination/step-state.js';
import { JOB_INVALID_INPUT, reapExpiredLeasesInputSchema, type ReapExpiredLeasesInput } from './inputs.js';
import { CLEAR_LEASE } from '../db/fragments.js';

export const LEASE_EXPIRED_CODE = 'job.lease_expired';
const LEASE_EXPIRED_MESSAGE = 'The lease expired before the job finished.';

export interface ReapResult {
  /** Back to PENDING for another attempt (a lease that never started: without using one up). */
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
    const rows = await tx.$queryRaw<
      { id: string; status: 'PENDING' | 'DEAD_LETTERED'; workflow_managed: boolean; started: boolean; attempt_started_at: string | null }[]
    >`
      WITH expired AS (
        SELECT jq.id, jq.lease_owner, jq.lease_expires_at, jq.attempt AS lease_attempt, ${ATTEMPT_COLUMNS},
               -- Started: the lease's attempt recorded RUNNING (markRunning at claim, or markJobRunning).
               jq.attempt_running_seq IS NOT NULL AS started
          FROM runledger.job_queue jq
         WHERE jq.status = 'LEASED' AND jq.lease_expires_at <= now()
         ORDER BY jq.lease_expires_at, jq.id
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
                  e.attempt_started_at::text AS attempt_started_at
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
                   run_number, attempt,
                   jsonb_build_object('workerId', expired_owner, 'leaseExpiresAt', expired_at, 'started', started,
                                      'leaseAttempt', lease_attempt) AS payload,
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
    const retried = rows.filter((row) => row.status === 'PENDING');
    const deadLettered = rows.filter((row) => row.status === 'DEAD_LETTERED');
    // Never-started ones had their steps put back in the statement above.
    const managedRetries = retried.filter((row) => row.workflow_managed && row.started);
    if (managedRetries.length > 0) {
      await markWorkflowStepsEnqueuedForRetry(
        tx,
        managedRetries.map((row) => ({
          jobId: row.id,
          errorCode: LEASE_EXPIRED_CODE,
          errorMessage: LEASE_EXPIRED_MESSAGE,
          attemptStartedAt: row.attempt_started_at,
        })),
      );
    }
    const managedDead = deadLettered.filter((row) => row.workflow_managed);
    if (managedDead.length > 0) {
      await processWorkflowJobTerminals(
        tx,
        managedDead.map((row) => ({
          jobId: row.id,
          status: 'FAILED' as const,
          errorCode: LEASE_EXPIRED_CODE,
          errorMessage: LEASE_EXPIRED_MESSAGE,
          attemptStartedAt: row.started ? row.attempt_started_at : null,
        })),
      );
    }
    return { retried: retried.map((row) => row.id), deadLettered: deadLettered.map((row) => row.id) };
  });
}
