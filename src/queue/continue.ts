/**
 * Continuation: a handler ends a slice of a long job and asks for the next
 * (`continueNow` / `continueAfter`, src/job/continuation.ts). One
 * statement for a whole batch of leases, fenced like every lifecycle write:
 *
 *   LEASED -> PENDING   run_number + 1, attempt 0, next_run_at = now + delay,
 *                       checkpoint and progress as given (else kept),
 *                       a REQUEUED event (kind HANDLER_CONTINUATION, run
 *                       number of the new run, the checkpoint and progress),
 *                       the attempt closed CONTINUED, a wake-up when due now.
 *
 * A workflow job's step stays live: RUNNING -> ENQUEUED (status reason
 * `job.continued`), so its dependents stay blocked until a slice ends the
 * job. Only steps that opted in at enqueue (`allow_continuation`); a
 * workflow job whose step did not is left LEASED and reported
 * `not_enabled`, for the worker to fail terminally
 * (`job.workflow_handler_continuation_not_enabled`).
 *
 * A continuation is not a failure: the attempt counter starts again, so the
 * next slice has its whole failure budget, and any number of slices may
 * follow each other. The run number counts slices (the first is run 1) as it
 * counts requeues: both are REQUEUED events (the integrity checker's
 * `run_number = 1 + REQUEUED events`).
 *
 * Lock order: job rows in id order (rung 1), then their step rows (rung 2a,
 * through an InitPlan over the updated jobs); no release lock (nothing is
 * released), then their lease rows (deleted: src/queue/statements/lease-rows.ts).
 * The execution resource is released with the lease row (src/queue/claim.ts:
 * the lease row is the reservation).
 */
import { withStatement } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newIds } from '../db/ids.js';
import type { JsonValue } from '../model/json.js';
import { leaseMismatch, type LeaseIdentity } from './lease.js';
import { ConflictError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { continueJobInputSchema, JOB_INVALID_INPUT, type ContinueJobInput } from './inputs.js';
import { jsonParam } from '../model/job-rows.js';
import { asTemplate } from '../db/sql-template.js';
import { continueJobsStatement, type ContinueColumns, type ContinuedRow } from './statements/continue-jobs.js';

export interface ContinueJobItem {
  lease: LeaseIdentity;
  /** 0: runnable at once. */
  delayMs: number;
  /** undefined: keep the stored checkpoint (a `saveCheckpoint` of this slice, or an earlier one's). */
  checkpoint?: JsonValue | null | undefined;
  /** undefined: keep the stored progress. */
  progress?: JsonValue | null | undefined;
}

export type ContinueJobOutcome =
  | { jobId: string; outcome: 'continued'; runNumber: number; nextRunAt: Date }
  | { jobId: string; outcome: 'not_enabled' }
  | { jobId: string; outcome: 'lease_owner_mismatch' };

/** Continues a batch of leases in one statement (autocommit on a root client); outcomes in input order. */
export async function continueJobs(db: Db, items: readonly ContinueJobItem[]): Promise<ContinueJobOutcome[]> {
  if (items.length === 0) return [];
  const rows = await withStatement(db, 'continue jobs', (client) => continueStatement(client, items, newIds(items.length)));
  const byId = new Map(rows.map((row) => [row.id.toLowerCase(), row]));
  return items.map(({ lease }) => {
    const row = byId.get(lease.jobId.toLowerCase());
    if (row?.not_enabled) return { jobId: lease.jobId, outcome: 'not_enabled' };
    if (row && row.run_number !== null && row.next_run_at !== null)
      return { jobId: lease.jobId, outcome: 'continued', runNumber: row.run_number, nextRunAt: row.next_run_at };
    return { jobId: lease.jobId, outcome: 'lease_owner_mismatch' };
  });
}

/**
 * Ends this slice of a long job and schedules the next, for a hand-written
 * loop (a handler returns `continueNow()` / `continueAfter(ms)` instead): the
 * job goes back to PENDING as run number + 1, attempt 0, runnable after
 * `delayMs` (default 0), keeping its checkpoint and progress unless `save`
 * gives new ones (null clears). One fenced statement, as the worker's.
 * `job.lease_owner_mismatch` once the lease is gone;
 * `job.continuation_not_enabled` for a workflow job whose
 * step did not opt in (`allowContinuation`), which stays LEASED for the
 * caller to fail. Nothing is written by a refusal.
 *
 * @example
 * const next = await continueJob(prisma, { ...job, delayMs: 5_000, save: { checkpoint: { cursor } } });
 */
export async function continueJob(db: Db, input: ContinueJobInput): Promise<{ jobId: string; runNumber: number; nextRunAt: Date }> {
  const parsed = parseInput(continueJobInputSchema, input, JOB_INVALID_INPUT);
  const lease = { jobId: parsed.jobId, runNumber: parsed.runNumber, attempt: parsed.attempt, workerId: parsed.workerId };
  const [outcome] = await continueJobs(db, [{ lease, delayMs: parsed.delayMs ?? 0, checkpoint: parsed.save?.checkpoint, progress: parsed.save?.progress }]);
  if (outcome!.outcome === 'continued') return { jobId: parsed.jobId, runNumber: outcome!.runNumber, nextRunAt: outcome!.nextRunAt };
  if (outcome!.outcome === 'not_enabled') {
    throw new ConflictError('job.continuation_not_enabled', "The job's workflow step does not allow continuation.", {
      internalMessage: `continue job: step of job ${lease.jobId} has allow_continuation = false`,
      details: { jobId: lease.jobId },
    });
  }
  throw leaseMismatch(lease, 'continue job');
}

async function continueStatement(client: Tx, items: readonly ContinueJobItem[], eventIds: readonly string[]): Promise<ContinuedRow[]> {
  const leases = items.map((item) => item.lease);
  const columns: ContinueColumns = {
    jobIds: leases.map((l) => l.jobId),
    runNumbers: leases.map((l) => l.runNumber),
    attempts: leases.map((l) => l.attempt),
    workerIds: leases.map((l) => l.workerId),
    delayMs: items.map((i) => i.delayMs),
    setCheckpoint: items.map((i) => i.checkpoint !== undefined),
    checkpoints: items.map((i) => jsonParam(i.checkpoint)),
    setProgress: items.map((i) => i.progress !== undefined),
    progress: items.map((i) => jsonParam(i.progress)),
    eventIds: [...eventIds],
  };
  return client.$queryRaw<ContinuedRow[]>(...asTemplate(continueJobsStatement(columns)));
}
