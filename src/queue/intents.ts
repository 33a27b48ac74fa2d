/**
 * Durable enqueue intents (`job_enqueue_intents`): the host records that it
 * wants a job, in its own transaction, without touching `job_queue` or the
 * definitions catalog; a worker that runs the type promotes the intent to a
 * job later. For writes whose job type may not be deployed yet (a new
 * feature's API ships before its worker), or whose transaction must not wait
 * on queue rows.
 *
 * State machine (one row per intent):
 *   PENDING --promoted: a new job, or the key's existing job of the same request--> PROMOTED (job_id)
 *   PENDING --the key holds a job of another request--> CONFLICT (job_id = that job,
 *            last_error_code `job.intent_idempotency_conflict`): kept as evidence, never retried
 *   PENDING --the promotion statement failed--> PENDING (attempts + 1, last_error_*,
 *            next_attempt_at pushed back exponentially, capped): retried forever, never dropped
 * An intent stays PENDING, untouched, while its type has no enabled catalog row.
 *
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
 *
 * Recording is idempotent by key, like a keyed enqueue: at most one intent
 * per (job type, organization, idempotency key), the migration's unique
 * index. The same request again (the canonical request its promotion would
 * enqueue, src/queue/enqueue.ts; `runAt` is not part of it) returns the
 * recorded intent (`disposition: 'existing'`); another request is refused
 * with `job.intent_idempotency_conflict` and writes nothing. One statement
 * inserts `ON CONFLICT DO NOTHING` and reads a key's intent already visible
 * to it; a concurrent recorder of the same key makes the INSERT wait for its
 * commit, and a second statement (READ COMMITTED: a fresh snapshot) reads the
 * winner. A caller's transaction at REPEATABLE READ or stronger cannot see
 * that winner, and PostgreSQL then fails the INSERT with a serialization
 * failure (`database.transaction_conflict`, retry) instead of guessing.
 *
 * Locks: intent rows (id order), then job_queue rows through the INSERT (its
 * idempotency index). Recording locks no row, but waits for a concurrent
 * recorder of the same key (the unique index). No catalog row is locked.
 */
