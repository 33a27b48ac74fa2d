/**
 * Run status recomputation, under the run row lock (the last rung of the lock
 * protocol). From the steps:
 *   any BLOCKED / ENQUEUED / RUNNING      -> RUNNING
 *   else any WAITING_FOR_EXTERNAL         -> WAITING_FOR_EXTERNAL
 *   else any FAILED / CANCELED            -> COMPLETED_WITH_ERRORS
 *   else                                  -> SUCCEEDED (result = the result step's output)
 * A CANCELED run is never overwritten. Entering a terminal status sends
 * pg_notify on the run-terminal channel inside the transaction, so a rollback
 * sends nothing and a listener hears each run end exactly once. Every run
 * recomputed also gets one pg_notify on the step-changed channel (payload: the
 * run id): a recompute follows every step that became terminal, every
 * external completion and every append, so a page drawing the run hears of
 * each. PostgreSQL folds identical notifications of one transaction, so a
 * batch settling many steps of one run sends it once.
 */
import type { Tx } from '../client/types.js';
import { WORKFLOW_RUN_TERMINAL_CHANNEL, WORKFLOW_STEP_CHANGED_CHANNEL } from '../model/constants.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';
import { sqltag } from '@prisma/client/runtime/client';
import { TERMINAL_RUN, runQuiescent } from '../db/fragments.js';
import { wakeFunctionJobs } from './function-wake.js';

/**
 * Recomputes the statuses of several runs: two statements whatever their
 * number. Statement 1 locks the run rows in id order (rung 4); statement 2
 * then counts steps with a fresh READ COMMITTED snapshot that includes every
 * completion committed while we waited (one statement would count with the
 * snapshot from before the wait), updates the runs whose status changes, and
 * notifies each run that enters a terminal status.
 */
