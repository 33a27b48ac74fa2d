/**
 * Attempt history: one attempt per lease of a job, read from
 * runledger.job_attempt_history. The claim opens the attempt on the job row
 * itself, and a success leaves it there, closed; every other end moves it
 * into a job_attempts row, written by the statement that ends the lease, in
 * the same statement as the job's transition (src/queue/attempt-row.ts):
 *
 *   complete (complete.ts)          -> SUCCEEDED     (stays on the job row)
 *   fail, retry scheduled (fail.ts) -> FAILED_RETRY  (delay, its source, requested and effective next run)
 *   fail, no retry (fail.ts)        -> DEAD_LETTERED
 *   release (release.ts)            -> RELEASED      (error_code: the release reason)
 *   reap (reap.ts)                  -> LEASE_EXPIRED (the job retried or dead-lettered: see its status)
 *   cancel (cancel.ts, workflow)    -> CANCELED
 *   continuation (continue.ts)      -> CONTINUED     (next run time of the next slice)
 *
 * A timeout is a failure with the code `job.timeout` (FAILED_RETRY or
 * DEAD_LETTERED), not an outcome of its own: the outcome says what happened
 * to the job, the error code why. Invariants (checked by src/integrity/):
 * at most one open attempt per job, and an open one belongs to the job's
 * live lease (LEASED, same run number, attempt and worker). Every close
 * writes `GREATEST(its clock, started_at)`: a cancellation's now() is its
 * transaction's start, which can precede a claim it then waited for.
 */
import { z } from 'zod';
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { scopeParams, scopeSchema } from '../db/scope.js';
import { NotFoundError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { uuid } from '../validation/primitives.js';
import { JOB_INVALID_INPUT, bigintPageFields, type Page } from './inputs.js';
import { inScope } from '../db/fragments.js';

export type JobAttemptOutcome = 'SUCCEEDED' | 'FAILED_RETRY' | 'DEAD_LETTERED' | 'RELEASED' | 'LEASE_EXPIRED' | 'CANCELED' | 'CONTINUED';

/** Where a scheduled retry's delay came from: the backoff policy, or the handler's retry-not-before when it was later. */
export type RetryDelaySource = 'POLICY' | 'HANDLER_NOT_BEFORE';

export interface JobAttempt {
  jobId: string;
  /** Orders a job's attempts (a released attempt is claimed again under the same attempt number). */
  seq: string;
  runNumber: number;
  attempt: number;
  workerId: string;
  startedAt: Date;
  /** null while the attempt holds the job's lease. */
  finishedAt: Date | null;
  outcome: JobAttemptOutcome | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** FAILED_RETRY: the delay the retry got, and its source. */
  retryDelayMs: number | null;
  retryDelaySource: RetryDelaySource | null;
  /** What the handler asked for (a retry-not-before), when it did. */
  requestedNextRunAt: Date | null;
  /** When the job became runnable again (FAILED_RETRY, RELEASED, a retried LEASE_EXPIRED, CONTINUED). */
  nextRunAt: Date | null;
}

interface JobAttemptRow {
  job_id: string;
  seq: string;
  run_number: number;
  attempt: number;
  worker_id: string;
  started_at: Date;
  finished_at: Date | null;
  outcome: JobAttemptOutcome | null;
  error_code: string | null;
  error_message: string | null;
  retry_delay_ms: string | null;
  retry_delay_source: RetryDelaySource | null;
  requested_next_run_at: Date | null;
  next_run_at: Date | null;
}

function toJobAttempt(row: JobAttemptRow): JobAttempt {
  return {
    jobId: row.job_id,
    seq: row.seq,
    runNumber: row.run_number,
    attempt: row.attempt,
    workerId: row.worker_id,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    outcome: row.outcome,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    retryDelayMs: row.retry_delay_ms === null ? null : Number(row.retry_delay_ms),
    retryDelaySource: row.retry_delay_source,
    requestedNextRunAt: row.requested_next_run_at,
    nextRunAt: row.next_run_at,
  };
}

export const listJobAttemptsInputSchema = z.strictObject({ scope: scopeSchema, jobId: uuid, ...bigintPageFields(/^[0-9]{1,19}$/, 'listJobAttempts') });
export type ListJobAttemptsInput = z.input<typeof listJobAttemptsInputSchema>;

/**
 * A job's attempts in the order they started, a page at a time; `job.not_found` outside `scope`.
 *
 * @example
 * const { items } = await listJobAttempts(prisma, { scope: noOrganizationScope(), jobId });
 */
export async function listJobAttempts(db: Db, input: ListJobAttemptsInput): Promise<Page<JobAttempt>> {
  const ref = parseInput(listJobAttemptsInputSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(ref.scope);
  return withStatement(
    db,
    'list job attempts',
    async (tx) => {
      // LEFT JOIN: one row with a NULL attempt still proves the job is in scope.
      const rows = await tx.$queryRaw<(Omit<JobAttemptRow, 'seq'> & { seq: string | null; in_scope: string })[]>`
      SELECT jq.id AS in_scope, a.job_id, a.seq::text AS seq, a.run_number, a.attempt, a.worker_id, a.started_at, a.finished_at,
             a.outcome::text AS outcome, a.error_code, a.error_message, a.retry_delay_ms::text AS retry_delay_ms,
             a.retry_delay_source::text AS retry_delay_source, a.requested_next_run_at, a.next_run_at
        FROM runledger.job_queue jq
        LEFT JOIN LATERAL (
          SELECT at.* FROM runledger.job_attempt_history at
           WHERE at.job_id = jq.id AND (${ref.cursor ?? null}::bigint IS NULL OR at.seq > ${ref.cursor ?? null}::bigint)
           ORDER BY at.seq
           LIMIT ${ref.limit + 1}::int
        ) a ON true
       WHERE jq.id = ${ref.jobId}::uuid
         AND ${inScope(s, 'jq.organization_id')}
       ORDER BY a.seq`;
      if (rows.length === 0) {
        throw new NotFoundError('job.not_found', 'The job does not exist.', {
          internalMessage: `list job attempts: job ${ref.jobId} not found in scope ${ref.scope.kind}`,
          details: { jobId: ref.jobId },
        });
      }
      const attempts = rows.filter((row) => row.seq !== null) as JobAttemptRow[];
      const page = attempts.slice(0, ref.limit);
      return { items: page.map(toJobAttempt), nextCursor: attempts.length > ref.limit ? page[page.length - 1]!.seq : null };
    },
    { readCommitted: false },
  );
}
