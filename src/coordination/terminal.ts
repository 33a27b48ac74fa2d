/**
 * Terminal transitions of job-backed steps (seed
 * `process_workflow_step_terminal_by_job_id_tx`), for a whole batch at once.
 *
 * The queue calls these while holding the job rows (rung 1 of the lock
 * protocol in locking.ts). `markStepsTerminalByJobIds` locks the jobs' step
 * rows in id order and moves the live ones to their terminal status in one
 * statement (a step already terminal, because a cancellation got there first,
 * is left as it is); `settleTerminalSteps` then takes every affected run's
 * release lock (shared, bounded), runs the release cascade across all runs
 * together (one statement per depth) and recomputes the runs' statuses (two
 * statements). The completion and failure statements in
 * src/queue/lifecycle.ts fold the step transition into the job's own
 * statement and call `settleTerminalSteps` directly.
 */
import { sqltag } from '@prisma/client/runtime/client';
import type { Tx } from '../client/types.js';
import type { JsonValue } from '../model/json.js';
import { lockRunsReleaseShared, type ReleaseLocksHeld } from './locking.js';
import { internalState, releaseDependents, type TerminalStep } from './dependency-release.js';
import { recomputeAfterTerminal, recomputeWorkflowRunStatuses } from './run-status.js';
import { stepStartedAt } from './step-state.js';

export interface WorkflowJobTerminalTransition {
  jobId: string;
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELED';
  statusReason?: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
  /** Kept only when status is SUCCEEDED. */
  output?: JsonValue | null;
  /**
   * The start of the attempt this transition ended, as PostgreSQL text (microseconds kept); null or absent:
   * none ended (a job canceled while PENDING). Stored as the step's start when it has none (step-state.ts).
   */
  attemptStartedAt?: string | null;
}

/**
 * Moves the steps of `transitions`' jobs to their terminal statuses (one
 * statement) and settles them. A job without a step is an internal error:
 * callers pass workflow-managed jobs only.
 */
export async function processWorkflowJobTerminals(tx: Tx, transitions: readonly WorkflowJobTerminalTransition[]): Promise<void> {
  if (transitions.length === 0) return;
  const rows = await tx.$queryRaw<
    { job_id: string; step_id: string | null; workflow_run_id: string | null; status: TerminalStep['status'] | null; has_dependents: boolean | null }[]
  >`
    WITH input AS (
      SELECT * FROM unnest(${transitions.map((t) => t.jobId)}::uuid[], ${transitions.map((t) => t.status)}::text[],
                           ${transitions.map((t) => t.statusReason ?? null)}::text[], ${transitions.map((t) => t.errorCode ?? null)}::text[],
                           ${transitions.map((t) => t.errorMessage ?? null)}::text[],
                           ${transitions.map((t) => (t.status === 'SUCCEEDED' && t.output !== undefined && t.output !== null ? JSON.stringify(t.output) : null))}::jsonb[],
                           ${transitions.map((t) => t.attemptStartedAt ?? null)}::timestamptz[])
             AS i(job_id, status, status_reason, error_code, error_message, output, attempt_started_at)
    ),
    -- Rung 2a: the batch's own steps, in id order.
    locked AS MATERIALIZED (
      SELECT ws.id, ws.job_id FROM runledger.workflow_steps ws
       WHERE ws.job_id IN (SELECT job_id FROM input)
       ORDER BY ws.id
         FOR UPDATE
    ),
    -- Read once the step rows are locked: a cancellation's or reaper's now() (its transaction's start) can
    -- predate the job's own transition (cancel.ts writes the clock after its job row lock) or the step's
    -- release committed while it waited; the step finishes no earlier than either (time follows cause).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    moved AS (
      UPDATE runledger.workflow_steps ws
         SET status = i.status::runledger.workflow_step_status,
             finished_at = COALESCE(ws.finished_at, (SELECT at FROM clock)),
             status_reason = i.status_reason,
             last_error_code = i.error_code,
             last_error_message = i.error_message,
             output = i.output,
             started_at = ${stepStartedAt(sqltag`i.attempt_started_at`)},
             updated_at = now()
        FROM input i
       WHERE ws.job_id = i.job_id
         AND ws.id IN (SELECT id FROM locked)
         AND ws.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED')
      RETURNING ws.id, ws.job_id, ws.workflow_run_id, ws.status::text AS status,
                EXISTS (SELECT 1 FROM runledger.workflow_step_dependencies e WHERE e.prerequisite_step_id = ws.id) AS has_dependents
    )
    SELECT i.job_id, l.id AS step_id, m.workflow_run_id, m.status, m.has_dependents
      FROM input i
      LEFT JOIN locked l ON l.job_id = i.job_id
      LEFT JOIN moved m ON m.job_id = i.job_id`;
  const lost = rows.find((row) => row.step_id === null);
  if (lost) throw internalState(`workflow-managed job ${lost.job_id} lost its workflow_steps.job_id link while locked`);
  const terminal = rows.flatMap((row): TerminalStep[] =>
    row.status === null ? [] : [{ stepId: row.step_id!, workflowRunId: row.workflow_run_id!, status: row.status, hasDependents: row.has_dependents !== false }],
  );
  await settleTerminalSteps(tx, terminal);
}

