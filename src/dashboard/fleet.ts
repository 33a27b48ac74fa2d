/**
 * The fleet's reads for the dashboard's workers and queues pages: the worker
 * registry (runledger.workers, src/worker/registry.ts) and, per job type, the
 * queue's depth, what is runnable now and how long the oldest of it waited,
 * the last hour's outcomes, and how many live workers serve the type.
 *
 * Cost on a large table (test/integration/dashboard-fleet-plans.test.ts):
 *   - pending and runnable read the PENDING partial claim index
 *     (job_queue_claim_idx), leased ones the lease rows (job_leases): their
 *     size is the backlog, not the history;
 *   - the last hour's outcomes sum job_counts (the finished-job counters) over
 *     the window's minutes only;
 *   - the registry is a few rows per running worker.
 * Scope filters the jobs exactly as everywhere (src/db/scope.ts). Workers
 * serve every organization, so their rows are an admin's read only; a
 * tenant's queues page sees how many live workers a type has, not which.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { LEASED_JOBS, inScope } from '../db/fragments.js';
import { finishedCountRows } from '../queue/finished-counts.js';

/** The window of the throughput and failure rate. */
export const QUEUE_WINDOW_MS = 3_600_000;
/** Registry rows one workers page shows (live first). */
export const MAX_LISTED_WORKERS = 500;

export interface WorkerEntry {
  id: string;
  host: string;
  pid: number;
  jobTypes: string[];
  concurrency: number;
  inFlight: number;
  startedAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  /** Heartbeating: its row has not expired. */
  live: boolean;
}

export interface QueueEntry {
  jobType: string;
  /** Jobs not finished: PENDING (due or not) and LEASED. */
  depth: number;
  pending: number;
  /** PENDING and due now. */
  runnable: number;
  leased: number;
  /** How long the longest-waiting runnable job has been due, in ms; null when none is runnable. */
  oldestWaitMs: number | null;
  /** Finished in the last QUEUE_WINDOW_MS. */
  succeeded: number;
  deadLettered: number;
  canceled: number;
  /** Dead-lettered / (succeeded + dead-lettered) in the window; null when none finished. */
  failureRate: number | null;
  /** Live workers whose handlers include the type. */
  liveWorkers: number;
  /** Runnable jobs and no live worker to run them. */
  unserved: boolean;
}

/** PENDING jobs by type: all, due, and how long the oldest due one has waited. `priority >= ...` is the claim index's predicate. */
export function pendingByTypeQuery(scope: Scope): Sql {
  return sqltag`
    SELECT jq.job_type, count(*)::int AS pending, (count(*) FILTER (WHERE jq.next_run_at <= now()))::int AS runnable,
           round(EXTRACT(EPOCH FROM now() - min(jq.next_run_at) FILTER (WHERE jq.next_run_at <= now())) * 1000)::float8 AS oldest_wait_ms
      FROM runledger.job_queue jq
     WHERE jq.claimable AND jq.priority >= -2147483648 AND ${inScope(scope, 'jq.organization_id')}
     GROUP BY 1`;
}

/** LEASED jobs by type, through their lease rows. */
export function leasedByTypeQuery(scope: Scope): Sql {
  return sqltag`
    SELECT jq.job_type, count(*)::int AS leased
      FROM ${LEASED_JOBS} AND ${inScope(scope, 'jq.organization_id')}
     GROUP BY 1`;
}

/** Jobs that finished in the window (its minutes, from the finished-job counters), by type and outcome. */
export function finishedByTypeQuery(scope: Scope): Sql {
  const rows = finishedCountRows(scope, sqltag`now() - ${QUEUE_WINDOW_MS}::float8 * interval '1 millisecond'`, sqltag`now()`);
  return sqltag`
    SELECT f.job_type,
           (coalesce(sum(f.count) FILTER (WHERE f.status = 'SUCCEEDED'), 0))::int AS succeeded,
           (coalesce(sum(f.count) FILTER (WHERE f.status = 'DEAD_LETTERED'), 0))::int AS dead_lettered,
           (coalesce(sum(f.count) FILTER (WHERE f.status = 'CANCELED'), 0))::int AS canceled
      FROM (${rows}) f
     GROUP BY 1`;
}

