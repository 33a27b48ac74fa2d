/**
 * Promotion (`promoteEnqueueIntents`, the worker's promoter loop): one
 * transaction per batch. It locks due PENDING intents of the given types
 * whose catalog row is enabled, in id order, `FOR UPDATE SKIP LOCKED`, so
 * any number of promoters share the backlog and each intent is promoted by
 * exactly one. Inside a savepoint it enqueues the batch with ordinary keyed
 * enqueue semantics (the same INSERT and canonical request as `enqueueJob`,
 * src/queue/enqueue.ts), reads the holders of keys that were taken, and
 * settles every intent in one UPDATE. When the savepoint fails, the batch is
 * rolled back to it and retried intent by intent (each in its own savepoint,
 * on this failure path only), so one intent the database refuses delays only
 * itself; each failure is recorded on its intent.
 */
import { z } from 'zod';
import type { Db, Tx } from '../client/types.js';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import { isDatabaseError, normalizeDatabaseError } from '../errors/database-error.js';
import { parseInput } from '../validation/parse.js';
import { nonBlank, positiveInt } from '../validation/primitives.js';
import { truncateText } from '../validation/storable.js';
import { insertJobsTx } from './insert-jobs.js';
import { jsonParam } from '../model/job-rows.js';
import { JOB_INVALID_INPUT } from './inputs.js';
import { MAX_ERROR_MESSAGE_LENGTH } from '../job/defaults.js';

import { toJobRow, type IntentRow } from './intent-row.js';

export const MAX_PROMOTE_BATCH = 500;

export const promoteEnqueueIntentsInputSchema = z.strictObject({
  /** The types this promoter may promote (a worker's registered types). */
  jobTypes: z.array(nonBlank(200)).min(1, 'must name at least one job type').max(10_000),
  limit: positiveInt.max(MAX_PROMOTE_BATCH).default(100),
});
export type PromoteEnqueueIntentsInput = z.input<typeof promoteEnqueueIntentsInputSchema>;

export interface PromotedIntent {
  intentId: string;
  /** 'inserted': a new job; 'existing': the key's job of the same request; 'conflict': kept as evidence; 'failed': stays pending. */
  outcome: 'inserted' | 'existing' | 'conflict' | 'failed';
  /** The job (for 'conflict': the job holding the key); null when 'failed'. */
  jobId: string | null;
}

export interface PromoteEnqueueIntentsResult {
  /** Intents this call took (a full batch means more may be due). */
  claimed: number;
  intents: PromotedIntent[];
}

/** Retry spacing of a failed promotion: 1 s doubling per attempt, at most 5 min. */
const RETRY_BASE_SECONDS = 1;
const RETRY_MAX_SECONDS = 300;

/**
 * Promotes up to `limit` due intents of `jobTypes` whose definitions are
 * enabled (module comment). Database failures of the batch are recorded on
 * its intents (they stay pending, retried later) and do not throw; a failure
 * to lock or to record does, and changes nothing.
 *
 * @example
 * await promoteEnqueueIntents(prisma, { jobTypes: ['invoice.send'], limit: 100 });
 */
export async function promoteEnqueueIntents(db: Db, input: PromoteEnqueueIntentsInput): Promise<PromoteEnqueueIntentsResult> {
  const { jobTypes, limit } = parseInput(promoteEnqueueIntentsInputSchema, input, JOB_INVALID_INPUT);
  return withTransaction(db, 'promote enqueue intents', async (context) => {
    await ensureReadCommitted(context, 'job.intent_unsupported_isolation', 'Promoting enqueue intents');
    const { tx } = context;
    const claimed = await tx.$queryRaw<IntentRow[]>`
      SELECT i.id, i.job_type, i.organization_id, i.idempotency_key, i.payload, i.priority, i.max_attempts, i.timeout_seconds,
             i.run_at, i.resource_key, i.backoff_base_ms, i.backoff_max_ms
        FROM runledger.job_enqueue_intents i
        JOIN runledger.job_definitions d ON d.job_type = i.job_type AND d.enabled
       WHERE i.state = 'PENDING'
         AND i.job_type = ANY(${jobTypes}::text[])
         AND i.next_attempt_at <= now()
       ORDER BY i.id
       LIMIT ${limit}
         FOR UPDATE OF i SKIP LOCKED`;
    if (claimed.length === 0) return { claimed: 0, intents: [] };
    const batch = await inSavepoint(tx, () => promoteBatch(tx, claimed));
    if (batch.ok) return { claimed: claimed.length, intents: batch.value };
    const intents: PromotedIntent[] = [];
    for (const intent of claimed) {
      const single = claimed.length === 1 ? batch : await inSavepoint(tx, () => promoteBatch(tx, [intent]));
      if (single.ok) {
        intents.push(...single.value);
      } else {
        await recordFailure(tx, intent.id, single.error);
        intents.push({ intentId: intent.id, outcome: 'failed', jobId: null });
      }
    }
    return { claimed: claimed.length, intents };
  });
}

