/**
 * "What needs me, and why": the overview's first section. Each item names
 * what is wrong and where it is fixed (the UI links it):
 *   - queues **stuck**: runnable jobs and no live worker handles the type;
 *   - queues **saturated**: every slot of the live workers handling the type
 *     is busy while its oldest runnable job has waited saturationWaitMs;
 *   - queues **failing**: over failureWindowMs, at least failureMinCount jobs
 *     dead-lettered and that share of the finished ones is failureRate or more;
 *   - runs **waiting on a person**: a step WAITING_FOR_EXTERNAL, whatever
 *     the run's status (WorkflowRun.waitingForExternal);
 *   - the newest **failures**, dead letters of the last FAILURES_WINDOW_MS
 *     grouped by type and error code.
 *
 * Scope: jobs and runs are read in the request's scope like every read
 * (inScope / inScopeByKind). Workers and their slots serve every
 * organization, so a tenant learns that a type is saturated (its own jobs
 * wait for it) but not the slot counts, as the queues page shows it only how
 * many live workers a type has.
 *
 * Cost: the backlog and the windows, never the history: pending jobs through
 * the claim index, leases through their rows in job_leases, finished counts
 * from job_counts and dead letters through job_queue_dead_lettered_at_idx
 * in the window, live runs through
 * workflow_runs_status_idx and their steps through the run's step index
 * (test/integration/dashboard-attention.test.ts pins the plans).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { z } from 'zod';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { inScope, inScopeByKind } from '../db/fragments.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { parseInput } from '../validation/parse.js';
import { finishedByTypeQuery, pendingByTypeQuery, typeSlotsQuery } from './fleet.js';

/** How far back the failures are grouped: the overview's finished window. */
export const FAILURES_WINDOW_MS = 86_400_000;
/** Failure groups, and waiting runs, listed at most (the counts stay whole). */
export const MAX_ATTENTION_ITEMS = 10;
const MAX_MESSAGE = 200;

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** The thresholds, an option of createDashboard / createDashboardFetchHandler (`attention`). */
export interface DashboardAttentionOptions {
  /** A type whose slots are all busy is saturated once its oldest runnable job has waited this long. Default 60,000 (1 min); 0 to 86,400,000. */
  saturationWaitMs?: number;
  /** The window of the failure rate. Default 3,600,000 (1 h, the queues page's window); 60,000 to 86,400,000. */
  failureWindowMs?: number;
  /** A type is failing when dead-lettered / (succeeded + dead-lettered) in the window is at least this. Default 0.1; above 0, at most 1. */
  failureRate?: number;
  /** ...and at least this many dead-lettered in the window (so one failure in two jobs is not a trend). Default 3; 1 to 1,000,000. */
  failureMinCount?: number;
}

export type AttentionSettings = Required<DashboardAttentionOptions>;

export const DEFAULT_ATTENTION: AttentionSettings = { saturationWaitMs: 60_000, failureWindowMs: HOUR, failureRate: 0.1, failureMinCount: 3 };

const wholeMs = (min: number, max: number) => z.number().int().min(min).max(max);
const attentionSchema = z.strictObject({
  attention: z
    .strictObject({
      saturationWaitMs: wholeMs(0, DAY).optional(),
      failureWindowMs: wholeMs(60_000, DAY).optional(),
      failureRate: z.number().gt(0).max(1).optional(),
      failureMinCount: z.number().int().min(1).max(1_000_000).optional(),
    })
    .optional(),
});

/** The options' thresholds over the defaults; a bad one is `dashboard.invalid_options` naming it (`attention.failureRate`). */
export function attentionSettings(options: DashboardAttentionOptions | undefined): AttentionSettings {
  const parsed = parseInput(attentionSchema, { attention: options }, 'dashboard.invalid_options', 'attention');
  const given = Object.fromEntries(Object.entries(parsed.attention ?? {}).filter(([, value]) => value !== undefined));
  return { ...DEFAULT_ATTENTION, ...given };
}

export type QueueProblem = 'stuck' | 'saturated' | 'failing';

export interface QueueAttention {
  jobType: string;
  /** Worst first: stuck, saturated, failing. */
  problems: QueueProblem[];
  runnable: number;
  oldestWaitMs: number | null;
  liveWorkers: number;
  /** Slots of the live workers handling the type, and how many are busy: an admin's only (null in other scopes). */
  slots: number | null;
  slotsBusy: number | null;
  /** In the failure window. */
  succeeded: number;
  deadLettered: number;
  failureRate: number | null;
}

