/**
 * Lifecycle of a leased job: mark running and heartbeat here; completion in
 * complete.ts and failure in fail.ts (re-exported below), which follow the
 * same rules.
 *
 * Invariants:
 * - Every write is fenced to the exact lease in its WHERE clause: job id, run
 *   number, attempt, owner, `status = 'LEASED'` and a lease unexpired at the
 *   moment the row is written (see "The lease clock" below).
 *   Zero rows means the lease is stale or foreign: `job.lease_owner_mismatch`,
 *   and nothing was changed (the statement matched nothing).
 * - Each transition records its trail in the same statement: the job_events
 *   row, or, for the hot transitions (claim, running, success), the job
 *   row's attempt columns that stand for it (src/queue/attempt-row.ts, the
 *   job_trail view).
 * - Workflow-managed jobs (`workflow_step_id` on the job row) move their
 *   steps in the same statement; direct jobs pay no extra round trip.
 * - Round trips on a root client (`withStatement`, src/client/transaction.ts):
 *   mark running and heartbeat are one statement (mark running folds the
 *   step -> RUNNING hook into it as a data-modifying CTE), sent as one
 *   autocommit statement. Complete and fail of direct jobs are one
 *   autocommit statement that only matches direct jobs; whatever it leaves
 *   unresolved (a workflow-managed job, or a lease the fence refuses) goes
 *   through one transaction, which re-checks the fence and reports the
 *   mismatch; the claim's `workflowManaged` hint sends a workflow job there
 *   directly. A lease the fast path completed could not be completed twice:
 *   the fence requires `status = 'LEASED'`. On a joined transaction
 *   everything runs in it.
 *
 * Lock order: the job rows (in id order), then their step rows; the full
 * protocol is at the top of src/coordination/locking.ts.
 */
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { parseInput } from '../validation/parse.js';
import type { JobLease } from '../model/job-rows.js';
import { leaseMismatch, type LeaseIdentity } from './lease.js';
import { JOB_INVALID_INPUT, heartbeatJobInputSchema, jobLeaseSchema, type HeartbeatJobInput } from './inputs.js';
import { asTemplate } from '../db/sql-template.js';
import { heartbeatJobStatement, markJobRunningStatement } from './statements/lease-writes.js';

/*
 * The lease clock. `now()` is the time the statement (or transaction) started;
 * a fenced write that waited on the job row's lock (a cancellation, a batch,
 * any transaction holding the row) could pass `lease_expires_at > now()` after
 * the lease expired and store a "new" expiry already in the past. Checking
 * `clock_timestamp()` in the UPDATE's WHERE is not enough either: a holder
 * that only locked the row (FOR UPDATE, no change) lets the waiting UPDATE go
 * on without re-evaluating its WHERE clause, which it evaluated before the
 * wait. So a fenced statement first locks the row (`locked`), then reads the
 * clock from that CTE (`clock`, evaluated only once the lock is held), and the
 * UPDATE compares with and computes from that one instant. A holder that did
 * change the row makes the UPDATE re-check its WHERE against the new row
 * version, with the same instant. Cost: one more index probe of a row the
 * statement writes anyway. release.ts does the same.
 */

/**
 * Records that the handler started. Idempotent per attempt: a second call
 * records no second RUNNING event. `claimJobs({ markRunning: true })` does the
 * same inside the claim.
 */
export async function markJobRunning(db: Db, lease: LeaseIdentity): Promise<void> {
  const l = parseInput(jobLeaseSchema, lease, JOB_INVALID_INPUT, 'lease');
  // One statement on the job row only: a workflow step reads as RUNNING while its job is LEASED
  // (src/coordination/step-state.ts), so no step row is written here.
  await withStatement(db, 'mark job running', async (client) => {
    const rows = await client.$queryRaw<{ workflow_managed: boolean }[]>(...asTemplate(markJobRunningStatement(l)));
    if (!rows[0]) throw leaseMismatch(l, 'mark job running');
  });
}

/**
 * Extends the lease from now by `leaseSeconds` (default: the length of the
 * current grant, i.e. what the worker asked for at claim time) and saves
 * progress/checkpoint when given (null clears). Appends no event.
 */
export async function heartbeatJob(db: Db, input: HeartbeatJobInput): Promise<JobLease> {
  const o = parseInput(heartbeatJobInputSchema, input, JOB_INVALID_INPUT);
  const l = { jobId: o.jobId, runNumber: o.runNumber, attempt: o.attempt, workerId: o.workerId };
  const save = o.save ?? {};
  return withStatement(db, 'heartbeat job', async (client) => {
    const rows = await client.$queryRaw<{ lease_expires_at: Date }[]>(...asTemplate(heartbeatJobStatement(l, o.leaseSeconds ?? null, save)));
    const row = rows[0];
    if (!row) throw leaseMismatch(l, 'heartbeat job');
    return { ...l, leaseExpiresAt: row.lease_expires_at };
  });
}
