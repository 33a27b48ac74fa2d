/**
 * Testing only (runledger/testing's `runUntilIdle`, through src/queue/due-later.ts): moves the due time of
 * every PENDING job of `types` due at the earliest future moment (if within `withinMs`) up to now.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';

export function bringDueLaterForwardStatement(types: string[], withinMs: number | null): Sql {
  return sqltag`
    WITH next AS (
      SELECT min(next_run_at) AS at
        FROM runledger.job_queue
       WHERE status = 'PENDING' AND job_type = ANY(${types}::text[]) AND next_run_at > now()
    ),
    moved AS (
      UPDATE runledger.job_queue jq
         SET next_run_at = now()
        FROM next
       WHERE jq.status = 'PENDING' AND jq.job_type = ANY(${types}::text[])
         AND jq.next_run_at > now() AND jq.next_run_at <= next.at
         AND (${withinMs}::float8 IS NULL OR next.at <= now() + ${withinMs}::float8 * interval '1 millisecond')
      RETURNING jq.id
    )
    SELECT (SELECT count(*) FROM moved)::int AS moved,
           (SELECT extract(epoch FROM next.at - now()) * 1000 FROM next)::float8 AS advanced_ms`;
}