import { z } from 'zod';
import type { Db, Tx } from '../client/types.js';
import { ensureReadCommitted, withStatement, withTransaction } from '../client/transaction.js';
import { newId } from '../db/ids.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { isDatabaseError, normalizeDatabaseError } from '../errors/database-error.js';
import { isDeepStrictEqual } from 'node:util';
import { ConflictError, InternalError, ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { int32, jsonInput, timestamp, nonBlank, organizationId, positiveInt, requestKey, type JsonValue } from '../validation/primitives.js';
import { truncateText } from '../validation/storable.js';
import { definedJobInput, insertJobsTx, toInsertRow, type InsertJobRow } from './enqueue.js';
import { checkDefinitionPayload } from '../job/payload.js';
import { isJobDefinition, type AnyJobDefinition, type JobPayload } from '../job/define-job.js';
import { backoffPolicySchema } from '../job/retry-policy.js';
import { jsonParam } from '../model/job-rows.js';
import { JOB_INVALID_INPUT, MAX_ERROR_MESSAGE_LENGTH } from './inputs.js';
import { inScope } from '../db/fragments.js';

export const recordJobEnqueueIntentInputSchema = z.strictObject({
  jobType: nonBlank(200),
  payload: jsonInput,
  /** Required: it makes promotion idempotent, and an intent and a direct enqueue of the same request meet on it. */
  idempotencyKey: requestKey,
  organizationId: organizationId.nullish(),
  priority: int32.optional(),
  maxAttempts: positiveInt.optional(),
  timeoutSeconds: positiveInt.optional(),
  runAt: timestamp.optional(),
  resource: requestKey.optional(),
  backoff: backoffPolicySchema.optional(),
});
export type RecordJobEnqueueIntentInput = Omit<z.input<typeof recordJobEnqueueIntentInputSchema>, 'payload'> & { payload: unknown };
/** An intent's own fields beside a typed definition and its payload (the idempotency key is required). */
export type RecordJobEnqueueIntentSettings = Omit<RecordJobEnqueueIntentInput, 'jobType' | 'payload'>;

/**
 * Records an enqueue intent: one INSERT, joined to `db` when it is your
 * transaction (the intent exists only if it commits). No job row is written
 * and the catalog is not read: a worker registered for the type promotes it
 * once the type's definition is enabled. The settings follow `enqueueJob`'s
 * rules when it is promoted (the same idempotency key and request give the
 * same job). Idempotent by key (module comment): the same request again
 * returns the recorded intent (`disposition: 'existing'`), another request
 * under the key throws `job.intent_idempotency_conflict` and writes nothing.
 *
 * @example
 * await prisma.$transaction(async (tx) => {
 *   await tx.order.update({ where: { id }, data: { status: 'paid' } });
 *   await recordJobEnqueueIntent(tx, { jobType: 'invoice.send', payload: { orderId: id }, idempotencyKey: `invoice:${id}` });
 * });
 */
export function recordJobEnqueueIntent(db: Db, input: RecordJobEnqueueIntentInput): Promise<RecordedEnqueueIntent>;
/**
 * The typed form, as `enqueueJob(db, definition, payload, settings)`: the
 * payload is checked against the definition's schema at compile time, and the
 * definition's priority, attempts, timeout and backoff apply unless the
 * settings give their own.
 *
 * @example
 * await recordJobEnqueueIntent(tx, sendInvoice, { orderId: id }, { idempotencyKey: `invoice:${id}` });
 */
export function recordJobEnqueueIntent<D extends AnyJobDefinition>(
  db: Db,
  definition: D,
  payload: JobPayload<D>,
  settings: RecordJobEnqueueIntentSettings,
): Promise<RecordedEnqueueIntent>;
export async function recordJobEnqueueIntent(db: Db, first: AnyJobDefinition | RecordJobEnqueueIntentInput, ...rest: unknown[]): Promise<RecordedEnqueueIntent> {
  let input: unknown = first;
  if (isJobDefinition(first)) {
    const settings = rest[1];
    if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
      throw new ValidationError('job.invalid_input', 'settings', 'Invalid settings: an intent needs its settings object with the idempotencyKey.');
    }
    input = definedJobInput(first, { ...settings, payload: rest[0] });
  }
  const i = parseInput(recordJobEnqueueIntentInputSchema, input, JOB_INVALID_INPUT);
  if (isJobDefinition(first)) await checkDefinitionPayload(first, rest[0], [], JOB_INVALID_INPUT);
  const intent: IntentRow = {
    id: newId(),
    job_type: i.jobType,
    organization_id: i.organizationId ?? null,
    idempotency_key: i.idempotencyKey,
    payload: i.payload as JsonValue,
    priority: i.priority ?? null,
    max_attempts: i.maxAttempts ?? null,
    timeout_seconds: i.timeoutSeconds ?? null,
    run_at: i.runAt ?? null,
    resource_key: i.resource ?? null,
    backoff_base_ms: i.backoff?.baseDelayMs ?? null,
    backoff_max_ms: i.backoff?.maxDelayMs ?? null,
  };
  // At most three rounds: an intent read as the key's holder may be purged before the next read (module comment).
  for (let round = 0; round < 3; round += 1) {
    const recorded = await withStatement(db, RECORD_OPERATION, (tx) => insertIntent(tx, intent), { readCommitted: false });
    if (recorded.kind === 'inserted') return { intentId: intent.id, disposition: 'inserted' };
    // Not inserted and not visible to the INSERT's snapshot: a concurrent recorder committed it; read it now.
    const holder = recorded.holder ?? (await withStatement(db, RECORD_OPERATION, (tx) => readKeyHolder(tx, intent), { readCommitted: false }));
    if (!holder) continue;
    if (!sameRequest(holder, intent)) {
      throw new ConflictError('job.intent_idempotency_conflict', 'The idempotency key already holds an enqueue intent made from a different request.', {
        details: { jobType: intent.job_type },
        sensitiveDetails: { idempotencyKey: intent.idempotency_key },
        internalMessage: `${RECORD_OPERATION}: intent ${holder.id} holds the key with another request`,
      });
    }
    return { intentId: holder.id, disposition: 'existing' };
  }
  throw new InternalError('job.internal_state', 'The enqueue intent could not be recorded.', {
    internalMessage: `${RECORD_OPERATION}: the key's intent vanished between the insert and the read, three times`,
  });
}

