/**
 * Compare-and-replay: execute a SUCCEEDED direct job again as a fresh job.
 *
 * Invariants:
 * - The source row is never written. The replay is a new job (new UUIDv7 id,
 *   run 1, PENDING) copying only the payload and the effective settings (job
 *   type, organization, priority, max attempts, timeout); never progress,
 *   checkpoint, output, timestamps, workflow ownership or the idempotency key.
 * - One replay per (source, source run, replay request key), recorded in
 *   `runledger.job_replays` together with an ENQUEUED event whose payload
 *   names the source job, run, key and reason. Same key + same reason returns
 *   that replay (`existing`); same key + another reason is
 *   `job.replay_idempotency_conflict`.
 * - Only a source in the exact scope, SUCCEEDED in the expected run and not
 *   referenced by a workflow step is replayed. Anything else is `not_found`,
 *   `expectation_mismatch` (with the actual record) or
 *   `job.workflow_requeue_not_supported`, and writes nothing.
 * - Requires READ COMMITTED: the re-check after the source lock must see a
 *   lineage row committed while this transaction waited for that lock.
 *
 * Algorithm (a port of seed 003):
 *   (a) look the key up (locking the replay job only if the reason matches);
 *   (b) lock the source `FOR NO KEY UPDATE` only while it is eligible; when it
 *       is not, read it without a lock to classify the outcome, and retry the
 *       locking read if it became eligible between the two statements;
 *   (c) look the key up again: a concurrent replay may have committed while
 *       (b) waited;
 *   (d) insert the replay job (insertJobsTx) and its lineage row.
 *
 * Lock order: source row (NO KEY UPDATE) -> existing replay job row (NO KEY
 * UPDATE, in (c)). Step (a) may lock a replay job without the source, but then
 * returns without asking for any other lock, so no path holds a replay job
 * while waiting for a source. NO KEY UPDATE rather than UPDATE because the
 * lineage foreign keys take KEY SHARE on both jobs, which NO KEY UPDATE admits;
 * the lock still serialises replays of the same source against each other.
 *
 * Why two replays of one key cannot both insert: each holds the source lock
 * from (b) until it commits, and (c) runs after that lock is granted, in a new
 * READ COMMITTED snapshot that includes the first one's lineage. So the second
 * answers `existing`. A writer that bypasses this protocol (inserting lineage
 * without the source lock) is still handled: the lineage insert uses
 * ON CONFLICT DO NOTHING, which waits for that writer instead of raising
 * 23505; on a conflict the replay job this call inserted is deleted (it is
 * uncommitted, visible to no one; its wake-up notification still goes out at
 * commit, which a worker answers by claiming nothing) and the key is
 * classified again. No raw 23505 escapes, in an owned or a joined transaction
 * alike, so no transaction retry is needed.
 */
import { sqltag } from '@prisma/client/runtime/client';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { scopeParams } from '../db/scope.js';
import { InternalError } from '../errors/runledger-error.js';
import { insertJobsTx, type EnqueueJobResult } from '../queue/insert-jobs.js';
import { toJob, type Job, type JobRow, JOB_ROW_COLUMNS } from '../model/job-rows.js';
import { parseInput } from '../validation/parse.js';
import { unstableRow, workflowRequeueNotSupported } from './errors.js';
import { findRecordedReplayTx, insertReplayLineageTx } from './replay-lineage.js';
import { compareAndReplaySucceededJobInputSchema, type CompareAndReplaySucceededJobInput, type ParsedReplayRequest } from './inputs.js';
import { JOB_INVALID_INPUT } from '../queue/inputs.js';
import { inScope } from '../db/fragments.js';
import { asTemplate } from '../db/sql-template.js';
import { deleteJobStatement } from '../queue/statements/delete-jobs.js';

const OPERATION = 'compare and replay succeeded job';

/** Locking read, then classifying read: a few rounds cover any real interleaving. */
const MAX_SOURCE_ROUNDS = 5;

export type CompareAndReplaySucceededJobResult =
  | {
      kind: 'replayed';
      sourceJobId: string;
      sourceRunNumber: number;
      /** `disposition: 'existing'`: an earlier request with this key and reason made this replay. */
      replay: EnqueueJobResult;
    }
  /** The source exists in scope but is not SUCCEEDED in the expected run. */
  | { kind: 'expectation_mismatch'; actual: Job }
  /** No source job in the exact scope. */
  | { kind: 'not_found' };

