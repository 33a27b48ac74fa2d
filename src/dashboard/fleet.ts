/**
 * The fleet's reads for the dashboard's workers and queues pages: the worker
 * registry (runledger.workers, src/worker/registry.ts) with the jobs each
 * worker holds and whether its heartbeat is stale (src/model/worker-registry.ts),
 * and, per job type, the queue's depth, what is runnable now and how long the
 * oldest of it waited, the last hour's outcomes, how many live workers serve
 * the type and how many of their slots are busy (attention.ts reads these too).
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
import { LEASED_JOBS, inScope, pendingJobs } from '../db/fragments.js';
import { REGISTRY_STALE_INTERVALS, REGISTRY_TTL_INTERVALS } from '../model/worker-registry.js';
import { finishedCountRows } from '../queue/finished-counts.js';

/** The window of the throughput and failure rate. */
export const QUEUE_WINDOW_MS = 3_600_000;
/** Registry rows one workers page shows (live first). */
export const MAX_LISTED_WORKERS = 500;
/** Held jobs listed per worker (its count is always whole). */
export const MAX_LISTED_HELD = 50;

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
  /** Heartbeating: its row has not expired (a stale row is still live). */
  live: boolean;
  /** live; stale: live, but it missed a heartbeat (src/model/worker-registry.ts); gone: expired. */
  state: 'live' | 'stale' | 'gone';
  /** Its heartbeat interval, read from its own row: (expiresAt - lastSeenAt) / REGISTRY_TTL_INTERVALS. */
  heartbeatIntervalMs: number;
  /** Jobs it holds a lease on now (job_queue, by lease owner): fresher than `inFlight`, its last heartbeat's count. */
  held: number;
  /** The first MAX_LISTED_HELD of them, by id. `leaseExpired`: the reaper has not taken it back yet. */
  heldJobs: { id: string; jobType: string; organizationId: string | null; attemptStartedAt: string | null; leaseExpiresAt: string; leaseExpired: boolean }[];
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
  /** Every slot of the live workers handling the type is busy and its oldest runnable job has waited the saturation wait (attention.ts). */
  saturated: boolean;
}

/** PENDING jobs by type: all, due, and how long the oldest due one has waited. */
export function pendingByTypeQuery(scope: Scope): Sql {
  return sqltag`
    SELECT jq.job_type, count(*)::int AS pending, (count(*) FILTER (WHERE jq.next_run_at <= now()))::int AS runnable,
           round(EXTRACT(EPOCH FROM now() - min(jq.next_run_at) FILTER (WHERE jq.next_run_at <= now())) * 1000)::float8 AS oldest_wait_ms
      FROM ${pendingJobs(sqltag`jq.job_type, jq.next_run_at`, inScope(scope, 'jq.organization_id'))}
     GROUP BY 1`;
}

/** LEASED jobs by type, through their lease rows. */
export function leasedByTypeQuery(scope: Scope): Sql {
  return sqltag`
    SELECT jq.job_type, count(*)::int AS leased
      FROM ${LEASED_JOBS} AND ${inScope(scope, 'jq.organization_id')}
     GROUP BY 1`;
}

