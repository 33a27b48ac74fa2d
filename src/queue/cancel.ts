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
import { sqltag } from '@prisma/client/runtime/client';
import type { Db } from '../client/types.js';
import { withTransaction } from '../client/transaction.js';
import { newId } from '../db/ids.js';
import { scopeParams } from '../db/scope.js';
import { ConflictError, InternalError, NotFoundError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { ensureReadCommittedForWorkflowJobs } from '../coordination/job-hooks.js';
import { processWorkflowJobTerminals } from '../coordination/terminal.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from './attempt-row.js';
import { toJob, type Job, type JobRow, JOB_ROW_COLUMNS } from '../model/job-rows.js';
import { JOB_INVALID_INPUT, cancelJobInputSchema, type CancelJobInput } from './inputs.js';
import { inScope } from '../db/fragments.js';

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
    const rows = await tx.$queryRaw<(JobRow & { workflow_managed: boolean; ended_attempt_started_at: string | null })[]>`
      -- The cancellation time is read now that the row is locked (the statement above), not this transaction's
      -- now(): the lock wait, or a caller's transaction begun earlier, can put now() before the job's creation
      -- (a workflow release) or its claim, which committed first. Time follows cause.
      WITH clock AS MATERIALIZED (SELECT clock_timestamp() AS at),
      -- The row as locked above (this statement's snapshot), before the update: its attempt, if leased.
      before AS (SELECT jq.id, jq.run_number, jq.attempt, ${ATTEMPT_COLUMNS} FROM runledger.job_queue jq WHERE jq.id = ${jobId}::uuid),
      canceled AS (
        UPDATE runledger.job_queue jq
           SET status = 'CANCELED', lease_owner = NULL, heartbeat_at = NULL,
               finished_at = c.at, updated_at = c.at, ${CLEAR_ATTEMPT}
          FROM clock c
         WHERE jq.id = ${jobId}::uuid AND jq.status IN ('PENDING', 'LEASED')
        RETURNING ${JOB_ROW_COLUMNS},
                  jq.workflow_step_id IS NOT NULL AS workflow_managed
      ),
      events AS (
        INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload, created_at)
        SELECT ${eventId}::uuid, id, 'CANCELED'::runledger.job_event_type, run_number, attempt,
               jsonb_build_object('previousStatus', ${current.status}::text, 'reason', ${reason ?? null}::text), finished_at
          FROM canceled
      ),
      -- A leased job's attempt ends with the cancellation (its handler may still run until the lease expires), and
      -- moves into job_attempts (src/queue/attempt-row.ts).
      ended AS (SELECT b.* FROM before b WHERE b.id IN (SELECT id FROM canceled)),
      attempts AS (${archiveAttempts(sqltag`ended`, {
        finishedAt: sqltag`(SELECT at FROM clock)`,
        outcome: sqltag`'CANCELED'`,
        errorMessage: sqltag`${reason ?? null}::text`,
      })})
      -- The ended attempt's start, as text (microseconds kept), for the step's started_at (step-state.ts).
      SELECT c.*, (SELECT e.attempt_started_at::text FROM ended e) AS ended_attempt_started_at FROM canceled c`;
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
