/**
 * A job step's RUNNING is read from its job, never written (the lean ledger;
 * migration 20261223000000_step_running_derived).
 *
 * Stored: a job step's `status` stays ENQUEUED from its release until it ends.
 * A claim or `markJobRunning` writes no step row (one row write and one row
 * lock less per step). A reader sees RUNNING while the step's job is LEASED,
 * and `started_at` = the open attempt's start until the step stores its own:
 * the view `runledger.workflow_step_states` applies the rule, and
 * `listWorkflowSteps` reads it.
 *
 * So every statement that ends a step's attempt without ending the step
 * (retry, continuation) or ends the step (success, failure, cancellation)
 * stores `started_at` from the attempt it ends, when the step has none yet:
 * `stepStartedAt(attemptStart)` below. A lease given back unstarted (release,
 * a reaped lease that never ran) stores nothing, as before: the step looks
 * unclaimed.
 *
 * Rows an earlier version stored as RUNNING stay valid: every writer that
 * required RUNNING accepts ENQUEUED or RUNNING (`LIVE_JOB_STEP`), and readers
 * see them as stored.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';

/** The stored statuses of a job step whose job is live (PENDING or LEASED). */
export const LIVE_JOB_STEP = sqltag`('ENQUEUED', 'RUNNING')`;

/** `started_at` for a statement that ends a step's attempt (alias `ws`), given the attempt's start. */
export function stepStartedAt(attemptStart: Sql): Sql {
  return sqltag`COALESCE(ws.started_at, ${attemptStart})`;
}
