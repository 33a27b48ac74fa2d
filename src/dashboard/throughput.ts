/**
 * The overview's chart: per minute of the last hour, the jobs that succeeded,
 * were dead-lettered or canceled (their current run's finish), and the
 * attempts that failed and will be retried. One statement, so the minutes
 * come from one snapshot, and index-backed in every scope (pinned by
 * test/integration/dashboard-plans.test.ts):
 *   - finished jobs from job_counts (per-minute counters every terminal
 *     statement adds to; migration 20261229000001_finished_reads), the hour's
 *     minutes only (its primary key starts with the minute);
 *   - retried failures through job_attempts_failed_retry_idx (finished_at,
 *     over FAILED_RETRY attempts; migration 20261219000000), each one's job
 *     by primary key for the scope.
 * The counters count finishes: a job requeued and finished again counts at
 * each finish, and a purge does not take a finish back.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { inScopeByKind } from '../db/fragments.js';
import { countsInScope } from '../queue/finished-counts.js';

/** Minutes the chart covers: the current (partial) minute and the 59 before it. */
export const THROUGHPUT_MINUTES = 60;

export interface ThroughputMinute {
  /** The minute's start (ISO); the last one is still running. */
  minute: string;
  succeeded: number;
  deadLettered: number;
  canceled: number;
  /** Attempts that failed in this minute and were scheduled to run again. */
  retried: number;
}

export interface Throughput {
  /** Start of the first minute. */
  from: string;
  /** The statement's clock: nothing after it is counted. */
  to: string;
  minutes: ThroughputMinute[];
}

interface ThroughputRow {
  minute: Date;
  succeeded: number;
  dead_lettered: number;
  canceled: number;
  retried: number;
  until: Date;
}

const jq = sqltag`jq`;

/** The statement, for the plan test to EXPLAIN. */
export function throughputQuery(scope: Scope): Sql {
  const start = sqltag`(date_trunc('minute', now()) - make_interval(mins => ${THROUGHPUT_MINUTES - 1}::int))`;
  const finished = sqltag`
    SELECT c.minute, c.status::text AS what, c.count::int AS n
      FROM runledger.job_counts c
     WHERE c.minute >= ${start} AND c.minute <= now() AND ${countsInScope(scope, sqltag`c.organization_id`)}`;
  // Admin needs no job row; any other scope checks each retried attempt's job by primary key.
  const retried =
    scope.kind === 'admin'
      ? sqltag`
    SELECT date_trunc('minute', a.finished_at), 'FAILED_RETRY', 1
      FROM runledger.job_attempts a
     WHERE a.outcome = 'FAILED_RETRY' AND a.finished_at >= ${start} AND a.finished_at <= now()`
      : sqltag`
    SELECT date_trunc('minute', a.finished_at), 'FAILED_RETRY', 1
      FROM runledger.job_attempts a JOIN runledger.job_queue jq ON jq.id = a.job_id
     WHERE a.outcome = 'FAILED_RETRY' AND a.finished_at >= ${start} AND a.finished_at <= now()
       AND ${inScopeByKind(scope, sqltag`${jq}.organization_id`)}`;
  return sqltag`
    WITH events AS (
      ${finished} UNION ALL ${retried}
    ), counts AS (
      SELECT minute,
             (coalesce(sum(n) FILTER (WHERE what = 'SUCCEEDED'), 0))::int AS succeeded,
             (coalesce(sum(n) FILTER (WHERE what = 'DEAD_LETTERED'), 0))::int AS dead_lettered,
             (coalesce(sum(n) FILTER (WHERE what = 'CANCELED'), 0))::int AS canceled,
             (coalesce(sum(n) FILTER (WHERE what = 'FAILED_RETRY'), 0))::int AS retried
        FROM events GROUP BY minute
    )
    SELECT m.minute, coalesce(c.succeeded, 0) AS succeeded, coalesce(c.dead_lettered, 0) AS dead_lettered,
           coalesce(c.canceled, 0) AS canceled, coalesce(c.retried, 0) AS retried, now() AS until
      FROM generate_series(${start}, date_trunc('minute', now()), interval '1 minute') AS m(minute)
      LEFT JOIN counts c ON c.minute = m.minute
     ORDER BY m.minute`;
}

/** The last hour, minute by minute, in `scope`. */
export async function readThroughput(db: Db, scope: Scope): Promise<Throughput> {
  const query = throughputQuery(scope);
  const rows = await withStatement(db, 'dashboard throughput', async (tx) => tx.$queryRaw<ThroughputRow[]>(...asTemplate(query)), { readCommitted: false });
  return {
    from: rows[0]!.minute.toISOString(),
    to: rows[0]!.until.toISOString(),
    minutes: rows.map((row) => ({
      minute: row.minute.toISOString(),
      succeeded: row.succeeded,
      deadLettered: row.dead_lettered,
      canceled: row.canceled,
      retried: row.retried,
    })),
  };
}
