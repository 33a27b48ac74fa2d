/**
 * The dashboard's own reads, for what the library's public reads do not
 * answer: the overview's aggregates and a job's links (its workflow step, its
 * replay lineage). Both are scoped exactly like src/queue/reads.ts (see
 * src/db/scope.ts), take no locks, and are one statement each, so the
 * overview's numbers come from one snapshot.
 */
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams, type Scope } from '../db/scope.js';
import { JOB_ROW_COLUMNS, toJob, type Job, type JobRow, type JobStatus } from '../model/job-rows.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';
import { inScope } from '../db/fragments.js';

/** Replays listed on one job page; the rest are still reachable through each replay's own page. */
export const MAX_LISTED_REPLAYS = 100;

export interface DashboardOverview {
  /** Jobs per (type, status); a pair with no job is absent. */
  jobs: { jobType: string; status: JobStatus; count: number }[];
  /** Runs per (type, status). */
  runs: { workflowType: string; status: WorkflowRunStatus; count: number }[];
  /** Seconds the longest-waiting runnable job (PENDING, due) has been due; null when none waits. */
  oldestReadySeconds: number | null;
  /** Jobs whose current run ended within the last hour, by how it ended. */
  lastHour: { succeeded: number; deadLettered: number; canceled: number };
  generatedAt: string;
}

interface OverviewRow {
  jobs: DashboardOverview['jobs'];
  runs: DashboardOverview['runs'];
  oldest_ready_seconds: number | null;
  succeeded: number;
  dead_lettered: number;
  canceled: number;
  generated_at: Date;
}

/**
 * Counts by status and type, the oldest due job's wait, and the last hour's
 * outcomes within `scope`. Whole-table aggregates: on a very large queue this
 * costs a scan per refresh, which is why the page refreshes on notification
 * (debounced) and otherwise every few seconds.
 */
export async function readOverview(db: Db, scope: Scope): Promise<DashboardOverview> {
  const s = scopeParams(scope);
  return withStatement(
    db,
    'dashboard overview',
    async (tx) => {
      const rows = await tx.$queryRaw<OverviewRow[]>`
      WITH jobs AS (
        SELECT job_type, status, next_run_at, finished_at FROM runledger.job_queue
         WHERE ${inScope(s, 'organization_id')}
      ), runs AS (
        SELECT workflow_type, status FROM runledger.workflow_runs
         WHERE ${inScope(s, 'organization_id')}
      )
      SELECT
        (SELECT coalesce(json_agg(json_build_object('jobType', job_type, 'status', status, 'count', n) ORDER BY job_type, status), '[]'::json)
           FROM (SELECT job_type, status::text AS status, count(*)::int AS n FROM jobs GROUP BY 1, 2) g) AS jobs,
        (SELECT coalesce(json_agg(json_build_object('workflowType', workflow_type, 'status', status, 'count', n) ORDER BY workflow_type, status), '[]'::json)
           FROM (SELECT workflow_type, status::text AS status, count(*)::int AS n FROM runs GROUP BY 1, 2) g) AS runs,
        (SELECT extract(epoch FROM now() - min(next_run_at))::float8 FROM jobs WHERE status = 'PENDING' AND next_run_at <= now()) AS oldest_ready_seconds,
        (SELECT count(*)::int FROM jobs WHERE status = 'SUCCEEDED' AND finished_at >= now() - interval '1 hour') AS succeeded,
        (SELECT count(*)::int FROM jobs WHERE status = 'DEAD_LETTERED' AND finished_at >= now() - interval '1 hour') AS dead_lettered,
        (SELECT count(*)::int FROM jobs WHERE status = 'CANCELED' AND finished_at >= now() - interval '1 hour') AS canceled,
        now() AS generated_at`;
      const row = rows[0]!;
      return {
        jobs: row.jobs,
        runs: row.runs,
        oldestReadySeconds: row.oldest_ready_seconds === null ? null : Math.max(0, Number(row.oldest_ready_seconds)),
        lastHour: { succeeded: row.succeeded, deadLettered: row.dead_lettered, canceled: row.canceled },
        generatedAt: row.generated_at.toISOString(),
      };
    },
    { readCommitted: false },
  );
}

