/**
 * The dashboard's own reads, for what the library's public reads do not
 * answer: the overview's aggregates and a job's links (its workflow step, its
 * replay lineage). Both are scoped exactly like src/queue/reads.ts (see
 * src/db/scope.ts), take no locks, and are one statement each, so the
 * overview's numbers come from one snapshot.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams, type Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { JOB_ROW_COLUMNS, toJob, type Job, type JobRow, type JobStatus } from '../model/job-rows.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';
import { LEASED_JOBS, TERMINAL_RUN, inScope, inScopeByKind, pendingJobs } from '../db/fragments.js';
import { finishedCountRows } from '../queue/finished-counts.js';

/** Replays listed on one job page; the rest are still reachable through each replay's own page. */
export const MAX_LISTED_REPLAYS = 100;

/**
 * How far back the overview counts finished jobs and runs: a whole-history
 * count costs a scan of the history (~20 s at 10M jobs); a window costs the
 * rows finished in it.
 */
export const OVERVIEW_FINISHED_WINDOW_MS = 86_400_000;

export interface DashboardOverview {
  /**
   * Jobs per (type, status): every PENDING and LEASED job, and the jobs that
   * finished (SUCCEEDED, DEAD_LETTERED, CANCELED) since `finishedSince`. A
   * pair with no job is absent.
   */
  jobs: { jobType: string; status: JobStatus; count: number }[];
  /** Runs per (type, status): every live run (RUNNING, WAITING_FOR_EXTERNAL), and the runs that finished since `finishedSince`. */
  runs: { workflowType: string; status: WorkflowRunStatus; count: number }[];
  /** The finished counts' window: OVERVIEW_FINISHED_WINDOW_MS, ending at `generatedAt`. */
  finishedWindowMs: number;
  /** Start of that window (ISO). */
  finishedSince: string;
  /** Seconds the longest-waiting runnable job (PENDING, due) has been due; null when none waits. */
  oldestReadySeconds: number | null;
  /** Jobs that finished within the last hour (its minutes, from the finished-job counters), by how they ended. */
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
  finished_since: Date;
  generated_at: Date;
}

const jq = sqltag`jq`;
const wr = sqltag`wr`;

/**
 * The overview's one statement, for the plan test to EXPLAIN
 * (test/integration/dashboard-overview-plans.test.ts). Its cost is the
 * backlog and the window, never the history:
 *   - PENDING jobs by type through job_queue_claim_by_type_idx, which covers
 *     what the count reads (type, due time, organization; migration
 *     20261227000000): an index-only scan once the table is vacuumed;
 *   - LEASED jobs through their lease rows (job_leases, one per live lease);
 *   - finished jobs from job_counts (per-minute counters, migration
 *     20261229000001_finished_reads), the window's minutes only;
 *   - live runs through workflow_runs_status_idx, finished ones through
 *     workflow_runs_finished_idx in the window.
 * The scope predicate is written for the scope's kind (inScopeByKind, src/db/fragments.ts), so a
 * generic plan keeps those indexes too.
 */
export function overviewQuery(scope: Scope): Sql {
  const since = sqltag`(now() - ${OVERVIEW_FINISHED_WINDOW_MS}::float8 * interval '1 millisecond')`;
  const hourAgo = sqltag`(now() - interval '1 hour')`;
  const jobsIn = inScopeByKind(scope, sqltag`${jq}.organization_id`);
  const runsIn = inScopeByKind(scope, sqltag`${wr}.organization_id`);
  const finished = (from: Sql) => finishedCountRows(scope, from, sqltag`now()`);
  const finishedByType = sqltag`
    SELECT f.job_type, f.status::text AS status, sum(f.count)::int AS n FROM (${finished(since)}) f GROUP BY 1, 2`;
  const lastHour = (status: string) =>
    sqltag`(SELECT coalesce(sum(f.count), 0)::int FROM (${finished(hourAgo)}) f WHERE f.status = ${status}::runledger.job_status)`;
  return sqltag`
    WITH pending AS (
      SELECT jq.job_type, count(*)::int AS n, min(jq.next_run_at) FILTER (WHERE jq.next_run_at <= now()) AS oldest_due
        FROM ${pendingJobs(sqltag`jq.job_type, jq.next_run_at`, jobsIn)}
       GROUP BY 1
    ), jobs AS (
      SELECT p.job_type, 'PENDING'::text AS status, p.n FROM pending p
      UNION ALL
      SELECT jq.job_type, 'LEASED', count(*)::int
        FROM ${LEASED_JOBS} AND ${jobsIn}
       GROUP BY 1
      UNION ALL ${finishedByType}
    ), runs AS (
      SELECT wr.workflow_type, wr.status::text AS status, count(*)::int AS n
        FROM runledger.workflow_runs wr
       WHERE wr.status IN ('RUNNING', 'WAITING_FOR_EXTERNAL') AND ${runsIn}
       GROUP BY 1, 2
      UNION ALL
      SELECT wr.workflow_type, wr.status::text, count(*)::int
        FROM runledger.workflow_runs wr
       WHERE wr.status IN ${TERMINAL_RUN} AND wr.finished_at >= ${since} AND ${runsIn}
       GROUP BY 1, 2
    )
    SELECT
      (SELECT coalesce(json_agg(json_build_object('jobType', job_type, 'status', status, 'count', n) ORDER BY job_type, status), '[]'::json) FROM jobs) AS jobs,
      (SELECT coalesce(json_agg(json_build_object('workflowType', workflow_type, 'status', status, 'count', n) ORDER BY workflow_type, status), '[]'::json) FROM runs) AS runs,
      (SELECT extract(epoch FROM now() - min(p.oldest_due))::float8 FROM pending p) AS oldest_ready_seconds,
      ${lastHour('SUCCEEDED')} AS succeeded,
      ${lastHour('DEAD_LETTERED')} AS dead_lettered,
      ${lastHour('CANCELED')} AS canceled,
      ${since} AS finished_since,
      now() AS generated_at`;
}