/** The source row with the settings a replay copies besides the public Job's. */
type ReplaySource = JobRow & {
  backoff_base_ms: number | null;
  backoff_max_ms: number | null;
  /** The source's concurrency key, with the key's limit now (the replay takes a slot of the same key). */
  replay_concurrency_key: string | null;
  replay_concurrency_limit: number | null;
  /** The source's rate key, with the key's setting now (the replay's start takes a token of the same key). */
  replay_rate_key: string | null;
  replay_rate: { limit: number; periodMs: number; burst: number } | null;
  /** The source's fairness key and weight (the replay takes its turns with the same key). */
  replay_fair_key: string | null;
  replay_fair_weight: number | null;
};
type SourceRow = ReplaySource & { workflow_managed: boolean };
const REPLAY_CONCURRENCY = sqltag`jq.concurrency_key AS replay_concurrency_key,
    (SELECT k.max_leased FROM runledger.concurrency_limits k WHERE k.key = jq.concurrency_key) AS replay_concurrency_limit,
    jq.rate_key AS replay_rate_key,
    (SELECT jsonb_build_object('limit', r.max_starts, 'periodMs', r.period_ms, 'burst', r.burst)
       FROM runledger.rate_limits r WHERE r.key = jq.rate_key) AS replay_rate,
    jq.fair_key AS replay_fair_key, jq.fair_weight AS replay_fair_weight`;

/**
 * Replays a successful direct job as a new job, idempotently per
 * `replayRequestKey`. Joins the caller's interactive transaction (which must
 * be READ COMMITTED, else `job.compare_and_replay_unsupported_isolation`) or
 * opens its own. Admin scope matches the source in any organization.
 *
 * @example
 * const result = await compareAndReplaySucceededJob(prisma, {
 *   scope: organizationScope(orgId),
 *   sourceJobId: job.id,
 *   expectedRunNumber: job.runNumber,
 *   replayRequestKey: `support-ticket-${ticketId}`,
 *   reason: 're-send the invoice after the template fix',
 * });
 * if (result.kind === 'replayed') console.log(result.replay.jobId, result.replay.disposition);
 */
export async function compareAndReplaySucceededJob(db: Db, input: CompareAndReplaySucceededJobInput): Promise<CompareAndReplaySucceededJobResult> {
  const request = parseInput(compareAndReplaySucceededJobInputSchema, input, JOB_INVALID_INPUT);
  return withTransaction(db, OPERATION, async (context) => {
    await ensureReadCommitted(context, 'job.compare_and_replay_unsupported_isolation', 'Successful job replay');
    const { tx } = context;
    const recorded = await findRecordedReplayTx(tx, request);
    if (recorded) return replayed(request, recorded);

    const source = await lockReplaySourceTx(tx, request);
    if ('kind' in source) return source;

    const raced = await findRecordedReplayTx(tx, request);
    if (raced) return replayed(request, raced);

    return insertReplayTx(tx, request, source);
  });
}

function replayed(request: ParsedReplayRequest, replay: EnqueueJobResult): CompareAndReplaySucceededJobResult {
  return { kind: 'replayed', sourceJobId: request.sourceJobId, sourceRunNumber: request.expectedRunNumber, replay };
}

/** The locked eligible source, or the outcome that ends the operation without a lock. */
async function lockReplaySourceTx(
  tx: Tx,
  request: ParsedReplayRequest,
): Promise<ReplaySource | Exclude<CompareAndReplaySucceededJobResult, { kind: 'replayed' }>> {
  for (let round = 0; round < MAX_SOURCE_ROUNDS; round += 1) {
    const locked = await lockEligibleSourceTx(tx, request);
    if (locked) return locked;
    const actual = await readSourceTx(tx, request);
    if (!actual) return { kind: 'not_found' };
    if (actual.status !== 'SUCCEEDED' || actual.run_number !== request.expectedRunNumber) {
      return { kind: 'expectation_mismatch', actual: toJob(actual) };
    }
    if (actual.workflow_managed) throw workflowRequeueNotSupported(actual.id, OPERATION);
    // Eligible now but not at the locking read's snapshot: READ COMMITTED gives the retry a fresh one.
  }
  throw unstableRow(request.sourceJobId, OPERATION);
}

