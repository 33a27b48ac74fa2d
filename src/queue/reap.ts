/**
 * Reaping: leases whose expiry has passed belong to workers that crashed or
 * stalled. One statement handles a bounded batch:
 *   never started          -> PENDING, runnable now, attempt given back (LEASE_EXPIRED, started: false)
 *   attempt < max_attempts -> PENDING, runnable now          (LEASE_EXPIRED)
 *   otherwise              -> DEAD_LETTERED, job.lease_expired (LEASE_EXPIRED, DEAD_LETTERED)
 * The stale worker's later writes fail their lease fence (status and owner
 * changed), so its result is never recorded over the next attempt's.
 *
 * "Never started": claimed without `markRunning` and no `markJobRunning`
 * since, i.e. no RUNNING event after the lease's LEASED event (the job row has
 * no per-lease start mark: `started_at` is the first start ever, and a
 * released attempt is claimed again under the same number, so an older
 * RUNNING event of the same attempt does not count). No handler ran, so the
 * expiry is no failure of the job: it is returned as `releaseJob` would
 * return it (attempt - 1, its last error kept, a workflow step put back as
 * unclaimed by the rule in src/queue/release-lease.ts), and never dead-lettered,
 * even at `maxAttempts: 1`. A RUNNING event committed after this statement's
 * snapshot is not seen; that needs a mark-running written before the lease
 * expired (its fence) yet committed after the reaper started, and costs at
 * most one uncharged attempt.
 *
 * Lock order: job rows oldest expiry first with SKIP LOCKED (a row a worker is
 * completing right now is left for the next pass, never waited for), then
 * step rows in the workflow hooks.
 */
import type { Db } from '../client/types.js';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import { newIds } from '../db/ids.js';
import { parseInput } from '../validation/parse.js';
import { markWorkflowStepsEnqueuedForRetry } from '../coordination/job-hooks.js';
import { processWorkflowJobTerminals } from '../coordination/terminal.js';
import { JOB_INVALID_INPUT, reapExpiredLeasesInputSchema, type ReapExpiredLeasesInput } from './inputs.js';
import { asTemplate } from '../db/sql-template.js';
import { LEASE_EXPIRED_CODE, LEASE_EXPIRED_MESSAGE, reapExpiredLeasesStatement, type ReapedRow } from './statements/reap-expired-leases.js';

export interface ReapResult {
  /** Back to PENDING for another attempt (a lease that never started: without using one up). */
  retried: string[];
  /** Out of attempts. */
  deadLettered: string[];
}

/**
 * Retries or dead-letters up to `limit` jobs whose lease has expired. Call it
 * in a loop until both lists come back shorter than `limit`.
 */
export async function reapExpiredLeases(db: Db, input: ReapExpiredLeasesInput): Promise<ReapResult> {
  const { limit } = parseInput(reapExpiredLeasesInputSchema, input, JOB_INVALID_INPUT);
  // All LEASE_EXPIRED ids precede all DEAD_LETTERED ids, so a job's events sort as they happened.
  const eventIds = newIds(limit * 2);
  return withTransaction(db, 'reap expired leases', async (context) => {
    // Before the first write: dead-lettering a workflow job releases steps, which needs READ COMMITTED.
    await ensureReadCommitted(context, 'job.reap_unsupported_isolation', 'Reaping expired leases');
    const { tx } = context;
    const rows = await tx.$queryRaw<ReapedRow[]>(...asTemplate(reapExpiredLeasesStatement(limit, eventIds)));
    const retried = rows.filter((row) => row.status === 'PENDING');
    const deadLettered = rows.filter((row) => row.status === 'DEAD_LETTERED');
    // Never-started ones had their steps put back in the statement above.
    const managedRetries = retried.filter((row) => row.workflow_managed && row.started);
    if (managedRetries.length > 0) {
      await markWorkflowStepsEnqueuedForRetry(
        tx,
        managedRetries.map((row) => ({
          jobId: row.id,
          errorCode: LEASE_EXPIRED_CODE,
          errorMessage: LEASE_EXPIRED_MESSAGE,
          attemptStartedAt: row.attempt_started_at,
        })),
      );
    }
    const managedDead = deadLettered.filter((row) => row.workflow_managed);
    if (managedDead.length > 0) {
      await processWorkflowJobTerminals(
        tx,
        managedDead.map((row) => ({
          jobId: row.id,
          status: 'FAILED' as const,
          errorCode: LEASE_EXPIRED_CODE,
          errorMessage: LEASE_EXPIRED_MESSAGE,
          attemptStartedAt: row.started ? row.attempt_started_at : null,
        })),
      );
    }
    return { retried: retried.map((row) => row.id), deadLettered: deadLettered.map((row) => row.id) };
  });
}
