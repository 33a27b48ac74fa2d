/**
 * The shared job insert: one statement writes a batch of job rows (and the
 * ENQUEUED events that say more than the row), checks the definitions catalog
 * and sends the wake-up NOTIFY. Every writer of jobs goes through it: enqueue,
 * workflow append, schedules, intent promotion, replay (a workflow start
 * writes its root jobs in its own one statement, start-workflow-runs.ts).
 * Rows whose idempotency key is already held are skipped here; what that
 * means for the caller (existing or conflict) is enqueue-idempotency.ts's.
 */
import { captureTraceContext } from '../telemetry/trace-context.js';
import type { Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { ConflictError } from '../errors/runledger-error.js';
import type { JsonValue } from '../model/json.js';
import type { BackoffPolicy } from '../job/defaults.js';
import { resolveBackoff } from '../job/retry-policy.js';
import { jsonParam, type JobStatus } from '../model/job-rows.js';
import type { ParsedEnqueueJobInput } from './inputs.js';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_TIMEOUT_SECONDS } from '../job/defaults.js';
import { asTemplate } from '../db/sql-template.js';
import { insertJobsStatement, type InsertedRow } from './statements/insert-jobs.js';
import { writeConcurrencyLimitsStatement } from './statements/concurrency-limits.js';
import { writeRateLimitsStatement, type RateSetting } from './statements/rate-limits.js';

export interface EnqueueJobResult {
  jobId: string;
  status: JobStatus;
  runNumber: number;
  /**
   * 'inserted': this request made the job (for a debounce or throttle, it opened the key's window). 'existing':
   * an earlier enqueue with the same idempotency key and the same request made it. 'debounced': the request
   * joined the key's debounce window, and the job now carries its payload and settings. 'throttled': the
   * request fell in the key's throttle window and returns its job, unchanged.
   */
  disposition: 'inserted' | 'existing' | 'debounced' | 'throttled';
}

/** One row for `insertJobsTx`; callers have validated it already. */
export interface InsertJobRow {
  id: string;
  jobType: string;
  organizationId: string | null;
  payload: JsonValue;
  priority: number;
  maxAttempts: number;
  timeoutSeconds: number;
  /** Absolute schedule; null (and no delayMs) means now. */
  nextRunAt: Date | null;
  /** Schedule relative to the database clock; wins over nextRunAt when set. */
  delayMs?: number | null;
  idempotencyKey: string | null;
  /** The canonical request; non-null exactly when idempotencyKey is. */
  enqueueRequest: JsonValue | null;
  /**
   * Payload of the ENQUEUED event, stored when it says more than the job row (a schedule, an intent, a replay,
   * an append's lineage). null writes no event: the job_trail view derives ENQUEUED from the job row (a workflow
   * step's job gets its run, step and key from the step), so a plain enqueue writes one row per job.
   */
  eventPayload: JsonValue | null;
  /** The workflow step this job executes (set once, here); absent for a direct job. */
  workflowStepId?: string | null;
  /** Execution resource key (at most one LEASED job per key); absent or null for none. */
  resourceKey?: string | null;
  /** Concurrency key and its limit (at most `limit` LEASED jobs of the key); absent or null for none. */
  concurrency?: { key: string; limit: number } | null;
  /** Rate key and its setting (each start takes one of the key's tokens); absent or null for none. */
  rateLimit?: RateSetting | null;
  /** Fairness key and weight (claims take turns between a type's keys); absent or null for none. */
  fairness?: { key: string; weight: number } | null;
  /** This job's own retry backoff (failJob uses it over the definition's); absent or null for none. */
  backoff?: BackoffPolicy | null;
  /** The job's stage label; absent or null for none. */
  stage?: string | null;
}

export interface InsertJobsOptions {
  notify?: boolean;
  /**
   * The catalog check, in the same statement (src/queue/catalog.ts): 'disabled' refuses the batch when a
   * type's definition is disabled, 'strict' also when a type has none; 'off' (default) does not look.
   * A refused batch inserts nothing and throws `job.definition_not_found_or_disabled`.
   */
  definitionGate?: 'off' | 'disabled' | 'strict';
  /**
   * The jobs' creation time (and next run time when a row gives none), as timestamptz text read from the
   * database in this transaction; default now(). A workflow append passes the clock it read after its locks,
   * so a job released after a lock wait is not created before the prerequisites it waited for finished.
   */
  at?: string;
  /**
   * Leave the concurrency and rate keys' rows to the caller (writeFlowLimitsTx), who writes them once
   * the batch can no longer be refused: an enqueue whose idempotency check may still refuse it in a joined
   * transaction must leave nothing behind.
   */
  deferFlowLimits?: boolean;
}

