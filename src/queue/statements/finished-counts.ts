/**
 * The finished-job counters (`job_counts`, migration 20261229000001_finished_reads): every statement that
 * moves jobs to SUCCEEDED, DEAD_LETTERED or CANCELED adds them here, once per statement, so the metrics
 * windows and the dashboard's chart count finished jobs without an index over SUCCEEDED rows.
 *
 * One upsert per statement, a row per (minute, job type, organization, status, kind) and shard, taken in
 * key order (the lock protocol: src/coordination/locking.ts, "Finished-job counters"). The shard is the
 * backend's pid modulo COUNT_SHARDS: workers completing one type in one minute each add to their own row
 * instead of queueing on one; readers sum the shards.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';

/** Rows per counter key and minute that concurrent backends spread over. */
export const COUNT_SHARDS = 16;

/**
 * A data-modifying CTE body adding the finished rows of `rows` (a CTE of the statement that returns
 * organization_id, job_type, workflow_step_id, status and finished_at of the rows it wrote) to the counters.
 * Rows it returns that did not finish (a retry back to PENDING) are not counted. Unreferenced, PostgreSQL
 * runs it after the statement's main query, so its locks come after every other lock the statement takes.
 */
export function countFinished(rows: Sql): Sql {
  return sqltag`
      INSERT INTO runledger.job_counts AS c (minute, job_type, organization_id, status, workflow, shard, count)
      SELECT date_trunc('minute', r.finished_at), r.job_type, COALESCE(r.organization_id, ''), r.status,
             r.workflow_step_id IS NOT NULL, pg_backend_pid() % ${COUNT_SHARDS}::int, count(*)
        FROM ${rows} r
       WHERE r.status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED') AND r.finished_at IS NOT NULL
       GROUP BY 1, 2, 3, 4, 5
       -- Key order: two statements adding to the same counters lock them in the same order.
       ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (minute, job_type, organization_id, status, workflow, shard) DO UPDATE SET count = c.count + excluded.count`;
}