export interface JobLinks {
  /** The run and step this job executes, for a workflow job. */
  workflowStep: { workflowRunId: string; stepKey: string } | null;
  /** The job this one replays. */
  replayOf: { sourceJobId: string; sourceRunNumber: number; reason: string; createdAt: string } | null;
  /** Replays made of this job, oldest first (at most MAX_LISTED_REPLAYS). Request keys are never shown. */
  replays: { replayJobId: string; sourceRunNumber: number; reason: string; createdAt: string }[];
}

interface JobLinksRow {
  workflow_run_id: string | null;
  step_key: string | null;
  replay_of: JobLinks['replayOf'];
  replays: JobLinks['replays'];
}

/** The job's links, or null when the job does not exist in `scope`. Lineage never crosses organizations (the integrity checker holds it). */
export async function readJobLinks(db: Db, scope: Scope, jobId: string): Promise<JobLinks | null> {
  const s = scopeParams(scope);
  return withStatement(
    db,
    'dashboard job links',
    async (tx) => {
      const rows = await tx.$queryRaw<JobLinksRow[]>`
      SELECT st.workflow_run_id, st.step_key,
             (SELECT json_build_object('sourceJobId', r.source_job_id, 'sourceRunNumber', r.source_run_number, 'reason', r.reason, 'createdAt', r.created_at)
                FROM runledger.job_replays r WHERE r.replay_job_id = jq.id) AS replay_of,
             (SELECT coalesce(json_agg(json_build_object('replayJobId', l.replay_job_id, 'sourceRunNumber', l.source_run_number, 'reason', l.reason, 'createdAt', l.created_at)
                                       ORDER BY l.created_at, l.replay_job_id), '[]'::json)
                FROM (SELECT * FROM runledger.job_replays r WHERE r.source_job_id = jq.id
                       ORDER BY r.created_at, r.replay_job_id LIMIT ${MAX_LISTED_REPLAYS}::int) l) AS replays
        FROM runledger.job_queue jq
        LEFT JOIN runledger.workflow_steps st ON st.id = jq.workflow_step_id
       WHERE jq.id = ${jobId}::uuid
         AND ${inScope(s, 'jq.organization_id')}`;
      const row = rows[0];
      if (!row) return null;
      return {
        workflowStep: row.workflow_run_id && row.step_key ? { workflowRunId: row.workflow_run_id, stepKey: row.step_key } : null,
        replayOf: row.replay_of,
        replays: row.replays,
      };
    },
    { readCommitted: false },
  );
}

/** Jobs a key search lists at most (a key is unique per type and organization, so admin sees one per organization). */
export const MAX_KEY_MATCHES = 100;

/**
 * Jobs of `jobType` whose idempotency key is exactly `key`, within `scope`,
 * newest first. The type is required: it leads the unique index on keys
 * (job_type, organization, key), so the search stays an index lookup.
 */
export async function findJobsByIdempotencyKey(db: Db, scope: Scope, jobType: string, key: string): Promise<Job[]> {
  const s = scopeParams(scope);
  return withStatement(
    db,
    'dashboard job key search',
    async (tx) => {
      const rows = await tx.$queryRaw<JobRow[]>`
      SELECT ${JOB_ROW_COLUMNS}
        FROM runledger.job_queue jq
       WHERE job_type = ${jobType}::text AND idempotency_key = ${key}::text
         AND ${inScope(s, 'organization_id')}
       ORDER BY id DESC
       LIMIT ${MAX_KEY_MATCHES}::int`;
      return rows.map(toJob);
    },
    { readCommitted: false },
  );
}