/**
 * Counts by status and type (live jobs and runs all, finished ones over the
 * last OVERVIEW_FINISHED_WINDOW_MS), the oldest due job's wait, and the last
 * hour's outcomes within `scope`, from one snapshot.
 */
export async function readOverview(db: Db, scope: Scope): Promise<DashboardOverview> {
  const query = overviewQuery(scope);
  return withStatement(
    db,
    'dashboard overview',
    async (tx) => {
      const rows = await tx.$queryRaw<OverviewRow[]>(...asTemplate(query));
      const row = rows[0]!;
      return {
        jobs: row.jobs,
        runs: row.runs,
        finishedWindowMs: OVERVIEW_FINISHED_WINDOW_MS,
        finishedSince: row.finished_since.toISOString(),
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
  /**
   * The job's concurrency key as its row stands now (null: no key), so the page can say why a due job waits:
   * `full` when the key's live leases (every organization's) reach its limit. `leased` is counted as
   * listConcurrencyLimits counts it: the key's own count in the admin scope, the scope's own leases otherwise.
   */
  concurrency: JobConcurrency | null;
  /**
   * The job's rate key's bucket as it stands now (null: no key, or no row yet), so the page can say why a due
   * job waits: `tokens` under 1, and the next whole token in `nextTokenMs` (0: one is there).
   */
  rateLimit: JobRateLimit | null;
}

export interface JobRateLimit {
  key: string;
  limit: number;
  periodMs: number;
  burst: number;
  /** The bucket refilled to now (fractional); a start takes a whole token. */
  tokens: number;
  /** Milliseconds until the bucket holds a whole token (0: it does). */
  nextTokenMs: number;
  setBy: 'enqueue' | 'operator';
}

export interface JobConcurrency {
  key: string;
  limit: number;
  leased: number;
  full: boolean;
  setBy: 'enqueue' | 'operator';
}

interface JobLinksRow {
  workflow_run_id: string | null;
  step_key: string | null;
  replay_of: JobLinks['replayOf'];
  replays: JobLinks['replays'];
  concurrency: JobConcurrency | null;
  rate_limit: JobRateLimit | null;
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
                       ORDER BY r.created_at, r.replay_job_id LIMIT ${MAX_LISTED_REPLAYS}::int) l) AS replays,
             (SELECT json_build_object('key', k.key, 'limit', k.max_leased, 'full', k.leased >= k.max_leased, 'setBy', k.set_by,
                                       'leased', CASE WHEN ${s.all}::boolean THEN k.leased
                                                      ELSE (SELECT count(*)::int FROM runledger.job_leases l JOIN runledger.job_queue o ON o.id = l.job_id
                                                             WHERE l.concurrency_key = k.key AND ${inScope(s, 'o.organization_id')}) END)
                FROM runledger.concurrency_slots k WHERE k.key = jq.concurrency_key) AS concurrency,
             (SELECT json_build_object('key', r.key, 'limit', r.max_starts, 'periodMs', r.period_ms, 'burst', r.burst, 'setBy', r.set_by,
                                       'tokens', t.tokens,
                                       'nextTokenMs', CASE WHEN t.tokens >= 1 THEN 0 ELSE ceil((1 - t.tokens) * r.period_ms / r.max_starts)::bigint END)
                FROM runledger.rate_limits r
               CROSS JOIN LATERAL (SELECT runledger.rate_tokens(r.tokens, r.refilled_at, now(), r.max_starts, r.period_ms, r.burst) AS tokens) t
               WHERE r.key = jq.rate_key) AS rate_limit
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
        concurrency: row.concurrency,
        rateLimit: row.rate_limit,
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
