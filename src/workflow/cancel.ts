/**
 * Canceling a run (see the lock protocol in locking.ts): the run's job rows
 * first, then the release lock EXCLUSIVE (waits for in-flight releases; no
 * release can start after), then job rows again (jobs released while it
 * waited), then every step row; then every non-terminal step and its job are
 * canceled (a leased job keeps its lease expiry as the quiescence marker, so a
 * replacement cannot overlap a still-running handler), the run becomes
 * CANCELED and the run-terminal notification is sent. Idempotent on a run
 * that is already CANCELED; a run that already finished otherwise is a
 * conflict.
 */
import { z } from 'zod';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { newIds } from '../db/ids.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { ConflictError, NotFoundError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { nonBlank, uuid } from '../validation/primitives.js';
import { asTemplate } from '../db/sql-template.js';
import { WORKFLOW_RUN_CANCELED, cancelRunJobsStatement } from '../queue/statements/cancel-run-jobs.js';
import { releaseActiveKeysOfRuns } from './active-keys.js';
import { lockRunJobRows, lockRunReleaseExclusive, lockRunStepRows } from '../coordination/locking.js';
import { notifyWorkflowRunTerminal } from '../coordination/run-status.js';
import { toWorkflowRun, type WorkflowRun, type WorkflowRunRow } from '../model/workflow-rows.js';
import { inScope } from '../db/fragments.js';

const cancelWorkflowRunSchema = z.strictObject({
  workflowRunId: uuid,
  scope: scopeSchema,
  reason: nonBlank(1_000).optional(),
});

export interface CancelWorkflowRunInput {
  workflowRunId: string;
  scope: Scope;
  reason?: string;
}

export async function cancelWorkflowRun(db: Db, input: CancelWorkflowRunInput): Promise<WorkflowRun> {
  const parsed = parseInput(cancelWorkflowRunSchema, input, 'workflow.invalid_input');
  const scope = scopeParams(parsed.scope);
  const reason = parsed.reason ?? WORKFLOW_RUN_CANCELED;
  const runId = parsed.workflowRunId;

  return withTransaction(db, 'cancel workflow run', async (context) => {
    await ensureReadCommitted(context, 'workflow.cancel_unsupported_isolation', 'Workflow run cancellation');
    const { tx } = context;
    const found = await tx.$queryRaw<WorkflowRunRow[]>`
      SELECT * FROM runledger.workflow_runs
       WHERE id = ${runId}::uuid AND ${inScope(scope, 'organization_id')}`;
    const run = found[0];
    if (!run) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId: runId } });
    if (run.status === 'CANCELED') return canceledRun(run);
    if (run.status === 'SUCCEEDED' || run.status === 'COMPLETED_WITH_ERRORS') throw alreadyFinished(runId, run.status);

    await lockRunJobRows(tx, runId);
    await lockRunReleaseExclusive(tx, runId);
    await lockRunJobRows(tx, runId);
    await lockRunStepRows(tx, runId);

    // The run may have finished, or been canceled by a concurrent call, while we waited for the locks.
    // `canceled_at`: the cancellation's time, read now that every lock is held, and written to the steps, jobs,
    // attempts and run it cancels. Not now(): this transaction's start can predate a completion or release that
    // committed while we waited (a step finished, a job created or claimed); time follows cause. As text, so
    // the microseconds survive the round trip (a JavaScript Date keeps milliseconds).
    const current = (
      await tx.$queryRaw<(WorkflowRunRow & { canceled_at: string })[]>`
        SELECT *, clock_timestamp()::text AS canceled_at FROM runledger.workflow_runs WHERE id = ${runId}::uuid`
    )[0];
    if (!current) throw new NotFoundError('workflow.run_not_found', 'No such workflow run.', { details: { workflowRunId: runId } });
    if (current.status === 'CANCELED') return canceledRun(current);
    if (current.status === 'SUCCEEDED' || current.status === 'COMPLETED_WITH_ERRORS') throw alreadyFinished(runId, current.status);
    const at = current.canceled_at;

    const steps = await tx.$queryRaw<{ job_id: string | null }[]>`
      UPDATE runledger.workflow_steps
         SET status = 'CANCELED',
             finished_at = COALESCE(finished_at, ${at}::timestamptz),
             -- A leased job's attempt ends here: its start becomes the step's when it has none (step-state.ts).
             -- The job rows are locked (lockRunJobRows) and updated only below, so this reads the open attempt.
             started_at = COALESCE(started_at, (SELECT jq.attempt_started_at FROM runledger.job_queue jq
                                                 WHERE jq.id = workflow_steps.job_id AND jq.status = 'LEASED')),
             status_reason = ${reason},
             last_error_code = ${WORKFLOW_RUN_CANCELED},
             last_error_message = 'The workflow run was canceled.',
             output = NULL,
             updated_at = ${at}::timestamptz
       WHERE workflow_run_id = ${runId}::uuid
         AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED')
      RETURNING job_id`;
    const jobIds = steps.flatMap((step) => (step.job_id ? [step.job_id] : []));
    if (jobIds.length > 0) {
      await tx.$executeRaw(...asTemplate(cancelRunJobsStatement(jobIds, newIds(jobIds.length), runId, reason, at)));
    }

    const updated = await tx.$queryRaw<WorkflowRunRow[]>`
      UPDATE runledger.workflow_runs
         SET status = 'CANCELED', status_reason = ${reason}, result = NULL,
             finished_at = COALESCE(finished_at, ${at}::timestamptz), updated_at = ${at}::timestamptz
       WHERE id = ${runId}::uuid
      RETURNING *`;
    await notifyWorkflowRunTerminal(tx, runId, 'CANCELED');
    // Its active key, if it has one and no canceled lease is live (else the reaper's sweep releases it later).
    await releaseActiveKeysOfRuns(tx, [runId]);
    return canceledRun(updated[0]!);
  });
}

/** A canceled run waits on nobody: cancellation ended every step. */
function canceledRun(row: WorkflowRunRow): WorkflowRun {
  return toWorkflowRun({ ...row, waiting_for_external: false });
}

function alreadyFinished(workflowRunId: string, status: string): ConflictError {
  return new ConflictError('workflow.run_already_finished', `The workflow run already finished (${status}).`, { details: { workflowRunId, status } });
}
