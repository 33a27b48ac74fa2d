/**
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
 */
import { z } from 'zod';
import type { Db, Tx } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { newId } from '../db/ids.js';
import { isDeepStrictEqual } from 'node:util';
import { ConflictError, InternalError, ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { int32, jsonInput, timestamp, nonBlank, organizationId, positiveInt, requestKey } from '../validation/primitives.js';
import type { JsonValue } from '../model/json.js';
import { definedJobInput } from './enqueue.js';
import { checkDefinitionPayload } from '../job/payload.js';
import { isJobDefinition } from '../job/define-job.js';
import type { AnyJobDefinition, JobPayload } from '../job/contract.js';
import { backoffPolicySchema } from '../job/retry-policy.js';
import { JOB_INVALID_INPUT } from './inputs.js';

import { toJobRow, type IntentRow } from './intent-row.js';

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
export async function recordJobEnqueueIntent(
  db: Db,
  first: AnyJobDefinition | RecordJobEnqueueIntentInput,
  ...rest: unknown[]
): Promise<RecordedEnqueueIntent> {
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
