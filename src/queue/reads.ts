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
import { asTemplate } from '../db/sql-template.js';
import { parseInput } from '../validation/parse.js';
import { finishedByTypeListQuery, finishedStatusesOnly } from './finished-by-type.js';
import { JOB_ROW_COLUMNS, toJob, toJobEvent, type Job, type JobEvent, type JobEventRow, type JobRow } from '../model/job-rows.js';
import {
  JOB_INVALID_INPUT,
  jobRefSchema,
  listJobEventsInputSchema,
  listJobsInputSchema,
  type JobRef,
  type ListJobEventsInput,
  type ListJobsInput,
  type Page,
} from './inputs.js';
import { inScope } from '../db/fragments.js';

function jobNotFound(jobId: string, scope: Scope, operation: string): NotFoundError {
  return new NotFoundError('job.not_found', 'The job does not exist.', {
    internalMessage: `${operation}: job ${jobId} not found in scope ${scope.kind}`,
    details: { jobId },
  });
}

/** The job, or null when it does not exist in `scope`. */
export async function findJob(db: Db, input: JobRef): Promise<Job | null> {
  const ref = parseInput(jobRefSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(ref.scope);
  return withStatement(
    db,
    'find job',
    async (tx) => {
      const rows = await tx.$queryRaw<JobRow[]>`
      SELECT ${JOB_ROW_COLUMNS}
        FROM runledger.job_queue jq
       WHERE id = ${ref.jobId}::uuid
         AND ${inScope(s, 'organization_id')}`;
      return rows[0] ? toJob(rows[0]) : null;
    },
    { readCommitted: false },
  );
}

/** The job; `job.not_found` when it does not exist in `scope`. */
export async function getJob(db: Db, input: JobRef): Promise<Job> {
  const job = await findJob(db, input);
  if (!job) throw jobNotFound(input.jobId, input.scope, 'get job');
  return job;
}

function statusList<S extends string>(status: S | S[] | undefined): S[] | null {
  if (status === undefined) return null;
  return Array.isArray(status) ? status : [status];
}

/**
 * Jobs in `scope`, newest first (keyset by id: UUIDv7 ids sort by creation).
 *
 * @example
 * let page = await listJobs(prisma, { scope: adminScope(), status: 'DEAD_LETTERED' });
 * while (page.nextCursor) page = await listJobs(prisma, { scope: adminScope(), status: 'DEAD_LETTERED', cursor: page.nextCursor });
 */
export async function listJobs(db: Db, input: ListJobsInput): Promise<Page<Job>> {
  const filter = parseInput(listJobsInputSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(filter.scope);
  const statuses = statusList(filter.status);
  const finished = filter.jobType === undefined ? null : finishedStatusesOnly(statuses);
  return withStatement(
    db,
    'list jobs',
    async (tx) => {
      // One row beyond the page tells whether another page exists.
      const rows =
        finished !== null && filter.jobType !== undefined
          ? await tx.$queryRaw<JobRow[]>(
              ...asTemplate(
                finishedByTypeListQuery({
                  scope: filter.scope,
                  jobType: filter.jobType,
                  statuses: finished,
                  cursor: filter.cursor ?? null,
                  rows: filter.limit + 1,
                }),
              ),
            )
          : await tx.$queryRaw<JobRow[]>`
      SELECT ${JOB_ROW_COLUMNS}
        FROM runledger.job_queue jq
       WHERE ${inScope(s, 'organization_id')}
         AND (${statuses}::runledger.job_status[] IS NULL OR status = ANY(${statuses}::runledger.job_status[]))
         AND (${filter.jobType ?? null}::text IS NULL OR job_type = ${filter.jobType ?? null}::text)
         AND (${filter.cursor ?? null}::uuid IS NULL OR id < ${filter.cursor ?? null}::uuid)
       ORDER BY id DESC
       LIMIT ${filter.limit + 1}::int`;
      const items = rows.slice(0, filter.limit).map(toJob);
      return { items, nextCursor: rows.length > filter.limit ? items[items.length - 1]!.id : null };
    },
    { readCommitted: false },
  );
}

/** The audit trail of one job in the order it happened, a page at a time; `job.not_found` outside `scope`. */
export async function listJobEvents(db: Db, input: ListJobEventsInput): Promise<Page<JobEvent>> {
  const ref = parseInput(listJobEventsInputSchema, input, JOB_INVALID_INPUT);
  const s = scopeParams(ref.scope);
  return withStatement(
    db,
    'list job events',
    async (tx) => {
      // LEFT JOIN: one row with a NULL event still proves the job is in scope.
      // The trail is stored events plus those the job and attempt rows stand for (the job_trail view, migration
      // 20261222000000_lean_ledger), ordered by their position; the cursor is a position.
      const rows = await tx.$queryRaw<(Omit<JobEventRow, 'id'> & { id: string | null; seq: string | null })[]>`
      SELECT e.id, e.position::text AS seq, jq.id AS job_id, e.event_type, e.run_number, e.attempt, e.payload, e.created_at
        FROM runledger.job_queue jq
        LEFT JOIN LATERAL (
          SELECT ev.* FROM runledger.job_trail ev
           WHERE ev.job_id = jq.id AND (${ref.cursor ?? null}::bigint IS NULL OR ev.position > ${ref.cursor ?? null}::bigint)
           ORDER BY ev.position
           LIMIT ${ref.limit + 1}::int
        ) e ON true
       WHERE jq.id = ${ref.jobId}::uuid
         AND ${inScope(s, 'jq.organization_id')}
       ORDER BY e.position`;
      if (rows.length === 0) throw jobNotFound(ref.jobId, ref.scope, 'list job events');
      const events = rows.filter((row) => row.id !== null);
      const page = events.slice(0, ref.limit);
      return {
        items: page.map((row) => toJobEvent(row as JobEventRow)),
        nextCursor: events.length > ref.limit ? page[page.length - 1]!.seq : null,
      };
    },
    { readCommitted: false },
  );
}