export async function recomputeWorkflowRunStatuses(tx: Tx, workflowRunIds: Iterable<string>): Promise<Map<string, WorkflowRunStatus>> {
  const ids = [...new Set(workflowRunIds)].sort();
  const statuses = new Map<string, WorkflowRunStatus>();
  if (ids.length === 0) return statuses;
  const locked = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM runledger.workflow_runs WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE`;
  return recomputeLockedRunStatuses(
    tx,
    locked.map((row) => row.id),
  );
}

/** A terminal step whose dependents were appended after its completion statement's snapshot. */
export interface LateSettledStep {
  stepId: string;
  workflowRunId: string;
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELED';
}

/**
 * Statement 1 of the recompute for the settle path (terminal.ts), with the
 * append check of the lock protocol (locking.ts): `leafStepIds` are steps
 * this transaction made terminal believing they had no dependents. Their
 * edges are read again with this statement's fresh snapshot; when some have
 * dependents after all (an append committed while the completion waited for
 * the step row), nothing is locked and they are returned, for the caller to
 * release (release lock, cascade) before it locks run rows. Otherwise the
 * runs are locked in id order and recomputed.
 */
export async function recomputeAfterTerminal(
  tx: Tx,
  workflowRunIds: Iterable<string>,
  leafStepIds: readonly string[],
): Promise<{ late: LateSettledStep[]; statuses: Map<string, WorkflowRunStatus> }> {
  const ids = [...new Set(workflowRunIds)].sort();
  if (leafStepIds.length === 0) return { late: [], statuses: await recomputeWorkflowRunStatuses(tx, ids) };
  const rows = await tx.$queryRaw<{ kind: 'late' | 'run'; id: string; workflow_run_id: string; status: LateSettledStep['status'] | null }[]>`
    WITH late AS MATERIALIZED (
      SELECT DISTINCT ws.id, ws.workflow_run_id, ws.status::text AS status
        FROM runledger.workflow_step_dependencies e
        JOIN runledger.workflow_steps ws ON ws.id = e.prerequisite_step_id
       WHERE e.prerequisite_step_id = ANY(${[...leafStepIds]}::uuid[])
    ),
    locked AS MATERIALIZED (
      SELECT id FROM runledger.workflow_runs
       WHERE id = ANY(${ids}::uuid[]) AND NOT EXISTS (SELECT 1 FROM late)
       ORDER BY id
         FOR UPDATE
    )
    SELECT 'late' AS kind, id, workflow_run_id, status FROM late
    UNION ALL
    SELECT 'run', id, id, NULL FROM locked`;
  const late = rows.filter((row) => row.kind === 'late').map((row) => ({ stepId: row.id, workflowRunId: row.workflow_run_id, status: row.status! }));
  if (late.length > 0) return { late, statuses: new Map() };
  return {
    late,
    statuses: await recomputeLockedRunStatuses(
      tx,
      rows.map((row) => row.id),
    ),
  };
}

/**
 * Statement 2 of the recompute: the caller holds the rows of `lockedIds` (rung 4).
 * A run that ends finishes at GREATEST(now(), its last step's finish): a step
 * finished by a transaction that committed while we waited for the run row,
 * or by this one at a clock read after its own locks (release.ts), can be
 * later than this transaction's start.
 */
async function recomputeLockedRunStatuses(tx: Tx, lockedIds: readonly string[]): Promise<Map<string, WorkflowRunStatus>> {
  const statuses = new Map<string, WorkflowRunStatus>();
  if (lockedIds.length === 0) return statuses;
  const locked = lockedIds.map((id) => ({ id }));

  const rows = await tx.$queryRaw<{ id: string; status: WorkflowRunStatus }[]>`
    WITH runs AS (
      SELECT r.id, r.status AS previous, r.result_step_key
        FROM runledger.workflow_runs r
       WHERE r.id = ANY(${locked.map((row) => row.id)}::uuid[])
    ),
    -- Each run's steps through the (run, ...) index, one aggregate per run (LATERAL): as a join under unnest's
    -- estimates the planner hashed the runs and read the whole step table on every recompute, a cost that grew
    -- with the history (docs/operate/performance.md, "Plans the hot statements keep").
    counts AS (
      SELECT runs.id, c.active, c.waiting, c.errored, c.last_step_finished_at
        FROM runs
       CROSS JOIN LATERAL (
         SELECT count(*) FILTER (WHERE ws.status IN ('BLOCKED', 'ENQUEUED', 'RUNNING')) AS active,
                count(*) FILTER (WHERE ws.status = 'WAITING_FOR_EXTERNAL') AS waiting,
                count(*) FILTER (WHERE ws.status IN ('FAILED', 'CANCELED')) AS errored,
                max(ws.finished_at) AS last_step_finished_at
           FROM runledger.workflow_steps ws
          WHERE ws.workflow_run_id = runs.id
       ) c
    ),
    next AS (
      SELECT id, last_step_finished_at,
             CASE WHEN active > 0 THEN 'RUNNING'
                  WHEN waiting > 0 THEN 'WAITING_FOR_EXTERNAL'
                  WHEN errored > 0 THEN 'COMPLETED_WITH_ERRORS'
                  ELSE 'SUCCEEDED' END::runledger.workflow_run_status AS status
        FROM counts
    ),
    updated AS (
      UPDATE runledger.workflow_runs r
         SET status = next.status,
             finished_at = CASE WHEN next.status IN ('RUNNING', 'WAITING_FOR_EXTERNAL') THEN NULL
                                ELSE COALESCE(r.finished_at, GREATEST(now(), next.last_step_finished_at)) END,
             result = CASE WHEN next.status = 'SUCCEEDED' THEN (
                                SELECT ws.output FROM runledger.workflow_steps ws
                                 WHERE ws.workflow_run_id = r.id AND ws.step_key = r.result_step_key AND ws.status = 'SUCCEEDED')
                           ELSE NULL END,
             updated_at = now()
        FROM next
       WHERE r.id = next.id
         AND r.status <> 'CANCELED'
         AND r.status IS DISTINCT FROM next.status
      RETURNING r.id, r.status, r.parent_job_id
    ),
    -- A run that ends releases its active key (active-keys.ts) unless one of its canceled jobs still has a
    -- live lease (the quiescence marker): then the key stays claimed until the reaper's sweep or the next
    -- enqueue of that key finds the lease run out (runQuiescent, as releaseActiveKeysOfRuns).
    released_keys AS (
      UPDATE runledger.workflow_active_keys k
         SET released_at = clock_timestamp()
        FROM updated u
       WHERE k.workflow_run_id = u.id AND k.released_at IS NULL
         AND ${runQuiescent('u')}
    ),
    notified AS (
      SELECT count(pg_notify(${WORKFLOW_RUN_TERMINAL_CHANNEL}, json_build_object('workflow_run_id', u.id::text, 'status', u.status::text)::text)) AS n
        FROM updated u
        JOIN runs ON runs.id = u.id
       WHERE u.status IN ${TERMINAL_RUN}
         AND runs.previous NOT IN ${TERMINAL_RUN}
    ),
    steps_notified AS (
      SELECT count(pg_notify(${WORKFLOW_STEP_CHANGED_CHANNEL}, runs.id::text)) AS n FROM runs
    ),
    -- A child run of a durable function (ctx.invoke) that ends wakes its parent's body job: the job row is
    -- taken last, after the run rows (the exception written in locking.ts).
    parents AS (
      SELECT u.parent_job_id AS id FROM updated u JOIN runs ON runs.id = u.id
       WHERE u.parent_job_id IS NOT NULL AND u.status IN ${TERMINAL_RUN} AND runs.previous NOT IN ${TERMINAL_RUN}
    ),
    ${wakeFunctionJobs(sqltag`SELECT id FROM parents ORDER BY id`, sqltag`clock_timestamp()`)}
    SELECT runs.id, COALESCE(u.status, runs.previous) AS status
      FROM runs
      LEFT JOIN updated u ON u.id = runs.id
      CROSS JOIN notified
      CROSS JOIN steps_notified
      CROSS JOIN woken_notified`;
  for (const row of rows) statuses.set(row.id, row.status);
  return statuses;
}

/** One run's status (see recomputeWorkflowRunStatuses); null when the run does not exist. */
export async function recomputeWorkflowRunStatus(tx: Tx, workflowRunId: string): Promise<WorkflowRunStatus | null> {
  return (await recomputeWorkflowRunStatuses(tx, [workflowRunId])).get(workflowRunId) ?? null;
}

/** Notification for a run that entered CANCELED (cancellation writes the status itself). */
export async function notifyWorkflowRunTerminal(tx: Tx, workflowRunId: string, status: WorkflowRunStatus): Promise<void> {
  // A canceled child of a durable function wakes its parent's body job too (as the recompute does).
  await tx.$queryRaw`
    WITH parents AS (
      SELECT parent_job_id AS id FROM runledger.workflow_runs WHERE id = ${workflowRunId}::uuid AND parent_job_id IS NOT NULL
    ),
    ${wakeFunctionJobs(sqltag`SELECT id FROM parents`, sqltag`clock_timestamp()`)}
    SELECT count(pg_notify(${WORKFLOW_RUN_TERMINAL_CHANNEL}, json_build_object('workflow_run_id', ${workflowRunId}::text, 'status', ${status}::text)::text))::int AS n
      FROM woken_notified`;
}
