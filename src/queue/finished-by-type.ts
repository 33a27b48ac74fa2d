/**
 * listJobs' statement for one job type filtered to finished statuses only
 * (the dashboard's "SUCCEEDED of type X", the CLI's `jobs --type X --status
 * DEAD_LETTERED`). The general list walks the primary key newest first and
 * filters: with a large backlog newer than every finished job that read the
 * whole backlog before the first match (256 ms at 10M finished + 1M pending).
 * This shape reads, backwards, one branch per requested status merged by id,
 * job_queue_claimed_type_idx ((job_type, id) over jobs claimed in their run:
 * SUCCEEDED ones, and the LEASED and retried ones read past on the row) for
 * SUCCEEDED, job_queue_dead_letter_type_idx and job_queue_canceled_type_idx
 * (over the generated markers of those statuses, index-only) for the others
 * (migration 20261229000001: no index names status, so a completion can be a
 * HOT update), then the page's rows by primary key: a page reads about the
 * page's entries (plus those another status or organization holds).
 *
 * Each status and its index's predicate are literals (from the fixed table
 * below, never from input) so that even a generic plan proves the index's
 * predicate; the cursor's `id <` test is present only when there is a cursor,
 * so it is an index condition rather than a filter.
 */
import { join, sqltag, type Sql } from '@prisma/client/runtime/client';
import { scopeParams, type Scope } from '../db/scope.js';
import { JOB_ROW_COLUMNS, type JobStatus } from '../model/job-rows.js';
import { inScope } from '../db/fragments.js';

export type FinishedJobStatus = Extract<JobStatus, 'SUCCEEDED' | 'DEAD_LETTERED' | 'CANCELED'>;

/** Each finished status and the partial index predicate its rows are under. */
const FINISHED_STATUS_SQL: Record<FinishedJobStatus, Sql> = {
  SUCCEEDED: sqltag`f.attempt > 0 AND f.status = 'SUCCEEDED'::runledger.job_status`,
  DEAD_LETTERED: sqltag`f.dead_lettered_at IS NOT NULL`,
  CANCELED: sqltag`f.canceled_at IS NOT NULL`,
};

/** The requested statuses when this statement serves them (every one finished), deduplicated; else null. */
export function finishedStatusesOnly(statuses: readonly string[] | null): FinishedJobStatus[] | null {
  if (statuses === null || statuses.length === 0) return null;
  if (!statuses.every((status): status is FinishedJobStatus => Object.hasOwn(FINISHED_STATUS_SQL, status))) return null;
  return [...new Set(statuses as FinishedJobStatus[])];
}

export interface FinishedByTypeFilter {
  scope: Scope;
  jobType: string;
  statuses: FinishedJobStatus[];
  cursor: string | null;
  /** Rows to return (the page plus one, to tell whether another exists). */
  rows: number;
}

export function finishedByTypeListQuery({ scope, jobType, statuses, cursor, rows }: FinishedByTypeFilter): Sql {
  const s = scopeParams(scope);
  const before = cursor === null ? sqltag`` : sqltag`AND f.id < ${cursor}::uuid`;
  // Ids only (the organization from the index; a SUCCEEDED entry's status from the row). Selecting whole rows here let
  // PostgreSQL 18 prefer the primary key walk, whose cost it estimates as if matching rows were spread evenly
  // (683 ms at 10M + 1M, where the backlog is newer than every finished row).
  const branch = (status: FinishedJobStatus) => sqltag`
    (SELECT f.id
       FROM runledger.job_queue f
      WHERE f.job_type = ${jobType}::text AND ${FINISHED_STATUS_SQL[status]} ${before}
        AND ${inScope(s, 'f.organization_id')}
      ORDER BY f.id DESC
      LIMIT ${rows}::int)`;
  const ids =
    statuses.length === 1
      ? branch(statuses[0]!)
      : sqltag`SELECT p.id FROM (${join(statuses.map(branch), ' UNION ALL ')}) p ORDER BY p.id DESC LIMIT ${rows}::int`;
  // The page's rows by primary key through an InitPlan (as dependency release does): the same plan whatever the estimate.
  return sqltag`
    SELECT ${JOB_ROW_COLUMNS}
      FROM runledger.job_queue jq
     WHERE jq.id = ANY(ARRAY(${ids}))
     ORDER BY jq.id DESC`;
}
