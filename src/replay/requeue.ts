/**
 * Compare-and-requeue: start a new run of a DEAD_LETTERED or CANCELED direct
 * job, in place (same id, same idempotency key).
 *
 * Transition (appends REQUEUED, payload: previous run, previous status, state
 * policy, and the previous run's last error):
 *   DEAD_LETTERED | CANCELED (run n) -> PENDING (run n + 1, attempt 0, runnable now)
 * Lease columns, started_at, finished_at and output are cleared. The last
 * error is cleared too: the columns describe the current run, and the
 * REQUEUED event keeps the previous run's error. Progress and checkpoint are
 * kept or cleared by `statePolicy`. Attempts restart at 0 against the same
 * max_attempts. The job type is announced on JOB_AVAILABLE_CHANNEL at commit.
 *
 * Invariants:
 * - Compare first: only a job in the exact scope, in `expectedStatus` and
 *   `expectedRunNumber`, and not referenced by a workflow step, is requeued;
 *   otherwise the outcome is `not_found`, `expectation_mismatch` (with the
 *   actual record) or `job.workflow_requeue_not_supported`, writing nothing.
 * - A CANCELED job whose handler may still run (lease_expires_at, the
 *   quiescence marker, is after now() on the database clock) is not requeued:
 *   `cancellation_not_quiesced` with `retryAfter` = the marker. So the new run
 *   never overlaps the canceled one. The canceled handler's later writes fail
 *   their lease fence (run number and attempt changed).
 * - SUCCEEDED is not requeueable (type and validation); it is replayed.
 *
 * Lock order: the job row only, `FOR UPDATE` (run_number changes, and the
 * update must exclude a concurrent replay or requeue of the same row), taken
 * only while the row is eligible and quiesced; a stale observation and a
 * canceled lease still live are read without a lock, so neither a mismatch
 * nor a `cancellation_not_quiesced` refusal holds a worker's row in the
 * caller's transaction (a row lock lasts until that transaction ends). The
 * quiescence marker of a CANCELED job never changes while the row stays in
 * the expected status and run, so the unlocked read decides as the lock would.
 * Any isolation level works: under READ COMMITTED the locking read is retried
 * when the row became eligible between statements; stronger levels see one
 * snapshot, where that cannot happen.
 */
import { withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { scopeParams } from '../db/scope.js';
import { InternalError } from '../errors/runledger-error.js';
import { toJob, type Job, type JobRow, JOB_ROW_COLUMNS } from '../model/job-rows.js';
import { parseInput } from '../validation/parse.js';
import { unstableRow, workflowRequeueNotSupported } from './errors.js';
import { compareAndRequeueJobInputSchema, type CompareAndRequeueJobInput, type ParsedRequeueRequest } from './inputs.js';
import { JOB_INVALID_INPUT } from '../queue/inputs.js';
import { inScope } from '../db/fragments.js';
import { asTemplate } from '../db/sql-template.js';
import { requeueJobStatement } from '../queue/statements/requeue-jobs.js';

const OPERATION = 'compare and requeue job';

const MAX_ROUNDS = 5;

export type CompareAndRequeueJobResult =
  /** The job as stored after the requeue: PENDING, next run, attempt 0. */
  | { kind: 'requeued'; job: Job }
  /** The job exists in scope but is not in the expected status and run. */
  | { kind: 'expectation_mismatch'; actual: Job }
  /** No job in the exact scope. */
  | { kind: 'not_found' }
  /** A canceled handler's lease runs until `retryAfter`; ask again then. */
  | { kind: 'cancellation_not_quiesced'; retryAfter: Date };

/**
 * Requeues a dead-lettered or canceled direct job as a new run of the same
 * job, if it is still what the caller saw. Joins the caller's interactive
 * transaction or opens its own. Admin scope matches any organization.
 *
 * @example
 * const result = await compareAndRequeueJob(prisma, {
 *   scope: noOrganizationScope(),
 *   jobId: job.id,
 *   expectedStatus: 'DEAD_LETTERED',
 *   expectedRunNumber: job.runNumber,
 *   statePolicy: 'preserve_progress_and_checkpoint',
 * });
 * if (result.kind === 'cancellation_not_quiesced') scheduleRetry(result.retryAfter);
 */
export async function compareAndRequeueJob(db: Db, input: CompareAndRequeueJobInput): Promise<CompareAndRequeueJobResult> {
  const request = parseInput(compareAndRequeueJobInputSchema, input, JOB_INVALID_INPUT);
  const eventId = newId();
  return withTransaction(db, OPERATION, async ({ tx }) => {
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const locked = await lockEligibleJobTx(tx, request);
      if (locked) return { kind: 'requeued', job: await requeueLockedJobTx(tx, request, locked, eventId) };
      const actual = await readJobTx(tx, request);
      if (!actual) return { kind: 'not_found' };
      if (actual.status !== request.expectedStatus || actual.run_number !== request.expectedRunNumber) {
        return { kind: 'expectation_mismatch', actual: toJob(actual) };
      }
      if (actual.workflow_managed) throw workflowRequeueNotSupported(actual.id, OPERATION);
      // Read, not locked (module comment): the refusal leaves the row free for the canceled handler's worker.
      if (actual.lease_live) return { kind: 'cancellation_not_quiesced', retryAfter: actual.lease_expires_at! };
      // Eligible now but not at the locking read's snapshot: retry it.
    }
    throw unstableRow(request.jobId, OPERATION);
  });
}

/** The row, locked, when it is eligible and no canceled lease is live; otherwise nothing is locked. */
async function lockEligibleJobTx(tx: Tx, request: ParsedRequeueRequest): Promise<JobRow | undefined> {
  const s = scopeParams(request.scope);
  const rows = await tx.$queryRaw<JobRow[]>`
    SELECT ${JOB_ROW_COLUMNS}
      FROM runledger.job_queue jq
     WHERE jq.id = ${request.jobId}::uuid
       AND ${inScope(s, 'jq.organization_id')}
       AND jq.status = ${request.expectedStatus}::runledger.job_status
       AND jq.run_number = ${request.expectedRunNumber}::int
       AND jq.workflow_step_id IS NULL
       AND NOT COALESCE(jq.lease_expires_at > now(), false)
       FOR UPDATE OF jq`;
  return rows[0];
}

async function readJobTx(tx: Tx, request: ParsedRequeueRequest): Promise<(JobRow & { workflow_managed: boolean; lease_live: boolean }) | undefined> {
  const s = scopeParams(request.scope);
  const rows = await tx.$queryRaw<(JobRow & { workflow_managed: boolean; lease_live: boolean })[]>`
    SELECT ${JOB_ROW_COLUMNS},
           jq.workflow_step_id IS NOT NULL AS workflow_managed,
           COALESCE(jq.lease_expires_at > now(), false) AS lease_live
      FROM runledger.job_queue jq
     WHERE jq.id = ${request.jobId}::uuid
       AND ${inScope(s, 'jq.organization_id')}`;
  return rows[0];
}

async function requeueLockedJobTx(tx: Tx, request: ParsedRequeueRequest, previous: JobRow, eventId: string): Promise<Job> {
  const reset = request.statePolicy === 'reset_progress_and_checkpoint';
  const rows = await tx.$queryRaw<JobRow[]>(...asTemplate(requeueJobStatement(previous, request.statePolicy, reset, eventId)));
  const row = rows[0];
  if (!row) {
    throw new InternalError('job.internal_state', 'The job changed while it was locked.', {
      internalMessage: `${OPERATION}: locked ${previous.status} job ${previous.id} run ${previous.run_number} matched no row on update`,
    });
  }
  return toJob(row);
}
