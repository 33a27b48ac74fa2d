/**
 * Reads of jobs and their audit trail, always within an exact scope: no
 * organization sees only jobs without one, an organization only its own, admin everything. A job
 * outside the scope is reported exactly like a missing one. Reads take no locks.
 * Each read is one statement: autocommit on a root client (`withStatement`,
 * any isolation), joined on a transaction client.
 */
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { scopeParams, type Scope } from '../db/scope.js';
import { NotFoundError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { toJob, toJobEvent, type Job, type JobEvent, type JobEventRow, type JobRow } from './rows.js';
import { JOB_INVALID_INPUT, jobRefSchema, listJobsInputSchema, type ListJobsInput } from './schemas.js';

const DEFAULT_LIST_LIMIT = 50;

export interface JobPage {
  jobs: Job[];
  /** Pass as `after` for the next page; null on the last page. */
  nextAfter: string | null;
}

function jobNotFound(jobId: string, scope: Scope, operation: string): NotFoundError {
  return new NotFoundError('job.not_found', 'The job does not exist.', {
    internalMessage: `${operation}: job ${jobId} not found in scope ${scope.kind}`,
    details: { jobId },
  });
}

/** The job, or null when it does not exist in `scope`. */
export async function findJob(db: Db, scope: Scope, jobId: string): Promise<Job | null> {
  const ref = parseInput(jobRefSchema, { scope, jobId }, JOB_INVALID_INPUT);
  const s = scopeParams(ref.scope);
  return withStatement(db, 'find job', async (tx) => {
    const rows = await tx.$queryRaw<JobRow[]>`
      SELECT id, job_type, organization_id, payload, status, priority, attempt, max_attempts, run_number,
             timeout_seconds, next_run_at, lease_owner, lease_expires_at, heartbeat_at, idempotency_key, progress,
             checkpoint, output, last_error_code, last_error_message, created_at, updated_at, started_at, finished_at
        FROM runledger.job_queue
       WHERE id = ${ref.jobId}::uuid
         AND (${s.all}::boolean OR organization_id IS NOT DISTINCT FROM ${s.organizationId}::text)`;
    return rows[0] ? toJob(rows[0]) : null;
  }, { readCommitted: false });
}

/** The job; `job.not_found` when it does not exist in `scope`. */
export async function getJob(db: Db, scope: Scope, jobId: string): Promise<Job> {
  const job = await findJob(db, scope, jobId);
  if (!job) throw jobNotFound(jobId, scope, 'get job');
  return job;
}

/**
 * Jobs in `scope`, newest first (keyset by id: UUIDv7 ids sort by creation).
 *
 * @example
 * let page = await listJobs(prisma, { scope: noOrganizationScope(), status: 'DEAD_LETTERED' });
 * while (page.nextAfter) page = await listJobs(prisma, { scope: noOrganizationScope(), status: 'DEAD_LETTERED', after: page.nextAfter });
 */
export async function listJobs(db: Db, input: ListJobsInput): Promise<JobPage> {
  const filter = parseInput(listJobsInputSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(filter.scope);
  const limit = filter.limit ?? DEFAULT_LIST_LIMIT;
  return withStatement(db, 'list jobs', async (tx) => {
    // One row beyond the page tells whether another page exists.
    const rows = await tx.$queryRaw<JobRow[]>`
      SELECT id, job_type, organization_id, payload, status, priority, attempt, max_attempts, run_number,
             timeout_seconds, next_run_at, lease_owner, lease_expires_at, heartbeat_at, idempotency_key, progress,
             checkpoint, output, last_error_code, last_error_message, created_at, updated_at, started_at, finished_at
        FROM runledger.job_queue
       WHERE (${s.all}::boolean OR (${s.organizationId}::text IS NULL AND organization_id IS NULL) OR organization_id = ${s.organizationId}::text)
         AND (${filter.status ?? null}::runledger.job_status IS NULL OR status = ${filter.status ?? null}::runledger.job_status)
         AND (${filter.jobType ?? null}::text IS NULL OR job_type = ${filter.jobType ?? null}::text)
         AND (${filter.after ?? null}::uuid IS NULL OR id < ${filter.after ?? null}::uuid)
       ORDER BY id DESC
       LIMIT ${limit + 1}::int`;
    const jobs = rows.slice(0, limit).map(toJob);
    return { jobs, nextAfter: rows.length > limit ? jobs[jobs.length - 1]!.id : null };
  }, { readCommitted: false });
}

/** The audit trail of one job in the order it happened; `job.not_found` outside `scope`. */
export async function listJobEvents(db: Db, scope: Scope, jobId: string): Promise<JobEvent[]> {
  const ref = parseInput(jobRefSchema, { scope, jobId }, JOB_INVALID_INPUT);
  const s = scopeParams(ref.scope);
  return withStatement(db, 'list job events', async (tx) => {
    // LEFT JOIN: one row with a NULL event still proves the job is in scope.
    const rows = await tx.$queryRaw<(Omit<JobEventRow, 'id'> & { id: string | null })[]>`
      SELECT e.id, jq.id AS job_id, e.event_type, e.run_number, e.attempt, e.payload, e.created_at
        FROM runledger.job_queue jq
        LEFT JOIN runledger.job_events e ON e.job_id = jq.id
       WHERE jq.id = ${ref.jobId}::uuid
         AND (${s.all}::boolean OR jq.organization_id IS NOT DISTINCT FROM ${s.organizationId}::text)
       ORDER BY e.seq`;
    if (rows.length === 0) throw jobNotFound(ref.jobId, ref.scope, 'list job events');
    return rows.filter((row): row is JobEventRow => row.id !== null).map(toJobEvent);
  }, { readCommitted: false });
}
