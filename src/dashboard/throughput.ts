/**
 * The overview's chart: per minute of the last hour, the jobs that succeeded,
 * were dead-lettered or canceled (their current run's finish), and the
 * attempts that failed and will be retried. One statement, so the minutes
 * come from one snapshot, and index-backed in every scope (pinned by
 * test/integration/dashboard-plans.test.ts):
 *   - finished jobs through job_queue_finished_status_idx (status, finished_at)
 *     over the hour only, one branch per status (with `status IN (...)`
 *     PostgreSQL 15 estimated a sequential scan cheaper, as in
 *     src/metrics/queries.ts);
 *   - retried failures through job_attempts_failed_retry_idx (finished_at,
 *     over FAILED_RETRY attempts; migration 20261219000000), each one's job
 *     by primary key for the scope.
 * Like the last-hour figures, a job replayed or requeued since it finished
 * counts at its latest finish only, and purged jobs are gone from history.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { inScopeByKind } from '../db/fragments.js';

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
  const finished = (status: string) => sqltag`
    SELECT date_trunc('minute', jq.finished_at) AS minute, ${status}::text AS what
      FROM runledger.job_queue jq
     WHERE jq.status = ${status}::runledger.job_status AND jq.finished_at >= ${start} AND jq.finished_at <= now()
       AND ${inScopeByKind(scope, sqltag`${jq}.organization_id`)}`;
  // Admin needs no job row; any other scope checks each retried attempt's job by primary key.
  const retried =
    scope.kind === 'admin'
      ? sqltag`
    SELECT date_trunc('minute', a.finished_at), 'FAILED_RETRY'
      FROM runledger.job_attempts a
     WHERE a.outcome = 'FAILED_RETRY' AND a.finished_at >= ${start} AND a.finished_at <= now()`
      : sqltag`
    SELECT date_trunc('minute', a.finished_at), 'FAILED_RETRY'
      FROM runledger.job_attempts a JOIN runledger.job_queue jq ON jq.id = a.job_id
     WHERE a.outcome = 'FAILED_RETRY' AND a.finished_at >= ${start} AND a.finished_at <= now()
       AND ${inScopeByKind(scope, sqltag`${jq}.organization_id`)}`;
  return sqltag`
    WITH events AS (
      ${finished('SUCCEEDED')} UNION ALL ${finished('DEAD_LETTERED')} UNION ALL ${finished('CANCELED')} UNION ALL ${retried}
    ), counts AS (
      SELECT minute,
             (count(*) FILTER (WHERE what = 'SUCCEEDED'))::int AS succeeded,
             (count(*) FILTER (WHERE what = 'DEAD_LETTERED'))::int AS dead_lettered,
             (count(*) FILTER (WHERE what = 'CANCELED'))::int AS canceled,
             (count(*) FILTER (WHERE what = 'FAILED_RETRY'))::int AS retried
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