/** Jobs that finished in the window (default the queues page's QUEUE_WINDOW_MS; its minutes, from the finished-job counters), by type and outcome. */
export function finishedByTypeQuery(scope: Scope, windowMs = QUEUE_WINDOW_MS): Sql {
  const rows = finishedCountRows(scope, sqltag`now() - ${windowMs}::float8 * interval '1 millisecond'`, sqltag`now()`);
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

/**
 * One entry per job type that has jobs live or recently finished in `scope`, a live worker, or a catalog row;
 * `saturationWaitMs` is the dashboard's `attention.saturationWaitMs`.
 */
export async function readQueues(db: Db, scope: Scope, saturationWaitMs: number): Promise<{ asOf: Date; windowMs: number; queues: QueueEntry[] }> {
  // Plain reads, each its own autocommit statement: a page of counts, not a ledger, so one snapshot is not needed.
  const read = <R>(name: string, query: Sql) =>
    withStatement(db, `dashboard queues: ${name}`, async (tx) => tx.$queryRaw<R[]>(...asTemplate(query)), { readCommitted: false });
  const [pending, leased, finished, workers, catalog, slots] = await Promise.all([
    read<PendingRow>('pending', pendingByTypeQuery(scope)),
    read<LeasedRow>('leased', leasedByTypeQuery(scope)),
    read<FinishedRow>('finished', finishedByTypeQuery(scope)),
    read<WorkersRow>('workers', liveWorkersByTypeQuery),
    read<{ job_type: string }>('catalog', sqltag`SELECT job_type FROM runledger.job_definitions`),
    read<{ job_type: string; slots: number; busy: number }>('slots', typeSlotsQuery),
  ]);
  const fullTypes = new Set(slots.filter((row) => row.busy >= row.slots).map((row) => row.job_type));
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
      saturated: runnable > 0 && fullTypes.has(jobType) && (pend?.oldest_wait_ms ?? 0) >= saturationWaitMs,
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
  stale: boolean;
  interval_ms: number;
}

/** A row's own heartbeat interval, in ms (src/model/worker-registry.ts). */
const ROW_INTERVAL_MS = sqltag`(EXTRACT(EPOCH FROM w.expires_at - w.last_seen_at) * 1000 / ${REGISTRY_TTL_INTERVALS}::int)`;

export const workersQuery = sqltag`
  SELECT w.*, w.expires_at > now() AS live, round(${ROW_INTERVAL_MS})::float8 AS interval_ms,
         w.expires_at > now() AND now() - w.last_seen_at > ${REGISTRY_STALE_INTERVALS}::int * ${ROW_INTERVAL_MS} * interval '1 millisecond' AS stale
    FROM runledger.workers w
   ORDER BY (w.expires_at > now()) DESC, w.started_at, w.id
   LIMIT ${MAX_LISTED_WORKERS}`;

/**
 * The LEASED jobs the given workers own (lease_owner is the worker id), per worker: the count and the first
 * MAX_LISTED_HELD by id. Through the lease rows (job_leases): the rows read are the leases held now, never the
 * history. Unscoped: the workers page is an admin's.
 */
export function heldJobsQuery(workerIds: string[]): Sql {
  return sqltag`
    SELECT h.lease_owner, count(*)::int AS held,
           coalesce(json_agg(json_build_object('id', h.id, 'jobType', h.job_type, 'organizationId', h.organization_id,
                                               'attemptStartedAt', h.attempt_started_at, 'leaseExpiresAt', h.lease_expires_at,
                                               'leaseExpired', h.lease_expires_at <= now())
                             ORDER BY h.id) FILTER (WHERE h.n <= ${MAX_LISTED_HELD}::int), '[]'::json) AS jobs
      FROM (SELECT jq.lease_owner, jq.id, jq.job_type, jq.organization_id, jq.attempt_started_at, jq.lease_expires_at,
                   row_number() OVER (PARTITION BY jq.lease_owner ORDER BY jq.id) AS n
              FROM ${LEASED_JOBS} AND jq.lease_owner IN (SELECT unnest(${workerIds}::text[]))) h
     GROUP BY 1`;
}

/**
 * Per job type: the live workers that handle it, their slots (concurrency) and how many of those slots are busy
 * (the leases each holds now, at most its concurrency). Fleet-wide, whatever the scope: a slot serves every
 * organization. Leases are read through their rows in job_leases (the backlog in flight); an expired lease the
 * reaper has not taken back still counts: its worker may still be running the job.
 */
export const typeSlotsQuery = sqltag`
  WITH held AS (
    SELECT jq.lease_owner, count(*)::int AS n FROM ${LEASED_JOBS}
     GROUP BY 1
  )
  SELECT t.job_type, count(*)::int AS workers, sum(w.concurrency)::int AS slots,
         sum(least(coalesce(h.n, 0), w.concurrency))::int AS busy
    FROM runledger.workers w CROSS JOIN LATERAL unnest(w.job_types) AS t(job_type)
    LEFT JOIN held h ON h.lease_owner = w.id
   WHERE w.expires_at > now()
   GROUP BY 1`;

interface HeldRow {
  lease_owner: string;
  held: number;
  jobs: WorkerEntry['heldJobs'];
}

/**
 * The registry: live workers first (oldest first), then those that stopped heartbeating within the hour; each
 * with the jobs it holds and whether its heartbeat is stale.
 */
export async function readWorkers(db: Db): Promise<{ asOf: Date; staleAfterIntervals: number; workers: WorkerEntry[] }> {
  const rows = await withStatement(db, 'dashboard workers', async (tx) => tx.$queryRaw<WorkerRow[]>(...asTemplate(workersQuery)), { readCommitted: false });
  const held =
    rows.length === 0
      ? []
      : await withStatement(
          db,
          'dashboard workers: held jobs',
          async (tx) => tx.$queryRaw<HeldRow[]>(...asTemplate(heldJobsQuery(rows.map((row) => row.id)))),
          {
            readCommitted: false,
          },
        );
  const heldBy = new Map(held.map((row) => [row.lease_owner, row]));
  return {
    asOf: new Date(),
    staleAfterIntervals: REGISTRY_STALE_INTERVALS,
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
      state: !row.live ? 'gone' : row.stale ? 'stale' : 'live',
      heartbeatIntervalMs: row.interval_ms,
      held: heldBy.get(row.id)?.held ?? 0,
      heldJobs: heldBy.get(row.id)?.jobs ?? [],
    })),
  };
}
