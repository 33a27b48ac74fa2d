/**
 * The open attempt lives on the job row (migration 20261222000000_lean_ledger):
 * `attempt_seq` (its number in the job's trail, from job_events' sequence),
 * `attempt_worker_id`, `attempt_started_at`, `attempt_leased_until` (the
 * expiry its claim granted: the LEASED event's payload), `attempt_running_seq`
 * and `attempt_running_at` (its RUNNING event), written by the claim in the
 * job's own update, so a claim writes one row. A success keeps the attempt
 * there (`attempt_closed_seq`: the SUCCEEDED event), so a drained job writes
 * three rows in all. Every other end of an attempt (retry, dead letter,
 * release, reaping, cancellation, continuation) moves it into job_attempts,
 * with its outcome, in the statement that ends it (`archiveAttempts`), and
 * clears the columns (`CLEAR_ATTEMPT`). runledger.job_attempt_history reads
 * both as one history.
 *
 * A closing statement reads `id` and ATTEMPT_COLUMNS in its FOR UPDATE CTE
 * (the row as locked, before its update) and archives from a relation that
 * joins that CTE (`locked.*`) with the lease's `run_number` and `attempt` and
 * whatever its close expressions name (aliased `o`).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';

/** The job row's attempt columns, as a closing statement's locked CTE selects them (alias `jq`). */
export const ATTEMPT_COLUMNS = sqltag`jq.attempt_seq, jq.attempt_worker_id, jq.attempt_started_at, jq.attempt_leased_until,
       jq.attempt_running_seq, jq.attempt_running_at`;

/** SET list that clears the job row's attempt once it moved into job_attempts. */
export const CLEAR_ATTEMPT = sqltag`attempt_seq = NULL, attempt_worker_id = NULL, attempt_started_at = NULL,
       attempt_leased_until = NULL, attempt_running_seq = NULL, attempt_running_at = NULL`;

/** How an attempt ended: SQL expressions over the ended row `o`; unset fields are NULL. */
export interface AttemptClose {
  finishedAt: Sql;
  outcome: Sql;
  errorCode?: Sql;
  errorMessage?: Sql;
  errorStack?: Sql;
  retryDelayMs?: Sql;
  retryDelaySource?: Sql;
  requestedNextRunAt?: Sql;
  nextRunAt?: Sql;
}

const NULL = sqltag`NULL`;

/**
 * The INSERT that moves ended attempts into job_attempts, from `ended` (see the module comment). A job without
 * an attempt on its row (a lease granted before attempts were recorded) has none to move. The close time is
 * never before the start: a cancellation's now() is its transaction's start, which can precede a claim it
 * then waited for.
 */
export function archiveAttempts(ended: Sql, close: AttemptClose): Sql {
  return sqltag`
    INSERT INTO runledger.job_attempts
           (job_id, seq, run_number, attempt, worker_id, started_at, leased_until, running_seq, running_at,
            finished_at, outcome, error_code, error_message, error_stack, retry_delay_ms, retry_delay_source, requested_next_run_at, next_run_at)
    SELECT o.id, o.attempt_seq, o.run_number, o.attempt, o.attempt_worker_id, o.attempt_started_at, o.attempt_leased_until,
           o.attempt_running_seq, o.attempt_running_at,
           GREATEST(${close.finishedAt}, o.attempt_started_at), (${close.outcome})::runledger.job_attempt_outcome,
           ${close.errorCode ?? NULL}, ${close.errorMessage ?? NULL}, ${close.errorStack ?? NULL}, ${close.retryDelayMs ?? NULL},
           (${close.retryDelaySource ?? NULL})::runledger.job_retry_delay_source, ${close.requestedNextRunAt ?? NULL},
           ${close.nextRunAt ?? NULL}
      FROM ${ended} o
     WHERE o.attempt_seq IS NOT NULL`;
}
