/**
 * Run status recomputation, under the run row lock (the last rung of the lock
 * protocol). From the steps:
 *   any BLOCKED / ENQUEUED / RUNNING      -> RUNNING
 *   else any WAITING_FOR_EXTERNAL         -> WAITING_FOR_EXTERNAL
 *   else any FAILED / CANCELED            -> COMPLETED_WITH_ERRORS
 *   else                                  -> SUCCEEDED (result = the result step's output)
 * A CANCELED run is never overwritten. Entering a terminal status sends
 * pg_notify on the run-terminal channel inside the transaction, so a rollback
 * sends nothing and a listener hears each run end exactly once.
 */
import type { Tx } from '../client/types.js';
import { WORKFLOW_RUN_TERMINAL_CHANNEL } from '../db/constants.js';
import type { WorkflowRunStatus } from './rows.js';

export async function recomputeWorkflowRunStatus(tx: Tx, workflowRunId: string): Promise<WorkflowRunStatus | null> {
  // Statement 1 takes the run lock; statement 2 then counts steps with a fresh
  // READ COMMITTED snapshot that includes every completion committed while we
  // waited. (One statement would count with the snapshot from before the wait.)
  const locked = await tx.$queryRaw<{ status: WorkflowRunStatus }[]>`
    SELECT status FROM runledger.workflow_runs WHERE id = ${workflowRunId}::uuid FOR UPDATE`;
  if (locked.length === 0) return null;

  const rows = await tx.$queryRaw<{ status: WorkflowRunStatus }[]>`
    WITH counts AS (
      SELECT count(*) FILTER (WHERE status IN ('BLOCKED', 'ENQUEUED', 'RUNNING')) AS active,
             count(*) FILTER (WHERE status = 'WAITING_FOR_EXTERNAL') AS waiting,
             count(*) FILTER (WHERE status IN ('FAILED', 'CANCELED')) AS errored
        FROM runledger.workflow_steps
       WHERE workflow_run_id = ${workflowRunId}::uuid
    ),
    next AS (
      SELECT CASE WHEN active > 0 THEN 'RUNNING'
                  WHEN waiting > 0 THEN 'WAITING_FOR_EXTERNAL'
                  WHEN errored > 0 THEN 'COMPLETED_WITH_ERRORS'
                  ELSE 'SUCCEEDED' END::runledger.workflow_run_status AS status
        FROM counts
    ),
    updated AS (
      UPDATE runledger.workflow_runs r
         SET status = next.status,
             finished_at = CASE WHEN next.status IN ('RUNNING', 'WAITING_FOR_EXTERNAL') THEN NULL
                                ELSE COALESCE(r.finished_at, now()) END,
             result = CASE WHEN next.status = 'SUCCEEDED' THEN (
                                SELECT ws.output FROM runledger.workflow_steps ws
                                 WHERE ws.workflow_run_id = r.id AND ws.step_key = r.result_step_key AND ws.status = 'SUCCEEDED')
                           ELSE NULL END,
             updated_at = now()
        FROM next
       WHERE r.id = ${workflowRunId}::uuid
         AND r.status <> 'CANCELED'
         AND r.status IS DISTINCT FROM next.status
      RETURNING r.status, ${locked[0]!.status}::runledger.workflow_run_status AS previous
    ),
    notified AS (
      SELECT pg_notify(${WORKFLOW_RUN_TERMINAL_CHANNEL}, json_build_object('workflow_run_id', ${workflowRunId}::text, 'status', u.status::text)::text)
        FROM updated u
       WHERE u.status IN ('SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED')
         AND u.previous NOT IN ('SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED')
    )
    SELECT COALESCE((SELECT status FROM updated), ${locked[0]!.status}::runledger.workflow_run_status) AS status
      FROM (SELECT count(*) FROM notified) n`;
  return rows[0]?.status ?? null;
}

/** Notification for a run that entered CANCELED (cancellation writes the status itself). */
export async function notifyWorkflowRunTerminal(tx: Tx, workflowRunId: string, status: WorkflowRunStatus): Promise<void> {
  await tx.$executeRaw`
    SELECT pg_notify(${WORKFLOW_RUN_TERMINAL_CHANNEL}, json_build_object('workflow_run_id', ${workflowRunId}::text, 'status', ${status}::text)::text)`;
}