type Attempt<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Runs `fn` under a savepoint: a database failure rolls back to it and is returned; anything else propagates. */
async function inSavepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<Attempt<T>> {
  await tx.$executeRaw`SAVEPOINT runledger_promote_intents`;
  try {
    const value = await fn();
    await tx.$executeRaw`RELEASE SAVEPOINT runledger_promote_intents`;
    return { ok: true, value };
  } catch (error) {
    if (!isDatabaseError(error)) throw error;
    // If this fails too (the connection is gone), the transaction is lost and the error propagates: nothing changed.
    await tx.$executeRaw`ROLLBACK TO SAVEPOINT runledger_promote_intents`;
    return { ok: false, error };
  }
}

/** Enqueues the batch's jobs, reads the holders of taken keys, settles every intent: three statements. */
async function promoteBatch(tx: Tx, intents: readonly IntentRow[]): Promise<PromotedIntent[]> {
  const rows = intents.map(toJobRow);
  const inserted = new Set(await insertJobsTx(tx, rows));
  const skipped = rows.flatMap((row, index) => (inserted.has(row.id) ? [] : [{ row, intent: intents[index]! }]));
  const holders = new Map<string, { id: string; same: boolean }>();
  if (skipped.length > 0) {
    const found = await tx.$queryRaw<{ intent_id: string; id: string; same: boolean }[]>`
      SELECT r.intent_id, jq.id, jq.enqueue_request = r.request AS same
        FROM unnest(${skipped.map((s) => s.intent.id)}::uuid[], ${skipped.map((s) => s.row.jobType)}::text[],
                    ${skipped.map((s) => s.row.organizationId)}::text[], ${skipped.map((s) => s.row.idempotencyKey)}::text[],
                    ${skipped.map((s) => jsonParam(s.row.enqueueRequest))}::jsonb[])
             AS r(intent_id, job_type, organization_id, idempotency_key, request)
        JOIN runledger.job_queue jq
          ON jq.job_type = r.job_type
         AND COALESCE(jq.organization_id, '') = COALESCE(r.organization_id, '')
         AND jq.idempotency_key = r.idempotency_key`;
    for (const row of found) holders.set(row.intent_id, { id: row.id, same: row.same === true });
  }
  const outcomes: PromotedIntent[] = intents.map((intent, index) => {
    const row = rows[index]!;
    if (inserted.has(row.id)) return { intentId: intent.id, outcome: 'inserted', jobId: row.id };
    const holder = holders.get(intent.id);
    // A holder deleted between the INSERT and the read: the intent stays pending and the next pass inserts it.
    if (!holder) return { intentId: intent.id, outcome: 'failed', jobId: null };
    return { intentId: intent.id, outcome: holder.same ? 'existing' : 'conflict', jobId: holder.id };
  });
  await tx.$executeRaw`
    UPDATE runledger.job_enqueue_intents i
       SET state = CASE WHEN o.outcome = 'conflict' THEN 'CONFLICT' WHEN o.outcome = 'failed' THEN 'PENDING' ELSE 'PROMOTED' END
                   ::runledger.job_enqueue_intent_state,
           job_id = o.job_id,
           settled_at = CASE WHEN o.outcome = 'failed' THEN NULL ELSE now() END,
           attempts = i.attempts + 1,
           last_error_code = CASE o.outcome WHEN 'conflict' THEN 'job.intent_idempotency_conflict'
                                            WHEN 'failed' THEN 'database.transaction_conflict' END,
           last_error_message = CASE o.outcome WHEN 'conflict' THEN 'The idempotency key already holds a job made from a different request.'
                                               WHEN 'failed' THEN 'The job holding the idempotency key vanished during promotion; retried.' END,
           next_attempt_at = CASE WHEN o.outcome = 'failed' THEN now() + ${RETRY_BASE_SECONDS} * interval '1 second' ELSE i.next_attempt_at END,
           updated_at = now()
      FROM unnest(${outcomes.map((o) => o.intentId)}::uuid[], ${outcomes.map((o) => o.outcome)}::text[], ${outcomes.map((o) => o.jobId)}::uuid[])
           AS o(intent_id, outcome, job_id)
     WHERE i.id = o.intent_id`;
  return outcomes;
}

/** Keeps a failed intent pending with the failure and a later retry (exponential, capped). */
async function recordFailure(tx: Tx, intentId: string, error: unknown): Promise<void> {
  const normalized = normalizeDatabaseError(error, 'promote enqueue intent');
  await tx.$executeRaw`
    UPDATE runledger.job_enqueue_intents
       SET attempts = attempts + 1,
           last_error_code = ${normalized.code},
           last_error_message = ${truncateText(normalized.message, MAX_ERROR_MESSAGE_LENGTH)},
           next_attempt_at = now() + LEAST(${RETRY_MAX_SECONDS}::double precision,
                                            ${RETRY_BASE_SECONDS}::double precision * power(2, LEAST(attempts, 20))) * interval '1 second',
           updated_at = now()
     WHERE id = ${intentId}::uuid AND state = 'PENDING'`;
}
