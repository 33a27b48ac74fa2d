/**
 * Fixtures of finished jobs written without the library's statements (backdated, or generated set-based),
 * made to look as the statements would have left them (migration 20261229000001_finished_reads): the
 * finished-job counters that every terminal statement adds to, and ids as old as the finish they stand
 * before (ids are time-ordered, and retention reads jobs by id).
 */
import { randomUUID } from 'node:crypto';

interface RawDb {
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

/** Adds the finished rows of job_queue matching `where` (SQL over job_queue, no input) to job_counts, shard 0. */
export async function countFinishedHistory(db: RawDb, where = 'TRUE'): Promise<void> {
  await db.$executeRawUnsafe(`
    INSERT INTO runledger.job_counts AS c (minute, job_type, organization_id, status, workflow, shard, count)
    SELECT date_trunc('minute', finished_at), job_type, COALESCE(organization_id, ''), status, workflow_step_id IS NOT NULL, 0, count(*)
      FROM runledger.job_queue
     WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED') AND finished_at IS NOT NULL AND (${where})
     GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT (minute, job_type, organization_id, status, workflow, shard) DO UPDATE SET count = c.count + excluded.count`);
}

/**
 * SQL giving a time-ordered id (a UUIDv7's layout: the millisecond first) for the timestamp expression `at`,
 * the rest from md5 of `salt` (an SQL expression), for rows generated set-based.
 */
export function timeOrderedId(at: string, salt: string): string {
  return `(lpad(to_hex(floor(extract(epoch FROM ${at}) * 1000)::bigint), 12, '0') || substr(md5((${salt})::text), 1, 20))::uuid`;
}

/**
 * Moves direct jobs back in time: finished at `finishedAt` and given ids of that millisecond (keeping the rest
 * of each id, so their order among themselves holds), with their events, attempts, replay links and intents.
 * Returns the new ids, in the order given.
 */
export async function backdateJobs(
  db: RawDb & { $queryRawUnsafe<T>(query: string, ...values: unknown[]): Promise<T> },
  ids: string[],
  finishedAt: Date,
): Promise<string[]> {
  const hex = finishedAt.getTime().toString(16).padStart(12, '0');
  const rows = await db.$queryRawUnsafe<{ old: string; new: string }[]>(
    `WITH m AS (
       SELECT old, (substr($2::text, 1, 8) || '-' || substr($2::text, 9, 4) || substr(old::text, 14))::uuid AS new
         FROM unnest($1::uuid[]) AS u(old)
     ),
     events AS (UPDATE runledger.job_events e SET job_id = m.new FROM m WHERE e.job_id = m.old),
     attempts AS (UPDATE runledger.job_attempts a SET job_id = m.new FROM m WHERE a.job_id = m.old),
     intents AS (UPDATE runledger.job_enqueue_intents i SET job_id = m.new FROM m WHERE i.job_id = m.old),
     jobs AS (UPDATE runledger.job_queue j SET id = m.new, finished_at = $3::timestamptz FROM m WHERE j.id = m.old RETURNING m.old, m.new)
     SELECT old::text, new::text FROM jobs`,
    ids,
    hex,
    finishedAt,
  );
  const byOld = new Map(rows.map((r) => [r.old, r.new]));
  return ids.map((id) => {
    const moved = byOld.get(id);
    if (moved === undefined) throw new Error(`no job ${id} to backdate`);
    return moved;
  });
}

/** A time-ordered id (UUIDv7's layout: the millisecond first) for a row created at `at`, the rest random. */
export function idAt(at: Date): string {
  const hex = at.getTime().toString(16).padStart(12, '0');
  const rest = randomUUID().replace(/-/g, '').slice(12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${rest.slice(0, 4)}-${rest.slice(4, 8)}-${rest.slice(8, 20)}`;
}
