/**
 * The queue's hook points into workflows. Every queue transition of a job that
 * backs a workflow step moves the step in the same transaction:
 *   claim / mark running   -> nothing (the step reads as RUNNING: step-state.ts)
 *   retry scheduled        -> step back to ENQUEUED (keeps started_at)
 *   succeeded / dead-lettered / canceled -> step terminal + dependency release
 * The queue learns which jobs are workflow-managed from the job row itself
 * (`workflow_step_id`, set at insert, never changed), and calls these only
 * for those, so direct jobs pay no extra round trip. Success and failure fold
 * the step transition into the job's own statement (src/queue/lifecycle.ts)
 * and call `settleTerminalSteps` for the release.
 *
 * Step -> RUNNING is not written at all: a step reads as RUNNING while its
 * job is LEASED (src/coordination/step-state.ts), so claim and mark-running touch
 * no step row.
 *
 * Lock order: the queue already holds the job rows (FOR UPDATE or UPDATE);
 * these then lock step rows. See src/coordination/locking.ts for the protocol.
 */
import { sqltag } from '@prisma/client/runtime/client';
import type { TransactionContext } from '../client/transaction.js';
import type { Tx } from '../client/types.js';
import { ValidationError } from '../errors/runledger-error.js';
import type { ErrorCode } from '../errors/codes.js';
import { LIVE_JOB_STEP, stepStartedAt } from './step-state.js';

/**
 * A retry was scheduled: the steps go back to ENQUEUED, keeping started_at as
 * the first time they began (the ended attempt's start when none is stored
 * yet: src/coordination/step-state.ts). Only live steps move: a concurrent
 * cancellation or terminal transition wins over putting a step back.
 * `attemptStartedAt` is the ended attempt's start as PostgreSQL text (its
 * microseconds kept).
 */
export async function markWorkflowStepsEnqueuedForRetry(
  tx: Tx,
  retries: readonly { jobId: string; errorCode: string | null; errorMessage: string | null; attemptStartedAt: string | null }[],
): Promise<void> {
  if (retries.length === 0) return;
  await tx.$executeRaw`
    UPDATE runledger.workflow_steps AS ws
       SET status = 'ENQUEUED',
           started_at = ${stepStartedAt(sqltag`r.attempt_started_at`)},
           finished_at = NULL,
           status_reason = 'job.retry_scheduled',
           last_error_code = r.error_code,
           last_error_message = r.error_message,
           output = NULL,
           updated_at = now()
      FROM unnest(${retries.map((r) => r.jobId)}::uuid[], ${retries.map((r) => r.errorCode)}::text[], ${retries.map((r) => r.errorMessage)}::text[],
                  ${retries.map((r) => r.attemptStartedAt)}::timestamptz[])
           AS r(job_id, error_code, error_message, attempt_started_at)
     WHERE ws.job_id = r.job_id
       AND ws.status IN ${LIVE_JOB_STEP}`;
}

/**
 * The isolation precondition of a job transition that may release workflow
 * steps, checked BEFORE its first write (a caller that catches the error and
 * commits must have changed nothing). A transaction runledger owns is READ
 * COMMITTED by construction: no round trip. On a joined transaction one
 * statement reads the isolation level and whether any of `jobIds` backs a
 * workflow step; direct jobs do not need READ COMMITTED for this, so a batch
 * of direct jobs is never refused.
 */
export async function ensureReadCommittedForWorkflowJobs(
  context: TransactionContext,
  jobIds: readonly string[],
  code: ErrorCode,
  operationLabel: string,
): Promise<void> {
  if (context.owned || jobIds.length === 0) return;
  const rows = await context.tx.$queryRaw<{ level: string; managed: boolean }[]>`
    SELECT current_setting('transaction_isolation') AS level,
           EXISTS (SELECT 1 FROM runledger.job_queue WHERE id = ANY(${[...jobIds]}::uuid[]) AND workflow_step_id IS NOT NULL) AS managed`;
  const row = rows[0];
  if (!row?.managed || row.level === 'read committed' || row.level === 'read uncommitted') return;
  throw new ValidationError(code, 'transaction.isolationLevel', `${operationLabel} requires a READ COMMITTED transaction.`, {
    internalMessage: `${operationLabel}: caller transaction isolation is ${row.level}`,
    details: { isolationLevel: row.level },
  });
}
