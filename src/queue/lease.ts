/** What the lease-fenced writes (lifecycle.ts, complete.ts, fail.ts, release.ts) share: the lease they name and its refusal. */
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { ConflictError } from '../errors/runledger-error.js';
import type { JobLease } from '../model/job-rows.js';
import type { ParsedJobLease } from './inputs.js';

/** The lease fields the fence reads; a ClaimedJob or JobLease fits. */
export type LeaseIdentity = Pick<JobLease, 'jobId' | 'runNumber' | 'attempt' | 'workerId'> & {
  /** Routing hint from the claim (ClaimedJob.workflowManaged); optional, never trusted for correctness. */
  workflowManaged?: boolean;
};

export type CompleteJobOutcome = { jobId: string; outcome: 'succeeded'; finishedAt: Date } | { jobId: string; outcome: 'lease_owner_mismatch' };

export interface FailJobResult {
  jobId: string;
  status: 'PENDING' | 'DEAD_LETTERED';
  /** When the retry becomes claimable; null once dead-lettered. */
  nextRunAt: Date | null;
}

export function leaseMismatch(lease: ParsedJobLease, operation: string): ConflictError {
  return new ConflictError('job.lease_owner_mismatch', 'The job is no longer leased to this worker.', {
    internalMessage: `${operation}: no live lease for job ${lease.jobId} run ${lease.runNumber} attempt ${lease.attempt} owned by ${lease.workerId}`,
    details: { jobId: lease.jobId, runNumber: lease.runNumber, attempt: lease.attempt, workerId: lease.workerId },
  });
}

/**
 * After a refused fence: was the lease lost to a cancellation of this run of
 * the job (`cancelJob`, a canceled workflow run), rather than to another
 * attempt (reaped, then claimed again)? The worker says which in its log.
 * The fence itself stays one statement that matches nothing; this read runs
 * only on that rare path.
 */
export async function leaseLostToCancel(db: Db, lease: Pick<JobLease, 'jobId' | 'runNumber'>): Promise<boolean> {
  const rows = await withStatement(
    db,
    'read a canceled job',
    async (client) =>
      client.$queryRaw<{ canceled: boolean }[]>`
      SELECT status = 'CANCELED' AS canceled FROM runledger.job_queue WHERE id = ${lease.jobId}::uuid AND run_number = ${lease.runNumber}::int`,
  );
  return rows[0]?.canceled === true;
}
