/** What the lease-fenced writes (lifecycle.ts, complete.ts, fail.ts, release.ts) share: the lease they name and its refusal. */
import { ConflictError } from '../errors/runledger-error.js';
import type { JobLease } from './rows.js';
import type { ParsedJobLease } from './schemas.js';

/** The lease fields the fence reads; a ClaimedJob or JobLease fits. */
export type LeaseIdentity = Pick<JobLease, 'jobId' | 'runNumber' | 'attempt' | 'workerId'> & {
  /** Routing hint from the claim (ClaimedJob.workflowManaged); optional, never trusted for correctness. */
  workflowManaged?: boolean;
};

export type CompleteJobOutcome =
  | { jobId: string; outcome: 'succeeded'; finishedAt: Date }
  | { jobId: string; outcome: 'lease_owner_mismatch' };

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

