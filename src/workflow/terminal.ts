/**
 * Terminal transitions of workflow steps. Filled by the workflow engine
 * (issue 4). Until then no workflow run can be created, so a job can only be
 * workflow-managed if rows were written by hand: that is refused loudly rather
 * than silently ignored.
 */
import type { Tx } from '../client/types.js';
import { InternalError } from '../errors/runledger-error.js';
import type { WorkflowJobTerminalTransition } from './job-hooks.js';

export async function processWorkflowStepTerminalByJobId(_tx: Tx, transition: WorkflowJobTerminalTransition): Promise<void> {
  throw new InternalError('workflow.internal_state', 'The workflow engine is not available in this build.', {
    internalMessage: `terminal transition of workflow job ${transition.jobId} reached before the workflow engine exists`,
  });
}
