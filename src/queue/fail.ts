/**
 * Failing a leased job: a retry (back to PENDING after a backoff, its step
 * back to ENQUEUED) or a dead-letter (its step FAILED and its dependents
 * released). Fencing, the lease clock and round trips: see lifecycle.ts.
 */
import { canAutocommit, withStatement, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { parseInput } from '../validation/parse.js';
import { ensureReadCommittedForWorkflowJobs } from '../coordination/job-hooks.js';
import { settleTerminalSteps } from '../coordination/terminal.js';
import { leaseMismatch, type FailJobResult } from './lease.js';
import { resolveBackoff, retryDelayMs } from '../job/retry-policy.js';
import { JOB_INVALID_INPUT, failJobInputSchema, type FailJobInput, type ParsedJobLease } from './inputs.js';
import { asTemplate } from '../db/sql-template.js';
import { failJobStatement, type Backoff, type FailedRow, type FailureFields } from './statements/fail-job.js';

/**
 * Records a failed attempt. Retryable with attempts left: back to PENDING
 * after an exponential, jittered backoff, never before `retryNotBefore`
 * (RETRY_SCHEDULED). Otherwise DEAD_LETTERED.
 */
export async function failJob(db: Db, input: FailJobInput): Promise<FailJobResult> {
  const parsed = parseInput(failJobInputSchema, input, JOB_INVALID_INPUT);
  const { jobId, runNumber, attempt, workerId, workflowManaged } = parsed;
  const l: ParsedJobLease = { jobId, runNumber, attempt, workerId, ...(workflowManaged === undefined ? {} : { workflowManaged }) };
  const o: FailureFields = { ...parsed.error, retryable: parsed.retryable, retryNotBefore: parsed.retryNotBefore };
  // The fence pins attempt = l.attempt, so the backoff can be computed here (the job type's policy, given by the
  // worker). A job with its own backoff (stored at enqueue) gets its delay computed in the statement from the
  // row, with the same jitter fraction: no read before the write.
  const jitter = Math.random();
  const b: Backoff = { delayMs: retryDelayMs(l.attempt, resolveBackoff(parsed.backoff), () => jitter), jitter };
  const eventId = newId();
  const result = (row: FailedRow): FailJobResult => ({ jobId: l.jobId, status: row.status, nextRunAt: row.status === 'PENDING' ? row.next_run_at : null });
  if (l.workflowManaged !== true && (await canAutocommit(db, 'fail job'))) {
    // Fast path: a direct job in one autocommit statement. Nothing matched: workflow-managed or refused, see below.
    const [row] = await withStatement(db, 'fail job', (client) => failStatement(client, l, o, b, eventId, true));
    if (row) return result(row);
  }
  return withTransaction(db, 'fail job', async (context) => {
    await ensureReadCommittedForWorkflowJobs(context, [l.jobId], 'workflow.terminal_completion_unsupported_isolation', 'Workflow job failure');
    const [row] = await failStatement(context.tx, l, o, b, eventId, false);
    if (!row) throw leaseMismatch(l, 'fail job');
    if (row.step_run_id !== null && row.status === 'DEAD_LETTERED') {
      await settleTerminalSteps(context.tx, [
        { stepId: row.workflow_step_id!, workflowRunId: row.step_run_id, status: 'FAILED', hasDependents: row.has_dependents !== false },
      ]);
    }
    return result(row);
  });
}

/**
 * The failure statement: the job row (fenced at the time of the write), its
 * event, and for a workflow-managed job its step (rung 2a): back to ENQUEUED
 * with the error when a retry is scheduled, FAILED when dead-lettered (a step
 * already terminal stays). `directOnly` leaves workflow-managed jobs
 * untouched (the fast path).
 */
async function failStatement(client: Tx, l: ParsedJobLease, o: FailureFields, b: Backoff, eventId: string, directOnly: boolean): Promise<FailedRow[]> {
  return client.$queryRaw<FailedRow[]>(...asTemplate(failJobStatement(l, o, b, eventId, directOnly)));
}
