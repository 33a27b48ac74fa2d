/**
 * Keyed enqueue's second statement: for the inputs whose idempotency key was
 * already held (the insert skipped them), read the holder and compare the
 * canonical requests in SQL: equal -> 'existing', different ->
 * `job.idempotency_conflict` (see enqueue.ts's module comment for the
 * isolation rule and what happens to the rest of the batch).
 */
import type { Tx } from '../client/types.js';
import { ConflictError } from '../errors/runledger-error.js';
import { jsonParam, type JobStatus } from '../model/job-rows.js';
import type { EnqueueJobResult, InsertJobRow } from './insert-jobs.js';
import { asTemplate } from '../db/sql-template.js';
import { deleteJobsStatement } from './statements/delete-jobs.js';

interface ExistingRow {
  ord: number;
  id: string | null;
  status: JobStatus | null;
  run_number: number | null;
  same_request: boolean | null;
}

/** Reads the rows that already held the keys of skipped inputs, and compares the requests in SQL. */
export async function resolveExisting(tx: Tx, skipped: readonly { row: InsertJobRow; index: number }[]): Promise<Map<number, EnqueueJobResult>> {
  const found = await tx.$queryRaw<ExistingRow[]>`
    SELECT r.ord, jq.id, jq.status, jq.run_number, jq.enqueue_request = r.request AS same_request
      FROM unnest(
             ${skipped.map((s) => s.index)}::int[],
             ${skipped.map((s) => s.row.jobType)}::text[],
             ${skipped.map((s) => s.row.organizationId)}::text[],
             ${skipped.map((s) => s.row.idempotencyKey)}::text[],
             ${skipped.map((s) => jsonParam(s.row.enqueueRequest))}::jsonb[]
           ) AS r(ord, job_type, organization_id, idempotency_key, request)
      LEFT JOIN runledger.job_queue jq
             ON jq.job_type = r.job_type
            AND COALESCE(jq.organization_id, '')
              = COALESCE(r.organization_id, '')
            AND jq.idempotency_key = r.idempotency_key
     ORDER BY r.ord`;
  const inputs = new Map(skipped.map((s) => [s.index, s.row]));
  const results = new Map<number, EnqueueJobResult>();
  for (const row of found) {
    const input = inputs.get(row.ord)!;
    if (row.id === null || row.status === null || row.run_number === null) {
      // The key's holder was deleted between the two statements: retrying the enqueue inserts it.
      throw new ConflictError('database.transaction_conflict', 'The operation conflicted with a concurrent one; retry it.', {
        internalMessage: `enqueue jobs: row holding idempotency key of input ${row.ord} vanished before it could be read`,
      });
    }
    if (row.same_request !== true) {
      throw new ConflictError('job.idempotency_conflict', 'The idempotency key was already used with a different request.', {
        internalMessage: `enqueue jobs: key of input ${row.ord} (job type ${input.jobType}) is held by job ${row.id} with another request`,
        details: { index: row.ord, jobType: input.jobType },
        sensitiveDetails: { idempotencyKey: input.idempotencyKey },
      });
    }
    results.set(row.ord, { jobId: row.id, status: row.status, runNumber: row.run_number, disposition: 'existing' });
  }
  return results;
}

/** Removes jobs inserted earlier in this same, still uncommitted transaction (their events cascade). */
export async function deleteUncommittedJobs(tx: Tx, jobIds: string[]): Promise<void> {
  await tx.$executeRaw(...asTemplate(deleteJobsStatement(jobIds)));
}
