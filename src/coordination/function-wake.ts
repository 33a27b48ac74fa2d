/**
 * Waking a durable function's body job, as CTEs of the statement that resolved one of its waits: a signal
 * (src/workflow/function-signal.ts, which locked the row first, rung 1) or a child run's terminal
 * transition (run-status.ts, which takes it last: the exception in locking.ts). A PENDING
 * job (suspended on the wait) becomes due now and the job-available channel is notified, so a listening
 * worker claims it at once; a LEASED job (its attempt may be about to suspend on that very wait) gets
 * `wake_requested_at`, which its continuation reads on the row it locks (continue-jobs.ts): due at once
 * instead of at the wait's timeout. Terminal jobs are left alone.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { JOB_AVAILABLE_CHANNEL } from '../model/constants.js';

/** Two CTEs, `woken` and `woken_notified`: `jobIds` is a query of `id`s, `at` the statement's clock. */
export function wakeFunctionJobs(jobIds: Sql, at: Sql): Sql {
  return sqltag`woken AS (
      UPDATE runledger.job_queue jq
         SET next_run_at = CASE WHEN jq.status = 'PENDING' THEN LEAST(jq.next_run_at, ${at}) ELSE jq.next_run_at END,
             wake_requested_at = CASE WHEN jq.status = 'LEASED' THEN ${at} ELSE jq.wake_requested_at END
       -- = ANY(ARRAY(...)): an init plan, then primary-key probes, whatever the planner guesses of the ids.
       WHERE jq.id = ANY(ARRAY(${jobIds})) AND jq.status IN ('PENDING', 'LEASED')
      RETURNING jq.job_type, jq.status
    ),
    woken_notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type)) AS n
        FROM (SELECT DISTINCT job_type FROM woken WHERE status = 'PENDING') t
    )`;
}
