/**
 * SQL of `runledger.job_replays`, the lineage of successful-job replays: one
 * row per (source job, source run, replay request key), naming the replay job
 * and the reason. Deleting the source cascades to its lineage; the replay job
 * cannot be deleted while its lineage row exists (ON DELETE RESTRICT).
 */
import type { Tx } from '../client/types.js';
import { scopeParams } from '../db/scope.js';
import type { EnqueueJobResult } from '../queue/insert-jobs.js';
import type { JobStatus } from '../model/job-rows.js';
import { replayIdempotencyConflict, replayMissing } from './errors.js';
import type { ParsedReplayRequest } from './inputs.js';
import { inScope } from '../db/fragments.js';

interface LineageRow {
  replay_job_id: string;
  /** NULL when the reason differs (the replay is then neither read nor locked) or the replay job is gone. */
  replay_status: JobStatus | null;
  replay_run_number: number | null;
  reason: string;
}

export interface LineageInsert {
  sourceJobId: string;
  sourceRunNumber: number;
  replayRequestKey: string;
  replayJobId: string;
  reason: string;
}

/**
 * The replay already recorded for this request, as an `existing` enqueue
 * result, or null when the key is unused for this source run (in scope).
 * Same key with another reason is `job.replay_idempotency_conflict`.
 *
 * One statement classifies the key and, only when the reason matches, locks
 * the replay job `FOR NO KEY UPDATE` (so the status returned stays true until
 * the caller's transaction ends). A conflicting reason locks nothing.
 */
export async function findRecordedReplayTx(tx: Tx, request: ParsedReplayRequest): Promise<EnqueueJobResult | null> {
  const s = scopeParams(request.scope);
  const rows = await tx.$queryRaw<LineageRow[]>`
    SELECT jr.replay_job_id, replay.status AS replay_status, replay.run_number AS replay_run_number, jr.reason
      FROM runledger.job_replays jr
      JOIN runledger.job_queue src ON src.id = jr.source_job_id
      LEFT JOIN LATERAL (
        SELECT r.status, r.run_number
          FROM runledger.job_queue r
         WHERE r.id = jr.replay_job_id
           AND jr.reason = ${request.reason}::text
           FOR NO KEY UPDATE OF r
      ) replay ON TRUE
     WHERE jr.source_job_id = ${request.sourceJobId}::uuid
       AND jr.source_run_number = ${request.expectedRunNumber}::int
       AND jr.replay_request_key = ${request.replayRequestKey}::text
       AND ${inScope(s, 'src.organization_id')}`;
  const row = rows[0];
  if (!row) return null;
  if (row.reason !== request.reason) {
    throw replayIdempotencyConflict(request.sourceJobId, request.expectedRunNumber, request.replayRequestKey);
  }
  if (row.replay_status === null || row.replay_run_number === null) throw replayMissing(request.sourceJobId, row.replay_job_id);
  return { jobId: row.replay_job_id, status: row.replay_status, runNumber: row.replay_run_number, disposition: 'existing' };
}

/**
 * Records the lineage of a freshly inserted replay. Returns false, writing
 * nothing, when another transaction already holds the key (see the fallback
 * in replay.ts: with the source-lock protocol this does not happen).
 * `ON CONFLICT DO NOTHING` waits for an uncommitted holder instead of
 * raising a unique violation, so neither an owned nor a joined transaction is
 * ever aborted by a raw 23505.
 */
export async function insertReplayLineageTx(tx: Tx, lineage: LineageInsert): Promise<boolean> {
  const inserted = await tx.$executeRaw`
    INSERT INTO runledger.job_replays (source_job_id, source_run_number, replay_request_key, replay_job_id, reason)
    VALUES (${lineage.sourceJobId}::uuid, ${lineage.sourceRunNumber}::int, ${lineage.replayRequestKey}::text,
            ${lineage.replayJobId}::uuid, ${lineage.reason}::text)
    ON CONFLICT (source_job_id, source_run_number, replay_request_key) DO NOTHING`;
  return inserted === 1;
}