/**
 * Inserts jobs and their ENQUEUED events in one statement, in the caller's
 * transaction, and announces runnable job types. Rows whose idempotency key
 * already exists are skipped; returns the ids actually inserted (each is
 * PENDING with run number 1).
 */
export async function insertJobsTx(tx: Tx, rows: readonly InsertJobRow[], options: InsertJobsOptions = {}): Promise<string[]> {
  const notify = options.notify ?? true;
  const gate = options.definitionGate ?? 'off';
  if (rows.length === 0) return [];
  // Ids only for the ENQUEUED events stored (see eventPayload); a plain enqueue writes none.
  const eventIds = rows.map((r) => (r.eventPayload === null ? null : newId()));
  // The caller's trace, continued by the worker's span (src/telemetry/); a step's job carries its run's instead.
  const traceContext = jsonParam(await captureTraceContext());
  // One jsonb parameter for the whole batch, not an array per column: the driver and Prisma then serialize one
  // string instead of 18 arrays element by element (for a bulk enqueue that was most of the client's CPU per
  // job), and PostgreSQL parses it in C. JSON null reads as SQL NULL in jsonb_to_recordset, so the payload
  // (which may be JSON null) travels wrapped ({"v": payload}); every other field that is null is left out
  // (batchEntry).
  const batch = JSON.stringify(rows.map((r, ord) => batchEntry(r, eventIds[ord] ?? null, ord)));
  const inserted = await tx.$queryRaw<InsertedRow[]>(
    ...asTemplate(
      insertJobsStatement(
        batch,
        gate,
        traceContext,
        options.at ?? null,
        notify,
        options.deferFlowLimits !== true && rows.some((r) => r.concurrency != null),
        options.deferFlowLimits !== true && rows.some((r) => r.rateLimit != null),
      ),
    ),
  );
  const refused = inserted.flatMap((row) => (row.refused === null ? [] : [row.refused]));
  if (refused.length > 0) {
    throw new ConflictError('job.definition_not_found_or_disabled', 'The job type has no enabled definition.', {
      internalMessage: `enqueue jobs: refused by the definitions catalog (${gate}): ${refused.join(', ')}`,
      details: { jobTypes: refused.sort() },
    });
  }
  const keyedInserted = new Set(inserted.flatMap((row) => (row.id === null ? [] : [row.id])));
  return rows.flatMap((r) => (r.idempotencyKey === null || keyedInserted.has(r.id) ? [r.id] : []));
}

/**
 * One job of the batch parameter. A key left out reads as SQL NULL in jsonb_to_recordset, as a JSON null
 * would, so only the fields a row sets travel: a plain job is 7 keys, not 19. The batch string passes
 * through Prisma's raw-query path twice more (its parameters are re-serialized as JSON and parsed back)
 * and is parsed again by PostgreSQL, so its size is paid four times (bench/README.md, "Bulk enqueue's
 * client time").
 */
function batchEntry(r: InsertJobRow, eventId: string | null, ord: number): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    id: r.id,
    job_type: r.jobType,
    payload: { v: r.payload },
    priority: r.priority,
    max_attempts: r.maxAttempts,
    timeout_seconds: r.timeoutSeconds,
    ord,
  };
  for (const [key, read] of OPTIONAL_FIELDS) {
    const value = read(r);
    if (value !== null && value !== undefined) entry[key] = value;
  }
  if (eventId !== null) entry.event_id = eventId;
  return entry;
}

/** The batch fields a row may leave null, with where each comes from (one table, not a list built per row). */
const OPTIONAL_FIELDS: readonly (readonly [string, (r: InsertJobRow) => unknown])[] = [
  ['organization_id', (r) => r.organizationId],
  ['next_run_at', (r) => r.nextRunAt],
  ['delay_ms', (r) => r.delayMs],
  ['idempotency_key', (r) => r.idempotencyKey],
  ['enqueue_request', (r) => r.enqueueRequest],
  ['event_payload', (r) => r.eventPayload],
  ['workflow_step_id', (r) => r.workflowStepId],
  ['resource_key', (r) => r.resourceKey],
  ['concurrency_key', (r) => r.concurrency?.key],
  ['concurrency_limit', (r) => r.concurrency?.limit],
  ['rate_key', (r) => r.rateLimit?.key],
  ['rate_limit', (r) => r.rateLimit?.limit],
  ['rate_period_ms', (r) => r.rateLimit?.periodMs],
  ['rate_burst', (r) => r.rateLimit?.burst],
  ['fair_key', (r) => r.fairness?.key],
  ['fair_weight', (r) => r.fairness?.weight],
  ['backoff_base_ms', (r) => r.backoff?.baseDelayMs],
  ['backoff_max_ms', (r) => r.backoff?.maxDelayMs],
  ['stage', (r) => r.stage],
];

