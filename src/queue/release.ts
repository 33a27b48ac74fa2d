/**
 * Releasing a lease without using up the attempt: a worker that stops (or
 * otherwise gives a job back unrun) returns it to PENDING at once, as if it
 * had never been claimed: attempt - 1, no backoff, RELEASED event, wake-up
 * notification. Fenced to the exact lease like every lifecycle write; a
 * workflow step goes back to ENQUEUED in the same transaction.
 *
 * On a root client a direct job is released by one autocommit statement (it
 * matches only jobs no step points at); a workflow-managed job, or a lease
 * the fence refuses, then goes through the transaction, which re-checks the
 * fence and reports the mismatch (see src/queue/lifecycle.ts).
 */
import { canAutocommit, withStatement, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { JOB_AVAILABLE_CHANNEL } from '../db/constants.js';
import { newId } from '../db/ids.js';
import { parseInput } from '../validation/parse.js';
import { storableText } from '../validation/primitives.js';
import { z } from 'zod';
import { markWorkflowStepsEnqueuedForRetry } from '../workflow/job-hooks.js';
import { leaseMismatch, type LeaseIdentity } from './lifecycle.js';
import { JOB_INVALID_INPUT, jobLeaseSchema, type ParsedJobLease } from './schemas.js';

const releaseOptionsSchema = z.strictObject({ reason: storableText.min(1).max(200).default('job.released') });

/** @example await releaseJob(prisma, lease, { reason: 'job.worker_shutdown' }); */
export async function releaseJob(db: Db, lease: LeaseIdentity, options: { reason?: string } = {}): Promise<{ jobId: string; status: 'PENDING' }> {
  const l = parseInput(jobLeaseSchema, lease, JOB_INVALID_INPUT);
  const { reason } = parseInput(releaseOptionsSchema, options, JOB_INVALID_INPUT);
  const eventId = newId();
  if (await canAutocommit(db, 'release job')) {
    const [row] = await withStatement(db, 'release job', (client) => releaseStatement(client, l, reason, eventId, true));
    if (row) return { jobId: l.jobId, status: 'PENDING' as const };
  }
  return withTransaction(db, 'release job', async ({ tx }) => {
    const [row] = await releaseStatement(tx, l, reason, eventId, false);
    if (!row) throw leaseMismatch(l, 'release job');
    if (row.workflow_managed) await markWorkflowStepsEnqueuedForRetry(tx, [{ jobId: l.jobId, errorCode: reason, errorMessage: 'The lease was released unrun.' }]);
    return { jobId: l.jobId, status: 'PENDING' as const };
  });
}

/** The release statement; `directOnly` leaves workflow-managed jobs untouched (the fast path). */
async function releaseStatement(
  client: Tx,
  l: ParsedJobLease,
  reason: string,
  eventId: string,
  directOnly: boolean,
): Promise<{ workflow_managed: boolean }[]> {
  return client.$queryRaw<{ workflow_managed: boolean }[]>`
    WITH released AS (
      UPDATE runledger.job_queue jq
         SET status = 'PENDING', attempt = jq.attempt - 1, next_run_at = now(),
             lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL, updated_at = now()
       WHERE jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
         AND jq.lease_owner = ${l.workerId} AND jq.status = 'LEASED' AND jq.lease_expires_at > now()
         AND (NOT ${directOnly}::boolean OR jq.workflow_step_id IS NULL)
      RETURNING jq.id, jq.job_type, jq.run_number, jq.attempt,
                jq.workflow_step_id IS NOT NULL AS workflow_managed
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT ${eventId}::uuid, id, 'RELEASED', run_number, attempt,
             jsonb_build_object('reason', ${reason}::text, 'workerId', ${l.workerId}::text, 'releasedAttempt', ${l.attempt}::int)
        FROM released
    ),
    notified AS (SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, job_type)) AS n FROM released)
    SELECT workflow_managed FROM released CROSS JOIN notified`;
}