/** Live workers per job type they handle. */
export const liveWorkersByTypeQuery = sqltag`
  SELECT t.job_type, count(*)::int AS workers
    FROM runledger.workers w CROSS JOIN LATERAL unnest(w.job_types) AS t(job_type)
   WHERE w.expires_at > now()
   GROUP BY 1`;

interface PendingRow {
  job_type: string;
  pending: number;
  runnable: number;
  oldest_wait_ms: number | null;
}
interface LeasedRow {
  job_type: string;
  leased: number;
}
interface FinishedRow {
  job_type: string;
  succeeded: number;
  dead_lettered: number;
  canceled: number;
}
interface WorkersRow {
  job_type: string;
  workers: number;
}

/** One entry per job type that has jobs live or recently finished in `scope`, a live worker, or a catalog row. */
export async function readQueues(db: Db, scope: Scope): Promise<{ asOf: Date; windowMs: number; queues: QueueEntry[] }> {
  // Plain reads, each its own autocommit statement: a page of counts, not a ledger, so one snapshot is not needed.
  const read = <R>(name: string, query: Sql) =>
    withStatement(db, `dashboard queues: ${name}`, async (tx) => tx.$queryRaw<R[]>(...asTemplate(query)), { readCommitted: false });
  const [pending, leased, finished, workers, catalog] = await Promise.all([
    read<PendingRow>('pending', pendingByTypeQuery(scope)),
    read<LeasedRow>('leased', leasedByTypeQuery(scope)),
    read<FinishedRow>('finished', finishedByTypeQuery(scope)),
    read<WorkersRow>('workers', liveWorkersByTypeQuery),
    read<{ job_type: string }>('catalog', sqltag`SELECT job_type FROM runledger.job_definitions`),
  ]);
  const types = new Set<string>([...pending, ...leased, ...finished, ...workers, ...catalog].map((row) => row.job_type));
  const byType = <R extends { job_type: string }>(rows: R[]) => new Map(rows.map((row) => [row.job_type, row]));
  const p = byType(pending);
  const l = byType(leased);
  const f = byType(finished);
  const w = byType(workers);
  const queues = [...types].sort().map((jobType): QueueEntry => {
    const pend = p.get(jobType);
    const fin = f.get(jobType);
    const leasedCount = l.get(jobType)?.leased ?? 0;
    const runnable = pend?.runnable ?? 0;
    const liveWorkers = w.get(jobType)?.workers ?? 0;
    const succeeded = fin?.succeeded ?? 0;
    const deadLettered = fin?.dead_lettered ?? 0;
    return {
      jobType,
      depth: (pend?.pending ?? 0) + leasedCount,
      pending: pend?.pending ?? 0,
      runnable,
      leased: leasedCount,
      oldestWaitMs: pend?.oldest_wait_ms ?? null,
      succeeded,
      deadLettered,
      canceled: fin?.canceled ?? 0,
      failureRate: succeeded + deadLettered === 0 ? null : deadLettered / (succeeded + deadLettered),
      liveWorkers,
      unserved: runnable > 0 && liveWorkers === 0,
    };
  });
  return { asOf: new Date(), windowMs: QUEUE_WINDOW_MS, queues };
}

interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  job_types: string[];
  concurrency: number;
  in_flight: number;
  started_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  live: boolean;
}

export const workersQuery = sqltag`
  SELECT w.*, w.expires_at > now() AS live FROM runledger.workers w
   ORDER BY (w.expires_at > now()) DESC, w.started_at, w.id
   LIMIT ${MAX_LISTED_WORKERS}`;

/** The registry: live workers first (oldest first), then those that stopped heartbeating within the hour. */
export async function readWorkers(db: Db): Promise<{ asOf: Date; workers: WorkerEntry[] }> {
  const rows = await withStatement(db, 'dashboard workers', async (tx) => tx.$queryRaw<WorkerRow[]>(...asTemplate(workersQuery)), { readCommitted: false });
  return {
    asOf: new Date(),
    workers: rows.map((row) => ({
      id: row.id,
      host: row.host,
      pid: row.pid,
      jobTypes: row.job_types,
      concurrency: row.concurrency,
      inFlight: row.in_flight,
      startedAt: row.started_at,
      lastSeenAt: row.last_seen_at,
      expiresAt: row.expires_at,
      live: row.live,
    })),
  };
}
