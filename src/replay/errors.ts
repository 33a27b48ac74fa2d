/** The errors replay and requeue raise themselves, one constructor each. */
import { ConflictError, InternalError } from '../errors/runledger-error.js';

/**
 * A workflow step's job is owned by its run: a new run or a replay would bypass
 * the step state machine and the release of its dependents.
 */
export function workflowRequeueNotSupported(jobId: string, operation: string): ConflictError {
  return new ConflictError('job.workflow_requeue_not_supported', 'A job that belongs to a workflow step cannot be replayed or requeued on its own.', {
    internalMessage: `${operation}: job ${jobId} is referenced by a workflow step`,
    details: { jobId },
  });
}

export function replayIdempotencyConflict(sourceJobId: string, sourceRunNumber: number, replayRequestKey: string): ConflictError {
  return new ConflictError('job.replay_idempotency_conflict', 'The replay request key was already used with a different reason.', {
    internalMessage: `compare and replay: key of source ${sourceJobId} run ${sourceRunNumber} is held by a replay with another reason`,
    details: { sourceJobId, sourceRunNumber },
    sensitiveDetails: { replayRequestKey },
  });
}

/** Lineage points at a replay job that cannot be read: the foreign key forbids it, so the state is corrupt. */
export function replayMissing(sourceJobId: string, replayJobId: string): InternalError {
  return new InternalError('job.replay_missing', 'The recorded replay of this job is missing.', {
    internalMessage: `compare and replay: lineage of source ${sourceJobId} names replay ${replayJobId}, which does not exist`,
    details: { sourceJobId, replayJobId },
  });
}

/** The row kept changing under a compare-and-lock loop; the whole operation is safe to retry. */
export function unstableRow(jobId: string, operation: string): ConflictError {
  return new ConflictError('database.transaction_conflict', 'The operation conflicted with a concurrent one; retry it.', {
    internalMessage: `${operation}: job ${jobId} changed between its locking and classifying reads too many times`,
    details: { jobId },
  });
}
