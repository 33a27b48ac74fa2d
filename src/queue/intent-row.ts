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
 * Locks: intent rows (id order), then job_queue rows through the INSERT (its
 * idempotency index). Recording locks no row, but waits for a concurrent
 * recorder of the same key (the unique index). No catalog row is locked.
 */
import type { JsonValue } from '../model/json.js';
import { toInsertRow, type InsertJobRow } from './insert-jobs.js';

/** An intent row as the record and promote statements select it. */
export interface IntentRow {
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

/** The job an intent's promotion enqueues (its canonical request is what recording compares). */
export function toJobRow(intent: IntentRow): InsertJobRow {
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
