/**
 * Retrying the worker's lease-fenced writes (complete, fail, release,
 * heartbeat) through a database outage.
 *
 * Why retrying is safe: every one of these writes is fenced to the exact
 * lease (job id, run number, attempt, owner, live expiry), so it changes
 * nothing once the lease is gone, and a second copy of a write that already
 * committed matches nothing. Why until the lease expires, not a fixed number
 * of attempts: until then the outcome can still be recorded; once the lease
 * expires the reaper gives the job to someone else and the handler's work is
 * done again. So a success is worth retrying for the whole lease, and no
 * longer (the fence would refuse it anyway).
 *
 * The deadline is kept on this process's clock, from the moment the claim or
 * heartbeat that granted the lease was sent: the server set the expiry after
 * that moment, so the estimate errs early and no clock skew between the
 * worker and PostgreSQL matters.
 */
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import type { CompleteJobOutcome, LeaseIdentity } from '../queue/lease.js';
import type { SettledCompleteOutcome } from '../queue/complete.js';
import { isTransientFailure, sleep } from './timing.js';

/** First retry delay; doubled per failure up to LEASE_RETRY_MAX_MS, jittered. */
export const LEASE_RETRY_BASE_MS = 100;
/** The longest pause between two attempts: an outage that ends is noticed within this. */
export const LEASE_RETRY_MAX_MS = 2_000;
/** Without a known lease: give up after this long (a lease is never shorter than a second). */
const UNKNOWN_LEASE_MS = 30_000;

/** How long confirming a completion may keep retrying its read. */
const CONFIRM_BUDGET_MS = 10_000;

/** Local-clock lease deadlines, per lease object the worker passes around (its ClaimedJob). */
const deadlines = new WeakMap<object, number>();

/** Records that `lease` is held until `sentAt + leaseSeconds` (sentAt: when the granting claim or heartbeat was sent). */
export function leaseGranted(lease: object, sentAt: number, leaseSeconds: number): void {
  deadlines.set(lease, sentAt + leaseSeconds * 1000);
}

/** When `lease` expires on this clock: as recorded, else the lease's own expiry, else a bound. */
export function leaseDeadline(lease: object): number {
  const known = deadlines.get(lease);
  if (known !== undefined) return known;
  const expiresAt = (lease as { leaseExpiresAt?: unknown }).leaseExpiresAt;
  return expiresAt instanceof Date ? expiresAt.getTime() : Date.now() + UNKNOWN_LEASE_MS;
}

export interface LeaseRetryOptions {
  /** Epoch ms after which a retry is pointless (the lease has expired). Re-read before each retry: a heartbeat may move it. */
  deadline: () => number;
  /** Stops retrying (the error of the last attempt is thrown). */
  signal?: AbortSignal;
  /** Called before each pause, for logs and metrics. */
  onRetry?: (error: unknown, failures: number, delayMs: number) => void;
  random?: () => number;
}

/**
 * Runs `write`, retrying transient failures (`isTransientFailure`:
 * `database.unavailable`, `database.timeout`, `database.transaction_conflict`,
 * `workflow.release_conflict`) with capped
 * exponential backoff (100 ms doubling to 2 s, jittered down to half) until
 * `deadline`. Anything else, and the last failure at the deadline, is thrown.
 */
export async function retryLeaseWrite<R>(write: () => Promise<R>, options: LeaseRetryOptions): Promise<R> {
  const random = options.random ?? Math.random;
  for (let failures = 1; ; failures += 1) {
    try {
      return await write();
    } catch (error) {
      if (!isTransientFailure(error) || options.signal?.aborted) throw error;
      const remaining = options.deadline() - Date.now();
      if (remaining <= 0) throw error;
      const ceiling = Math.min(LEASE_RETRY_MAX_MS, LEASE_RETRY_BASE_MS * 2 ** Math.min(failures - 1, 20));
      // "Equal jitter": never more than the cap, never so little that workers retry in lockstep.
      const delayMs = Math.min(remaining, Math.round(ceiling / 2 + (ceiling / 2) * random()));
      options.onRetry?.(error, failures, delayMs);
      await sleep(delayMs, options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
}

/** A step runner for `completeJobsSettled` that retries each step until the latest lease of the batch expires. */
export function retryUntilLeasesExpire(leases: readonly object[]): <R>(step: () => Promise<R>) => Promise<R> {
  const deadline = () => Math.max(...leases.map(leaseDeadline));
  return (step) => retryLeaseWrite(step, { deadline });
}

/**
 * A completion retried after its response was lost may find its own write
 * committed: the fence then answers `lease_owner_mismatch`. One read tells
 * that apart from a lease really lost: the job is SUCCEEDED at this lease's
 * run number and attempt (a later claim would have a higher attempt), so the
 * success is ours and is reported as such, never as lost. Other outcomes pass
 * through; if the read itself fails the mismatch stands (the job's state in
 * the database is right either way; only the report would be).
 */
export async function confirmCompletions(db: Db, leases: readonly LeaseIdentity[], outcomes: SettledCompleteOutcome[]): Promise<SettledCompleteOutcome[]> {
  const doubtful = outcomes.flatMap((outcome, index) => (outcome.outcome === 'lease_owner_mismatch' && leases[index] ? [index] : []));
  if (doubtful.length === 0) return outcomes;
  const started = Date.now();
  let rows: { id: string; run_number: number; attempt: number; finished_at: Date }[];
  try {
    rows = await retryLeaseWrite(
      () =>
        withStatement(
          db,
          'confirm completions',
          async (client) => client.$queryRaw<{ id: string; run_number: number; attempt: number; finished_at: Date }[]>`
            SELECT jq.id, jq.run_number, jq.attempt, jq.finished_at
              FROM runledger.job_queue jq
              JOIN unnest(${doubtful.map((index) => leases[index]!.jobId)}::uuid[], ${doubtful.map((index) => leases[index]!.runNumber)}::int[],
                          ${doubtful.map((index) => leases[index]!.attempt)}::int[]) AS l(job_id, run_number, attempt)
                ON jq.id = l.job_id AND jq.run_number = l.run_number AND jq.attempt = l.attempt
             WHERE jq.status = 'SUCCEEDED'`,
          { readCommitted: false },
        ),
      // Its own short budget: the lease may be over by now, and only the report is at stake.
      { deadline: () => started + CONFIRM_BUDGET_MS },
    );
  } catch {
    return outcomes;
  }
  const succeeded = new Map(rows.map((row) => [`${row.id.toLowerCase()}|${row.run_number}|${row.attempt}`, row.finished_at]));
  return outcomes.map((outcome, index) => {
    const lease = leases[index];
    const finishedAt =
      lease && outcome.outcome === 'lease_owner_mismatch' ? succeeded.get(`${lease.jobId.toLowerCase()}|${lease.runNumber}|${lease.attempt}`) : undefined;
    return finishedAt ? ({ jobId: outcome.jobId, outcome: 'succeeded', finishedAt } satisfies CompleteJobOutcome) : outcome;
  });
}