export interface WaitingRun {
  id: string;
  workflowType: string;
  organizationId: string | null;
  /** RUNNING or WAITING_FOR_EXTERNAL: the run's own status, kept. */
  status: string;
  /** The waiting steps' keys (the first five by step id) and how many there are. */
  waitingSteps: string[];
  waitingStepCount: number;
  /** When the longest-waiting of them started waiting (its release). */
  waitingSince: string;
}

export interface FailureGroup {
  jobType: string;
  errorCode: string | null;
  count: number;
  /** Of them, direct jobs (bulk requeue takes these; a workflow's are recovered with their run). */
  directCount: number;
  newestAt: string;
  newestJobId: string;
  /** The newest one's message, at most 200 characters. */
  message: string | null;
}

export interface DashboardAttention {
  settings: AttentionSettings & { failuresWindowMs: number };
  queues: QueueAttention[];
  waiting: { total: number; byType: { workflowType: string; count: number }[]; runs: WaitingRun[] };
  failures: FailureGroup[];
}

/** Runs in scope waiting on a person: the total, per type, and the longest-waiting MAX_ATTENTION_ITEMS. */
export function waitingRunsQuery(scope: Scope): Sql {
  return sqltag`
    WITH waiting AS MATERIALIZED (
      SELECT wr.id, wr.workflow_type, wr.organization_id, wr.status, s.n, s.since, s.keys
        FROM runledger.workflow_runs wr
        CROSS JOIN LATERAL (
          SELECT count(*)::int AS n, min(coalesce(ws.released_at, ws.created_at)) AS since, (array_agg(ws.step_key ORDER BY ws.id))[1:5] AS keys
            FROM runledger.workflow_steps ws
           WHERE ws.workflow_run_id = wr.id AND ws.status = 'WAITING_FOR_EXTERNAL'
        ) s
       WHERE wr.status IN ('RUNNING', 'WAITING_FOR_EXTERNAL') AND s.n > 0 AND ${inScopeByKind(scope, sqltag`wr.organization_id`)}
    )
    SELECT (SELECT count(*)::int FROM waiting) AS total,
           (SELECT coalesce(json_agg(json_build_object('workflowType', t.workflow_type, 'count', t.n) ORDER BY t.workflow_type), '[]'::json)
              FROM (SELECT workflow_type, count(*)::int AS n FROM waiting GROUP BY 1) t) AS by_type,
           (SELECT coalesce(json_agg(json_build_object('id', r.id, 'workflowType', r.workflow_type, 'organizationId', r.organization_id,
                                                       'status', r.status, 'waitingSteps', r.keys, 'waitingStepCount', r.n, 'waitingSince', r.since)
                                     ORDER BY r.since, r.id), '[]'::json)
              FROM (SELECT * FROM waiting ORDER BY since, id LIMIT ${MAX_ATTENTION_ITEMS}::int) r) AS runs`;
}

/** Dead letters in scope over FAILURES_WINDOW_MS by type and error code, newest group first. */
export function failureGroupsQuery(scope: Scope): Sql {
  return sqltag`
    SELECT jq.job_type, jq.last_error_code, count(*)::int AS n,
           (count(*) FILTER (WHERE jq.workflow_step_id IS NULL))::int AS direct,
           max(jq.finished_at) AS newest_at,
           (array_agg(jq.id ORDER BY jq.finished_at DESC, jq.id DESC))[1] AS newest_job_id,
           left((array_agg(jq.last_error_message ORDER BY jq.finished_at DESC, jq.id DESC))[1], ${MAX_MESSAGE}::int) AS message
      FROM runledger.job_queue jq
     -- dead_lettered_at (a dead letter's finish time, generated) matches job_queue_dead_letter_idx's predicate.
     WHERE jq.dead_lettered_at >= now() - ${FAILURES_WINDOW_MS}::float8 * interval '1 millisecond'
       AND ${inScope(scope, 'jq.organization_id')}
     GROUP BY 1, 2
     ORDER BY max(jq.finished_at) DESC, 1, 2
     LIMIT ${MAX_ATTENTION_ITEMS}::int`;
}