/**
 * The part every job-backed terminal transition shares once its steps are
 * terminal: release locks of the affected runs (shared, bounded wait, run id
 * order) -> release cascade -> run statuses. Two shortcuts, both exact:
 *   - steps known to have no dependents release nothing, so they need neither
 *     the release lock nor a cascade statement (a run whose terminal steps are
 *     all leaves goes straight to its status);
 *   - a run in which this transaction released a job step has live work, so
 *     it is RUNNING, as it already was (a job-backed step was live in it): its
 *     status needs no recompute. (Not so for external completions, whose run
 *     may be WAITING_FOR_EXTERNAL: they recompute always, in external.ts.)
 * "No dependents" was read by the caller's statement, whose snapshot may
 * predate an append that committed while that statement waited for the step
 * row (locking.ts). So the leaves' edges are read again by the first
 * statement of the recompute, with a fresh snapshot, before it locks any run
 * row; dependents found there ("late") are released like any others, and
 * only then are the run rows locked. In the common case this costs no
 * statement: the check rides in the statement that locks the run rows.
 */
export async function settleTerminalSteps(tx: Tx, steps: readonly TerminalStep[], held?: ReleaseLocksHeld): Promise<void> {
  if (steps.length === 0) return;
  const withDependents = steps.filter((step) => step.hasDependents !== false);
  let runsWithLiveWork = new Set<string>();
  if (withDependents.length > 0) {
    // The job rows are ours already; cancellation takes job rows before its
    // exclusive lock, so waiting here is bounded and breaks the only possible
    // cycle on our side (see locking.ts).
    // `held`: the caller's own statement took them already (the completion statement does, in rung order).
    const locks =
      held ??
      (await lockRunsReleaseShared(
        tx,
        withDependents.map((step) => step.workflowRunId),
      ));
    runsWithLiveWork = await releaseDependents(tx, locks, withDependents);
  }
  const leaves = steps.filter((step) => step.hasDependents === false);
  const toRecompute = new Set(steps.map((step) => step.workflowRunId).filter((runId) => !runsWithLiveWork.has(runId)));
  if (toRecompute.size === 0 && leaves.length === 0) return;
  // The leaves are checked again for dependents appended meanwhile (locking.ts, "Appends and the
  // 'no dependents' shortcut"); only when some turn up does this cost more statements.
  const { late } = await recomputeAfterTerminal(
    tx,
    toRecompute,
    leaves.map((step) => step.stepId),
  );
  if (late.length === 0) return;
  const locks = await lockRunsReleaseShared(
    tx,
    late.map((step) => step.workflowRunId),
  );
  const lateLive = await releaseDependents(tx, locks, late);
  const remaining = [...toRecompute, ...late.map((step) => step.workflowRunId)].filter((runId) => !lateLive.has(runId) && !runsWithLiveWork.has(runId));
  await recomputeWorkflowRunStatuses(tx, remaining);
}
