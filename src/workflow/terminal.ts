/**
 * Terminal transitions of job-backed steps (seed `process_workflow_step_terminal_by_job_id_tx`).
 * The queue calls this while holding the job row (rung 1 of the lock protocol
 * in locking.ts): step row -> shared release lock (bounded wait) -> release
 * cascade -> run status. A step already terminal (a cancellation got there
 * first) is left as it is.
 */
import type { Tx } from '../client/types.js';
import { jsonParam } from '../queue/rows.js';
import type { WorkflowJobTerminalTransition } from './job-hooks.js';
import { lockRunReleaseShared } from './locking.js';
import { internalState, resolveTerminalStepQueue } from './release.js';
import { recomputeWorkflowRunStatus } from './run-status.js';
import { isTerminalStepStatus, type WorkflowStepStatus } from './rows.js';

export async function processWorkflowStepTerminalByJobId(tx: Tx, transition: WorkflowJobTerminalTransition): Promise<void> {
  const steps = await tx.$queryRaw<{ id: string; workflow_run_id: string; status: WorkflowStepStatus }[]>`
    SELECT id, workflow_run_id, status FROM runledger.workflow_steps WHERE job_id = ${transition.jobId}::uuid FOR UPDATE`;
  const step = steps[0];
  if (!step) throw internalState(`workflow-managed job ${transition.jobId} lost its workflow_steps.job_id link while locked`);
  if (isTerminalStepStatus(step.status)) return;

  const output = transition.status === 'SUCCEEDED' ? jsonParam(transition.output) : null;
  await tx.$executeRaw`
    UPDATE runledger.workflow_steps
       SET status = ${transition.status}::runledger.workflow_step_status,
           finished_at = COALESCE(finished_at, now()),
           status_reason = ${transition.statusReason ?? null},
           last_error_code = ${transition.errorCode ?? null},
           last_error_message = ${transition.errorMessage ?? null},
           output = ${output}::jsonb,
           updated_at = now()
     WHERE id = ${step.id}::uuid`;

  // The job row is ours already; cancellation takes job rows before its
  // exclusive lock, so waiting here is bounded and breaks the only possible
  // cycle on our side (see locking.ts). Release runs on this same connection.
  const lock = await lockRunReleaseShared(tx, step.workflow_run_id);
  await resolveTerminalStepQueue(tx, lock, step.id, transition.status);
  await recomputeWorkflowRunStatus(tx, step.workflow_run_id);
}
