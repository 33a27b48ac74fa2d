/**
 * Deleting job rows (their events and attempts go with them, by the job_queue_delete_* triggers): the
 * rollback of an uncommitted insert (src/queue/enqueue-idempotency.ts, src/replay/replay.ts) and retention's
 * purge (src/retention/purge.ts), whose callers have settled what may go.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';

/** Deletes the jobs `jobIds`. */
export function deleteJobsStatement(jobIds: readonly string[]): Sql {
  return sqltag`DELETE FROM runledger.job_queue WHERE id = ANY(${jobIds as string[]}::uuid[])`;
}

/** Deletes the job `jobId`. */
export function deleteJobStatement(jobId: string): Sql {
  return sqltag`DELETE FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
}