interface PendingRow {
  job_type: string;
  runnable: number;
  oldest_wait_ms: number | null;
}
interface FinishedRow {
  job_type: string;
  succeeded: number;
  dead_lettered: number;
}
interface SlotsRow {
  job_type: string;
  workers: number;
  slots: number;
  busy: number;
}
interface WaitingRow {
  total: number;
  by_type: DashboardAttention['waiting']['byType'];
  runs: (Omit<WaitingRun, 'waitingSince'> & { waitingSince: string })[];
}
interface FailureRow {
  job_type: string;
  last_error_code: string | null;
  n: number;
  direct: number;
  newest_at: Date;
  newest_job_id: string;
  message: string | null;
}

const ORDER: QueueProblem[] = ['stuck', 'saturated', 'failing'];

/** Everything the overview's "Needs attention" shows, in `scope`, judged by `settings`. */
export async function readAttention(db: Db, scope: Scope, settings: AttentionSettings): Promise<DashboardAttention> {
  // Plain reads, each its own autocommit statement, as the queues page's.
  const read = <R>(name: string, query: Sql) =>
    withStatement(db, `dashboard attention: ${name}`, async (tx) => tx.$queryRaw<R[]>(...asTemplate(query)), { readCommitted: false });
  const [pending, finished, slots, waiting, failures] = await Promise.all([
    read<PendingRow>('pending', pendingByTypeQuery(scope)),
    read<FinishedRow>('finished', finishedByTypeQuery(scope, settings.failureWindowMs)),
    read<SlotsRow>('slots', typeSlotsQuery),
    read<WaitingRow>('waiting runs', waitingRunsQuery(scope)),
    read<FailureRow>('failures', failureGroupsQuery(scope)),
  ]);
  const admin = scope.kind === 'admin';
  const fin = new Map(finished.map((row) => [row.job_type, row]));
  const slot = new Map(slots.map((row) => [row.job_type, row]));
  const pend = new Map(pending.map((row) => [row.job_type, row]));
  const types = [...new Set([...pend.keys(), ...fin.keys()])].sort();
  const queues = types.flatMap((jobType): QueueAttention[] => {
    const p = pend.get(jobType);
    const f = fin.get(jobType);
    const s = slot.get(jobType);
    const runnable = p?.runnable ?? 0;
    const oldestWaitMs = p?.oldest_wait_ms ?? null;
    const succeeded = f?.succeeded ?? 0;
    const deadLettered = f?.dead_lettered ?? 0;
    const failureRate = succeeded + deadLettered === 0 ? null : deadLettered / (succeeded + deadLettered);
    const liveWorkers = s?.workers ?? 0;
    const problems = new Set<QueueProblem>();
    if (runnable > 0 && liveWorkers === 0) problems.add('stuck');
    if (s && s.busy >= s.slots && runnable > 0 && (oldestWaitMs ?? 0) >= settings.saturationWaitMs) problems.add('saturated');
    if (failureRate !== null && deadLettered >= settings.failureMinCount && failureRate >= settings.failureRate) problems.add('failing');
    if (problems.size === 0) return [];
    return [
      {
        jobType,
        problems: ORDER.filter((problem) => problems.has(problem)),
        runnable,
        oldestWaitMs,
        liveWorkers,
        slots: admin ? (s?.slots ?? 0) : null,
        slotsBusy: admin ? (s?.busy ?? 0) : null,
        succeeded,
        deadLettered,
        failureRate,
      },
    ];
  });
  queues.sort((a, b) => ORDER.indexOf(a.problems[0]!) - ORDER.indexOf(b.problems[0]!) || a.jobType.localeCompare(b.jobType));
  const w = waiting[0]!;
  return {
    settings: { ...settings, failuresWindowMs: FAILURES_WINDOW_MS },
    queues,
    waiting: { total: w.total, byType: w.by_type, runs: w.runs.map((run) => ({ ...run, waitingSince: new Date(run.waitingSince).toISOString() })) },
    failures: failures.map((row) => ({
      jobType: row.job_type,
      errorCode: row.last_error_code,
      count: row.n,
      directCount: row.direct,
      newestAt: row.newest_at.toISOString(),
      newestJobId: row.newest_job_id,
      message: row.message,
    })),
  };
}
