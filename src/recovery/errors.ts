/** The errors workflow recovery raises itself, one constructor each. */
import { ConflictError, NotFoundError } from '../errors/runledger-error.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';

export function runNotFound(workflowRunId: string): NotFoundError {
  return new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId } });
}

export function sourceNotTerminal(sourceRunId: string, status: WorkflowRunStatus): ConflictError {
  return new ConflictError('workflow.recovery_source_not_terminal', `Only a finished workflow run can be recovered; this one is ${status}.`, {
    details: { sourceRunId, status },
  });
}

/** A canceled job of the source may still be running its handler: a recovery must not overlap it. */
export function sourceNotQuiesced(sourceRunId: string, retryAfter: Date): ConflictError {
  return new ConflictError('workflow.recovery_source_not_quiesced', 'A canceled job of this run may still be running; retry after its lease has expired.', {
    details: { sourceRunId, retryAfter: retryAfter.toISOString() },
  });
}

export function snapshotMissing(sourceRunId: string): ConflictError {
  return new ConflictError(
    'workflow.recovery_snapshot_missing',
    'This workflow run was enqueued before runs kept their enqueue snapshot; it cannot be recovered.',
    {
      details: { sourceRunId },
    },
  );
}

/** The stored snapshot and appends do not rebuild the run the rows hold: recovering would run something else. */
export function snapshotUnsafe(sourceRunId: string, internal: string, cause?: unknown): ConflictError {
  return new ConflictError('workflow.recovery_snapshot_unsafe', 'This workflow run cannot be rebuilt safely from its stored requests.', {
    internalMessage: `recovery of ${sourceRunId}: ${internal}`,
    details: { sourceRunId },
    cause,
  });
}

export function requestConflict(sourceRunId: string, requestKey: string, recoveryRunId: string): ConflictError {
  return new ConflictError('workflow.recovery_request_conflict', 'This recovery request key was already used with a different mode or reason.', {
    details: { sourceRunId, recoveryRunId },
    sensitiveDetails: { requestKey },
  });
}

export function activeKeyHeld(sourceRunId: string, holderRunId: string, holderStatus: WorkflowRunStatus): ConflictError {
  return new ConflictError('workflow.recovery_active_key_held', "Another run holds this run's active key; recover it once that run is over.", {
    details: { sourceRunId, workflowRunId: holderRunId, status: holderStatus },
  });
}

export function nothingToRerun(sourceRunId: string): ConflictError {
  return new ConflictError(
    'workflow.recovery_nothing_to_rerun',
    "Every step of this run succeeded: a failed-only recovery would run nothing (use mode 'full').",
    {
      details: { sourceRunId },
    },
  );
}

/** One recovery per source unless asked again: a second click or a retried script with a new key must not run the work twice. */
export function alreadyRecovered(sourceRunId: string, recoveryRunId: string, recoveries: number): ConflictError {
  return new ConflictError(
    'workflow.recovery_already_recovered',
    'This run was already recovered; open its recovery run, or ask to recover it again (again: true).',
    { details: { sourceRunId, recoveryRunId, recoveries } },
  );
}
