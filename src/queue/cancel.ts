/**
 * Cancel one job, within an exact scope.
 *
 * Transitions: PENDING -> CANCELED; LEASED -> CANCELED keeping
 * `lease_expires_at` as the quiescence marker (the handler may still be
 * running until then; a replacement must not overlap it; owner and heartbeat
 * are cleared as the job_queue_lease_columns CHECK requires, which also makes
 * every later write of that handler fail its lease fence). CANCELED again
 * returns the job unchanged. SUCCEEDED / DEAD_LETTERED: `job.not_cancelable`.
 * Not visible in the scope: `job.not_found` (another organization's job is
 * indistinguishable from a missing one).
 *
 * Lock order: the job row (SELECT ... FOR UPDATE) first, then, for a
 * workflow-managed job, its step rows in the terminal hook. Job row before
 * step rows is the global order, shared with the lifecycle and the workflow
 * engine.
 */
import type { Db } from '../client/types.js';
import { withTransaction } from '../client/transaction.js';
import { newId } from '../db/ids.js';
import { scopeParams } from '../db/scope.js';
import { ConflictError, InternalError, NotFoundError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { ensureReadCommittedForWorkflowJobs } from '../coordination/job-hooks.js';
import { processWorkflowJobTerminals } from '../coordination/terminal.js';
import { toJob, type Job, type JobRow, JOB_ROW_COLUMNS } from '../model/job-rows.js';
import { JOB_INVALID_INPUT, cancelJobInputSchema, type CancelJobInput } from './inputs.js';
import { inScope } from '../db/fragments.js';
import { asTemplate } from '../db/sql-template.js';
import { cancelJobStatement, type CanceledJobRow } from './statements/cancel-job.js';

/** status_reason given to a canceled job's workflow step when no reason is passed. */
const DEFAULT_CANCEL_REASON = 'job.canceled';

/**
 * Cancels a pending or leased job and returns it as stored afterwards.
 *
 * @example
 * await cancelJob(prisma, { jobId, scope: organizationScope(orgId), reason: 'customer request' });
 */
export async function cancelJob(db: Db, input: CancelJobInput): Promise<Job> {
  const { jobId, scope, reason } = parseInput(cancelJobInputSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(scope);
  const eventId = newId();
  return withTransaction(db, 'cancel job', async (context) => {
    const { tx } = context;
    const locked = await tx.$queryRaw<(JobRow & { workflow_step_id: string | null })[]>`
      SELECT ${JOB_ROW_COLUMNS}, jq.workflow_step_id
        FROM runledger.job_queue jq
       WHERE jq.id = ${jobId}::uuid
         AND ${inScope(s, 'jq.organization_id')}
         FOR UPDATE`;
    const current = locked[0];
    if (!current) {
      throw new NotFoundError('job.not_found', 'The job does not exist.', {
        internalMessage: `cancel job: job ${jobId} not found in scope ${scope.kind}`,
        details: { jobId },
      });
    }
    const { workflow_step_id: workflowStepId, ...currentJob } = current;
    // Idempotent: an already CANCELED job is returned as it is (the row lock makes this read final).
    if (current.status === 'CANCELED') return toJob(currentJob);
    if (current.status === 'SUCCEEDED' || current.status === 'DEAD_LETTERED') {
      throw new ConflictError('job.not_cancelable', `A ${current.status} job cannot be canceled.`, {
        details: { jobId, status: current.status },
      });
    }
    // Before the first write: canceling a workflow job releases its step's dependents (READ COMMITTED only).
    if (workflowStepId !== null) {
      await ensureReadCommittedForWorkflowJobs(context, [jobId], 'workflow.terminal_completion_unsupported_isolation', 'Workflow job cancellation');
    }
    const rows = await tx.$queryRaw<CanceledJobRow[]>(...asTemplate(cancelJobStatement(jobId, current.status, reason ?? null, eventId)));
    const row = rows[0];
    if (!row) {
      throw new InternalError('job.internal_state', 'The job changed while it was locked.', {
        internalMessage: `cancel job: locked ${current.status} job ${jobId} matched no row on update`,
      });
    }
    if (row.workflow_managed) {
      await processWorkflowJobTerminals(tx, [
        { jobId, status: 'CANCELED', statusReason: reason ?? DEFAULT_CANCEL_REASON, attemptStartedAt: row.ended_attempt_started_at },
      ]);
    }
    const { workflow_managed: _managed, ended_attempt_started_at: _started, ...job } = row;
    return toJob(job);
  });
}
