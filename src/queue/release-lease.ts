/**
 * Releasing a lease without using up the attempt: a worker that stops (or
 * otherwise gives a job back unrun) returns it to PENDING at once, as if it
 * had never been claimed: attempt - 1, no backoff, RELEASED event, wake-up
 * notification. Fenced to the exact lease like every lifecycle write, with
 * the expiry checked against the clock at the moment the row is written (the
 * lease clock, src/queue/lifecycle.ts).
 *
 * A workflow step goes back to ENQUEUED in the same statement, looking
 * unclaimed (seed 002, claim release): no status reason, error code, message
 * or output, and no start time unless an earlier attempt started it (the job
 * is back at attempt 0). A failed earlier attempt's marks are cleared too: the
 * step is waiting for its next claim, not reporting a failure. The step rule
 * (the reaper applies it to a lease that never started, src/queue/reap.ts):
 *   UPDATE runledger.workflow_steps SET status = 'ENQUEUED',
 *          started_at = CASE WHEN <job attempt now 0> THEN NULL ELSE started_at END,
 *          finished_at = NULL, status_reason = NULL, last_error_code = NULL,
 *          last_error_message = NULL, output = NULL, updated_at = now()
 *    WHERE job_id = <the released job> AND status IN ('ENQUEUED', 'RUNNING')
 * (a step a concurrent cancellation or terminal transition moved on stays).
 *
 * One statement for direct and workflow jobs alike, so on a root client it is
 * one autocommit statement. Lock order: the job row (`locked`), then the step
 * row: the step UPDATE reads the released job through an InitPlan.
 */
import { withStatement } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { parseInput } from '../validation/parse.js';
import { leaseMismatch } from './lease.js';
import { JOB_INVALID_INPUT, releaseJobInputSchema, type ParsedJobLease, type ReleaseJobInput } from './inputs.js';
import { asTemplate } from '../db/sql-template.js';
import { releaseJobStatement } from './statements/release-job.js';

/** @example await releaseJob(prisma, { ...lease, reason: 'job.worker_shutdown' }); */
export async function releaseJob(db: Db, input: ReleaseJobInput): Promise<{ jobId: string; status: 'PENDING' }> {
  const { reason, ...l } = parseInput(releaseJobInputSchema, input, JOB_INVALID_INPUT);
  const eventId = newId();
  const [row] = await withStatement(db, 'release job', (client) => releaseStatement(client, l, reason, eventId));
  if (!row) throw leaseMismatch(l, 'release job');
  return { jobId: l.jobId, status: 'PENDING' as const };
}

async function releaseStatement(client: Tx, l: ParsedJobLease, reason: string, eventId: string): Promise<{ id: string }[]> {
  return client.$queryRaw<{ id: string }[]>(...asTemplate(releaseJobStatement(l, reason, eventId)));
}
