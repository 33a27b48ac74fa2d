/**
 * What a schedule's slot enqueues: a job row, or a workflow run. The run of a
 * workflow schedule is validated when the schedule is written and again when
 * a slot is materialised (the stored form could have been written by an
 * older version, or by hand): a run that no longer validates is that
 * schedule's error (recorded on it), not the pass's.
 */
import { ValidationError } from '../errors/runledger-error.js';
import { validateWorkflowRun, type ValidatedWorkflowRun, type WorkflowRunInput } from '../workflow/run-definition.js';
import type { ScheduleRow } from './rows.js';

/** The first problem of a workflow run input, as a field path inside the run and a message; null when valid. */
export function workflowRunProblem(run: WorkflowRunInput): { field: string; message: string } | null {
  try {
    validateWorkflowRun({ ...run, organizationId: null, idempotencyKey: undefined });
    return null;
  } catch (error) {
    if (error instanceof ValidationError) return { field: error.field, message: error.message };
    throw error;
  }
}

/** The validated run a workflow schedule's slot enqueues (throws the run's ValidationError). */
export function slotWorkflowRun(row: ScheduleRow, idempotencyKey: string | null): ValidatedWorkflowRun {
  return validateWorkflowRun({ ...(row.workflow_run as object), organizationId: row.organization_id, ...(idempotencyKey === null ? {} : { idempotencyKey }) });
}