export interface RecordedEnqueueIntent {
  intentId: string;
  /** 'inserted': this call recorded it; 'existing': the key already held an intent of the same request, returned. */
  disposition: 'inserted' | 'existing';
}

const RECORD_OPERATION = 'record enqueue intent';

/**
 * The INSERT, skipping a taken key (the unique index waits for a concurrent recorder of the key to end), and
 * in the same statement the key's holder when its snapshot already sees one.
 */
async function insertIntent(tx: Tx, intent: IntentRow): Promise<{ kind: 'inserted' } | { kind: 'skipped'; holder: IntentRow | null }> {
  const rows = await tx.$queryRaw<(IntentRow & { kind: 'inserted' | 'holder' })[]>`
    WITH inserted AS (
      INSERT INTO runledger.job_enqueue_intents
             (id, job_type, organization_id, idempotency_key, payload, priority, max_attempts, timeout_seconds, run_at,
              resource_key, backoff_base_ms, backoff_max_ms)
      VALUES (${intent.id}::uuid, ${intent.job_type}, ${intent.organization_id}, ${intent.idempotency_key}, ${JSON.stringify(intent.payload)}::jsonb,
              ${intent.priority}::int, ${intent.max_attempts}::int, ${intent.timeout_seconds}::int, ${intent.run_at}::timestamptz,
              ${intent.resource_key}, ${intent.backoff_base_ms}::int, ${intent.backoff_max_ms}::int)
      ON CONFLICT (job_type, COALESCE(organization_id, ''), idempotency_key) DO NOTHING
      RETURNING id
    )
    SELECT 'inserted' AS kind, id, NULL::text AS job_type, NULL::text AS organization_id, NULL::text AS idempotency_key, NULL::jsonb AS payload,
           NULL::int AS priority, NULL::int AS max_attempts, NULL::int AS timeout_seconds, NULL::timestamptz AS run_at,
           NULL::text AS resource_key, NULL::int AS backoff_base_ms, NULL::int AS backoff_max_ms
      FROM inserted
    UNION ALL
    SELECT 'holder', i.id, i.job_type, i.organization_id, i.idempotency_key, i.payload, i.priority, i.max_attempts, i.timeout_seconds,
           i.run_at, i.resource_key, i.backoff_base_ms, i.backoff_max_ms
      FROM runledger.job_enqueue_intents i
     WHERE i.job_type = ${intent.job_type} AND COALESCE(i.organization_id, '') = COALESCE(${intent.organization_id}::text, '')
       AND i.idempotency_key = ${intent.idempotency_key}
       AND NOT EXISTS (SELECT 1 FROM inserted)`;
  if (rows.some((row) => row.kind === 'inserted')) return { kind: 'inserted' };
  return { kind: 'skipped', holder: rows[0] ?? null };
}

/** The key's intent, read with this statement's snapshot. */
async function readKeyHolder(tx: Tx, intent: IntentRow): Promise<IntentRow | null> {
  const rows = await tx.$queryRaw<IntentRow[]>`
    SELECT i.id, i.job_type, i.organization_id, i.idempotency_key, i.payload, i.priority, i.max_attempts, i.timeout_seconds,
           i.run_at, i.resource_key, i.backoff_base_ms, i.backoff_max_ms
      FROM runledger.job_enqueue_intents i
     WHERE i.job_type = ${intent.job_type} AND COALESCE(i.organization_id, '') = COALESCE(${intent.organization_id}::text, '')
       AND i.idempotency_key = ${intent.idempotency_key}`;
  return rows[0] ?? null;
}

/** The same request: the canonical requests their promotions would enqueue are equal as JSON (key order aside). */
function sameRequest(a: IntentRow, b: IntentRow): boolean {
  const canonical = (intent: IntentRow) => JSON.parse(JSON.stringify(toJobRow(intent).enqueueRequest)) as unknown;
  return isDeepStrictEqual(canonical(a), canonical(b));
}