/**
 * The request an idempotency key is bound to (stored as `enqueue_request`, compared as jsonb): one shape for
 * every writer of keyed jobs (enqueue, schedules). `resource` and `backoff` only when set, so requests stored
 * before they existed still compare equal.
 */
export function canonicalJobRequest(
  r: Pick<InsertJobRow, 'jobType' | 'organizationId' | 'payload' | 'priority' | 'maxAttempts' | 'timeoutSeconds'> & {
    resourceKey: string | null;
    backoff: { baseDelayMs: number; maxDelayMs: number } | null;
    stage?: string | null;
    concurrency?: { key: string; limit: number } | null;
    rateLimit?: RateSetting | null;
    fairness?: { key: string; weight: number } | null;
  },
): JsonValue {
  return {
    jobType: r.jobType,
    organizationId: r.organizationId,
    payload: r.payload,
    priority: r.priority,
    maxAttempts: r.maxAttempts,
    timeoutSeconds: r.timeoutSeconds,
    ...(r.resourceKey === null ? {} : { resource: r.resourceKey }),
    ...(r.backoff === null ? {} : { backoff: { baseDelayMs: r.backoff.baseDelayMs, maxDelayMs: r.backoff.maxDelayMs } }),
    ...(r.stage === undefined || r.stage === null ? {} : { stage: r.stage }),
    ...(r.concurrency === undefined || r.concurrency === null ? {} : { concurrency: { key: r.concurrency.key, limit: r.concurrency.limit } }),
    ...(r.rateLimit === undefined || r.rateLimit === null
      ? {}
      : { rateLimit: { key: r.rateLimit.key, limit: r.rateLimit.limit, periodMs: r.rateLimit.periodMs, burst: r.rateLimit.burst } }),
    ...(r.fairness === undefined || r.fairness === null ? {} : { fairness: { key: r.fairness.key, weight: r.fairness.weight } }),
  };
}

export function toInsertRow(input: ParsedEnqueueJobInput): InsertJobRow {
  const organizationId = input.organizationId ?? null;
  const priority = input.priority ?? DEFAULT_PRIORITY;
  const maxAttempts = input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const timeoutSeconds = input.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  const key = input.idempotencyKey ?? null;
  const resourceKey = input.resource ?? null;
  const backoff = input.backoff === undefined ? null : resolveBackoff(input.backoff);
  const concurrency = input.concurrency ?? null;
  const rateLimit = input.rateLimit ?? null;
  const fairness = input.fairness ?? null;
  const settings = { jobType: input.jobType, organizationId, payload: input.payload, priority, maxAttempts, timeoutSeconds, stage: input.stage ?? null };
  return {
    id: newId(),
    ...settings,
    nextRunAt: input.runAt ?? null,
    delayMs: input.delayMs ?? null,
    idempotencyKey: key,
    enqueueRequest: key === null ? null : canonicalJobRequest({ ...settings, resourceKey, backoff, concurrency, rateLimit, fairness }),
    eventPayload: null,
    resourceKey,
    concurrency,
    rateLimit,
    fairness,
    backoff,
  };
}

/** The rows of `rows`' concurrency and rate keys (an enqueue that deferred them, see InsertJobsOptions). */
export async function writeFlowLimitsTx(tx: Tx, rows: readonly InsertJobRow[]): Promise<void> {
  const limits = [...new Map(rows.flatMap((r) => (r.concurrency ? [[r.concurrency.key, r.concurrency] as const] : []))).values()];
  if (limits.length > 0) await tx.$queryRaw(...asTemplate(writeConcurrencyLimitsStatement(limits)));
  const rates = [...new Map(rows.flatMap((r) => (r.rateLimit ? [[r.rateLimit.key, r.rateLimit] as const] : []))).values()];
  if (rates.length > 0) await tx.$queryRaw(...asTemplate(writeRateLimitsStatement(rates)));
}
