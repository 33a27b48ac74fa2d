/**
 * The queue's hook points into workflows. Every queue transition of a job that
 * backs a workflow step moves the step in the same transaction:
 *   claim / mark running   -> step RUNNING
 *   retry scheduled        -> step back to ENQUEUED (keeps started_at)
 *   succeeded / dead-lettered / canceled -> step terminal + dependency release
 * The queue learns which jobs are workflow-managed from its own UPDATE's
 * RETURNING (`EXISTS (SELECT 1 FROM workflow_steps WHERE job_id = ...)`), and
 * calls these only for those, so direct jobs pay no extra round trip.
 *
 * Step -> RUNNING has no function here: it is one UPDATE that the claim
 * (src/queue/claim.ts) and mark-running (src/queue/lifecycle.ts) statements
 * carry as a data-modifying CTE, so that each stays a single statement (one
 * autocommit round trip on a root client). The rule, kept identical in both:
 *   UPDATE runledger.workflow_steps SET status = 'RUNNING',
 *          started_at = COALESCE(started_at, now()), output = NULL, updated_at = now()
 *    WHERE job_id = ANY(<the jobs the statement claimed / marked, workflow-managed ones>)
 *      AND status IN ('ENQUEUED', 'RUNNING')
 * (a step a concurrent cancellation or terminal transition moved on stays).
 *
 * Lock order: the queue already holds the job rows (FOR UPDATE or UPDATE);
 * these then lock step rows. See src/workflow/locking.ts for the protocol.
 */
import { ensureReadCommitted } from '../client/transaction.js';
import type { Tx } from '../client/types.js';
import type { JsonValue } from '../validation/primitives.js';
import { processWorkflowStepTerminalByJobId } from './terminal.js';

export interface WorkflowJobTerminalTransition {
  jobId: string;
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELED';
  statusReason?: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
  /** Kept only when status is SUCCEEDED. */
  output?: JsonValue | null;
}

/**
 * A retry was scheduled: the steps go back to ENQUEUED, keeping started_at as
 * the first time they began. Only RUNNING steps move: a concurrent
 * cancellation or terminal transition wins over putting a step back.
 */
export async function markWorkflowStepsEnqueuedForRetry(
  tx: Tx,
  retries: readonly { jobId: string; errorCode: string | null; errorMessage: string | null }[],
): Promise<void> {
  if (retries.length === 0) return;
  await tx.$executeRaw`
    UPDATE runledger.workflow_steps AS ws
       SET status = 'ENQUEUED',
           finished_at = NULL,
           status_reason = 'job.retry_scheduled',
           last_error_code = r.error_code,
           last_error_message = r.error_message,
           output = NULL,
           updated_at = now()
      FROM unnest(${retries.map((r) => r.jobId)}::uuid[], ${retries.map((r) => r.errorCode)}::text[], ${retries.map((r) => r.errorMessage)}::text[])
           AS r(job_id, error_code, error_message)
     WHERE ws.job_id = r.job_id
       AND ws.status = 'RUNNING'`;
}

/**
 * Terminal transitions of workflow jobs, each with its release cascade, in the
 * caller's transaction. Jobs are processed in id order so that two batches
 * touching the same runs take step locks in the same order.
 */
export async function processWorkflowJobTerminals(
  tx: Tx,
  transitions: readonly WorkflowJobTerminalTransition[],
  options: { transactionOwned?: boolean } = {},
): Promise<void> {
  if (transitions.length === 0) return;
  // Release relies on READ COMMITTED; a joined transaction is checked once per batch.
  await ensureReadCommitted(
    { tx, owned: options.transactionOwned ?? false },
    'workflow.terminal_completion_unsupported_isolation',
    'Workflow job completion',
  );
  const ordered = [...transitions].sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  for (const transition of ordered) {
    await processWorkflowStepTerminalByJobId(tx, transition);
  }
}