async function lockEligibleSourceTx(tx: Tx, request: ParsedReplayRequest): Promise<ReplaySource | undefined> {
  const s = scopeParams(request.scope);
  const rows = await tx.$queryRaw<ReplaySource[]>`
    SELECT ${JOB_ROW_COLUMNS}, jq.backoff_base_ms, jq.backoff_max_ms, ${REPLAY_CONCURRENCY}
      FROM runledger.job_queue jq
     WHERE jq.id = ${request.sourceJobId}::uuid
       AND ${inScope(s, 'jq.organization_id')}
       AND jq.status = 'SUCCEEDED'::runledger.job_status
       AND jq.run_number = ${request.expectedRunNumber}::int
       AND jq.workflow_step_id IS NULL
       FOR NO KEY UPDATE OF jq`;
  return rows[0];
}

/** Reads a source that failed the locking read, without keeping a lock in the caller's transaction. */
async function readSourceTx(tx: Tx, request: ParsedReplayRequest): Promise<SourceRow | undefined> {
  const s = scopeParams(request.scope);
  const rows = await tx.$queryRaw<SourceRow[]>`
    SELECT ${JOB_ROW_COLUMNS}, jq.backoff_base_ms, jq.backoff_max_ms, ${REPLAY_CONCURRENCY},
           jq.workflow_step_id IS NOT NULL AS workflow_managed
      FROM runledger.job_queue jq
     WHERE jq.id = ${request.sourceJobId}::uuid
       AND ${inScope(s, 'jq.organization_id')}`;
  return rows[0];
}

async function insertReplayTx(tx: Tx, request: ParsedReplayRequest, source: ReplaySource): Promise<CompareAndReplaySucceededJobResult> {
  const replayJobId = newId();
  const inserted = await insertJobsTx(tx, [
    {
      id: replayJobId,
      jobType: source.job_type,
      organizationId: source.organization_id,
      payload: source.payload,
      priority: source.priority,
      maxAttempts: source.max_attempts,
      timeoutSeconds: source.timeout_seconds,
      // The replay repeats the same work against the same resource.
      resourceKey: source.resource_key,
      concurrency:
        source.replay_concurrency_key === null || source.replay_concurrency_limit === null
          ? null
          : { key: source.replay_concurrency_key, limit: source.replay_concurrency_limit },
      rateLimit: source.replay_rate_key === null || source.replay_rate === null ? null : { key: source.replay_rate_key, ...source.replay_rate },
      fairness: source.replay_fair_key === null ? null : { key: source.replay_fair_key, weight: source.replay_fair_weight ?? 1 },
      // ... and with the source's own backoff, if it had one.
      backoff:
        source.backoff_base_ms === null || source.backoff_max_ms === null ? null : { baseDelayMs: source.backoff_base_ms, maxDelayMs: source.backoff_max_ms },
      nextRunAt: null,
      idempotencyKey: null,
      enqueueRequest: null,
      eventPayload: {
        replayedFromJobId: source.id,
        replayedFromRunNumber: source.run_number,
        replayRequestKey: request.replayRequestKey,
        reason: request.reason,
      },
    },
  ]);
  if (inserted[0] !== replayJobId) {
    throw new InternalError('job.internal_state', 'The replay job could not be inserted.', {
      internalMessage: `${OPERATION}: insert of replay ${replayJobId} for source ${source.id} returned no row`,
    });
  }
  const recorded = await insertReplayLineageTx(tx, {
    sourceJobId: source.id,
    sourceRunNumber: source.run_number,
    replayRequestKey: request.replayRequestKey,
    replayJobId,
    reason: request.reason,
  });
  if (recorded) {
    return replayed(request, { jobId: replayJobId, status: 'PENDING', runNumber: 1, disposition: 'inserted' });
  }
  // Another writer committed this key without the source lock (see the header): drop ours, answer with theirs.
  await tx.$executeRaw(...asTemplate(deleteJobStatement(replayJobId)));
  const winner = await findRecordedReplayTx(tx, request);
  if (!winner) throw unstableRow(request.sourceJobId, OPERATION);
  return replayed(request, winner);
}
