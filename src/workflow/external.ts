/**
 * Completing an external step (a human approval, a webhook) from outside.
 * Idempotent: the same terminal outcome with the same reason/error metadata
 * (and, for success, the same output) returns the stored step; any difference
 * is a conflict with a stable code. Only success carries output (the input
 * type and its validation both say so).
 *
 * Locks (see locking.ts): all of the run's step rows in id order, then the
 * release lock shared by try-lock only; a concurrent cancellation holding the
 * exclusive form makes this fail fast with `workflow.release_conflict`.
 */
import { z } from 'zod';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors/runledger-error.js';
import { jsonParam } from '../model/job-rows.js';
import { parseInput } from '../validation/parse.js';
import { jsonValue, nonBlank, storableText, uuid } from '../validation/primitives.js';
import type { JsonValue } from '../model/json.js';
import { lockRunStepRows, releaseConflict, tryLockRunReleaseShared } from '../coordination/locking.js';
import { releaseDependents } from '../coordination/dependency-release.js';
import { recomputeWorkflowRunStatuses } from '../coordination/run-status.js';
import { isTerminalStepStatus, toWorkflowStep, type WorkflowStep, type WorkflowStepRow } from '../model/workflow-rows.js';
import { inScope } from '../db/fragments.js';

const optionalText = storableText.max(10_000).nullish();

const completeExternalStepSchema = z.strictObject({
  workflowRunId: uuid,
  stepKey: nonBlank(200),
  scope: scopeSchema,
  outcome: z.discriminatedUnion('status', [
    z.strictObject({ status: z.literal('succeeded'), output: jsonValue.optional() }),
    z.strictObject({ status: z.literal('failed') }),
    z.strictObject({ status: z.literal('canceled') }),
  ]),
  statusReason: optionalText,
  errorCode: optionalText,
  errorMessage: optionalText,
});

export interface CompleteExternalWorkflowStepInput {
  workflowRunId: string;
  stepKey: string;
  scope: Scope;
  /** Output only on success: `{ status: 'failed', output }` does not type-check and is refused at run time. */
  outcome: { status: 'succeeded'; output?: JsonValue } | { status: 'failed' } | { status: 'canceled' };
  statusReason?: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
}

const STATUS = { succeeded: 'SUCCEEDED', failed: 'FAILED', canceled: 'CANCELED' } as const;

/**
 * @example
 * await completeExternalWorkflowStep(prisma, {
 *   workflowRunId, stepKey: 'approval', scope: organizationScope(orgId),
 *   outcome: { status: 'succeeded', output: { approvedBy: 'ana' } },
 * });
 */
export async function completeExternalWorkflowStep(db: Db, input: CompleteExternalWorkflowStepInput): Promise<WorkflowStep> {
  const outcome = (input as { outcome?: { status?: unknown; output?: unknown } } | null)?.outcome;
  if (outcome && outcome.status !== 'succeeded' && outcome.output !== undefined) {
    throw new ValidationError('workflow.external_output_not_allowed', 'outcome.output', 'Only a succeeded outcome carries output.');
  }
  const parsed = parseInput(completeExternalStepSchema, input, 'workflow.invalid_input');
  const status = STATUS[parsed.outcome.status];
  const output = parsed.outcome.status === 'succeeded' ? jsonParam(parsed.outcome.output ?? null) : null;
  const metadata = { statusReason: parsed.statusReason ?? null, errorCode: parsed.errorCode ?? null, errorMessage: parsed.errorMessage ?? null };
  const scope = scopeParams(parsed.scope);

  return withTransaction(db, 'complete external workflow step', async (context) => {
    await ensureReadCommitted(context, 'workflow.external_completion_unsupported_isolation', 'External workflow step completion');
    const { tx } = context;
    const visible = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM runledger.workflow_runs
       WHERE id = ${parsed.workflowRunId}::uuid AND ${inScope(scope, 'organization_id')}`;
    if (visible.length === 0) throw stepNotFound(parsed.stepKey);
    await lockRunStepRows(tx, parsed.workflowRunId);

    const rows = await tx.$queryRaw<(WorkflowStepRow & { same_output: boolean })[]>`
      SELECT ws.*, ws.output IS NOT DISTINCT FROM ${output}::jsonb AS same_output
        FROM runledger.workflow_steps ws
       WHERE ws.workflow_run_id = ${parsed.workflowRunId}::uuid AND ws.step_key = ${parsed.stepKey}`;
    const row = rows[0];
    if (!row) throw stepNotFound(parsed.stepKey);
    const step = toWorkflowStep(row);
    if (step.executionKind !== 'EXTERNAL') {
      throw new ValidationError('workflow.external_step_not_external', 'stepKey', `Step "${step.stepKey}" is executed by a job, not completed externally.`);
    }

    if (isTerminalStepStatus(step.status)) {
      if (step.status !== status) {
        throw new ConflictError('workflow.external_step_conflicting_completion_retry', `Step "${step.stepKey}" already ended as ${step.status}.`, {
          details: { stepKey: step.stepKey, status: step.status, requested: status },
        });
      }
      if (status === 'SUCCEEDED' && !row.same_output) {
        throw new ConflictError('workflow.external_step_conflicting_output_retry', `Step "${step.stepKey}" already succeeded with a different output.`, {
          details: { stepKey: step.stepKey },
        });
      }
      if (step.statusReason !== metadata.statusReason || step.lastErrorCode !== metadata.errorCode || step.lastErrorMessage !== metadata.errorMessage) {
        throw new ConflictError('workflow.external_step_conflicting_completion_retry', `Step "${step.stepKey}" already ended with different details.`, {
          details: { stepKey: step.stepKey, status: step.status },
        });
      }
      return step;
    }
    if (step.status !== 'WAITING_FOR_EXTERNAL') {
      throw new ConflictError('workflow.external_step_not_waiting', `Step "${step.stepKey}" is ${step.status}, not waiting for completion.`, {
        details: { stepKey: step.stepKey, status: step.status },
      });
    }

    const lock = await tryLockRunReleaseShared(tx, step.workflowRunId);
    if (!lock) throw releaseConflict(step.workflowRunId, 'release lock held exclusively (cancellation in progress)');

    // Not before its release: the release may have committed while this transaction waited for the step rows,
    // or after the caller's transaction began, so now() alone can predate it (time follows cause).
    const updated = await tx.$queryRaw<WorkflowStepRow[]>`
      UPDATE runledger.workflow_steps
         SET status = ${status}::runledger.workflow_step_status,
             finished_at = COALESCE(finished_at, GREATEST(now(), released_at)),
             status_reason = ${metadata.statusReason},
             last_error_code = ${metadata.errorCode},
             last_error_message = ${metadata.errorMessage},
             output = ${output}::jsonb,
             updated_at = now()
       WHERE id = ${step.id}::uuid
      RETURNING *`;
    await releaseDependents(tx, lock, [{ stepId: step.id, workflowRunId: step.workflowRunId, status }]);
    await recomputeWorkflowRunStatuses(tx, [step.workflowRunId]);
    return toWorkflowStep(updated[0]!);
  });
}

function stepNotFound(stepKey: string): NotFoundError {
  return new NotFoundError('workflow.external_step_not_found', `No step "${stepKey}" in this workflow run.`, { details: { stepKey } });
}