/** Most intents one promotion transaction takes. */
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

interface IntentRow {
  id: string;
  job_type: string;
  organization_id: string | null;
  idempotency_key: string;
  payload: JsonValue;
  priority: number | null;
  max_attempts: number | null;
  timeout_seconds: number | null;
  run_at: Date | null;
  resource_key: string | null;
  backoff_base_ms: number | null;
  backoff_max_ms: number | null;
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

function toJobRow(intent: IntentRow): InsertJobRow {
  const row = toInsertRow({
    jobType: intent.job_type,
    payload: intent.payload,
    organizationId: intent.organization_id,
    idempotencyKey: intent.idempotency_key,
    ...(intent.priority === null ? {} : { priority: intent.priority }),
    ...(intent.max_attempts === null ? {} : { maxAttempts: intent.max_attempts }),
    ...(intent.timeout_seconds === null ? {} : { timeoutSeconds: intent.timeout_seconds }),
    ...(intent.run_at === null ? {} : { runAt: intent.run_at }),
    ...(intent.resource_key === null ? {} : { resource: intent.resource_key }),
    ...(intent.backoff_base_ms === null || intent.backoff_max_ms === null
      ? {}
      : { backoff: { baseDelayMs: intent.backoff_base_ms, maxDelayMs: intent.backoff_max_ms } }),
  });
  return { ...row, eventPayload: { enqueueIntentId: intent.id } };
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

export const enqueueIntentStatsInputSchema = z.strictObject({ scope: scopeSchema });

export interface EnqueueIntentStats {
  /** Intents waiting for promotion (including those whose type has no enabled definition). */
  pending: number;
  /** Age of the oldest pending intent, in ms (database clock); null when none is pending. */
  oldestPendingAgeMs: number | null;
  /** Most failed promotion attempts of any pending intent (0: none failed). */
  maxPendingAttempts: number;
  /** Pending intents whose last promotion failed. */
  failing: number;
  /** Intents kept as conflict evidence. */
  conflicts: number;
}

/**
 * The intent backlog in `scope`, for dashboards and alerts (one read, index-backed for the pending rows).
 *
 * @example
 * const { pending, oldestPendingAgeMs } = await getEnqueueIntentStats(prisma, { scope: adminScope() });
 */
export async function getEnqueueIntentStats(db: Db, input: { scope: Scope }): Promise<EnqueueIntentStats> {
  const { scope } = parseInput(enqueueIntentStatsInputSchema, input, JOB_INVALID_INPUT);
  return withStatement(db, 'read enqueue intent stats', (tx) => readEnqueueIntentStats(tx, scope), { readCommitted: false });
}

/** The intent backlog read on `tx` (getEnqueueIntentStats, and getQueueMetrics's `intents`). */
export async function readEnqueueIntentStats(tx: Tx, scope: Scope): Promise<EnqueueIntentStats> {
  const s = scopeParams(scope);
  // Two partial-index reads (pending, conflict): promoted intents, the bulk of the table, are never visited.
  const [row] = await tx.$queryRaw<{ pending: number; oldest_ms: number | null; max_attempts: number; failing: number; conflicts: number }[]>`
      SELECT p.pending, p.oldest_ms, p.max_attempts, p.failing, c.conflicts
        FROM (SELECT count(*)::int AS pending,
                     (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS oldest_ms,
                     COALESCE(max(attempts), 0)::int AS max_attempts,
                     count(*) FILTER (WHERE last_error_code IS NOT NULL)::int AS failing
                FROM runledger.job_enqueue_intents
               WHERE state = 'PENDING'
                 AND ${inScope(s, 'organization_id')}) p
       CROSS JOIN (SELECT count(*)::int AS conflicts
                     FROM runledger.job_enqueue_intents
                    WHERE state = 'CONFLICT'
                      AND ${inScope(s, 'organization_id')}) c`;
  return {
    pending: row!.pending,
    oldestPendingAgeMs: row!.oldest_ms === null ? null : Math.max(0, Math.round(row!.oldest_ms)),
    maxPendingAttempts: row!.max_attempts,
    failing: row!.failing,
    conflicts: row!.conflicts,
  };
}
