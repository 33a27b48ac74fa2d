/**
 * Enqueue: one INSERT statement for a whole batch, its ENQUEUED events and the
 * wake-up notification in the same statement. Without idempotency keys that
 * statement is all there is: on a root client it is sent as one autocommit
 * statement (`withStatement`), no transaction of its own.
 *
 * Idempotency: with a key, the canonical request (job type, organization,
 * payload, priority, max attempts, timeout, resource and backoff when set; the schedule is not part of it) is
 * stored in `enqueue_request`. The insert skips rows whose (job type,
 * organization, key) already exists (`ON CONFLICT ... DO NOTHING`, which waits
 * for a concurrent inserter of the same key to commit or roll back). A second
 * statement then reads the rows that were skipped: in READ COMMITTED it sees
 * the concurrently committed winner. Equal canonical request (compared as
 * jsonb in SQL) -> 'existing'; different -> `job.idempotency_conflict` and
 * nothing of the batch is kept: an owned transaction rolls back, and in a
 * joined one the batch's own uncommitted rows are deleted before the error
 * propagates (the caller might catch it and commit).
 *
 * Keyed enqueue needs READ COMMITTED: under REPEATABLE READ or SERIALIZABLE
 * the read of a skipped key cannot see a concurrent winner that committed
 * after the transaction's snapshot, so neither 'existing' nor a conflict can
 * be reported truthfully. A joined transaction at such a level is refused
 * (`job.enqueue_idempotency_unsupported_isolation`) before anything is
 * written; the check is a read, so the caller's transaction stays usable.
 *
 * The definitions catalog (src/queue/catalog.ts) is joined in the same
 * INSERT statement: a type whose catalog row is disabled is refused
 * (`job.definition_not_found_or_disabled`, nothing of the batch written), and
 * with `{ requireDefinition: true }` so is a type without a row. Without it a
 * missing row is accepted, so a host can enqueue before any worker has synced
 * its definitions. The catalog is read, not locked.
 *
 * Notification: `pg_notify` runs inside the transaction (or the autocommit
 * statement), so it is delivered at commit and never for a rolled-back enqueue. Only job types with a job that is
 * runnable now are announced, once per distinct type per statement however many jobs it inserts (payload:
 * the job type); delayed jobs are found by polling. `{ notify: false }` sends none (the same statement, a
 * boolean parameter): workers then find the jobs by polling.
 */
import { captureTraceContext } from '../telemetry/trace-context.js';
import type { Db, Tx } from '../client/types.js';
import { ensureReadCommitted, withStatement, withTransaction } from '../client/transaction.js';
import { JOB_AVAILABLE_CHANNEL } from '../model/constants.js';
import { newId } from '../db/ids.js';
import { ConflictError, InternalError, isRunledgerError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import type { JsonValue } from '../validation/primitives.js';
import { checkDefinitionPayload } from '../job/payload.js';
import { isJobDefinition, type AnyJobDefinition, type JobPayload } from '../job/define-job.js';
import type { BackoffPolicy } from '../job/defaults.js';
import { resolveBackoff } from '../job/retry-policy.js';
import type { JobStatus } from '../model/job-rows.js';
import { jsonParam } from '../model/job-rows.js';
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_PRIORITY,
  DEFAULT_TIMEOUT_SECONDS,
  JOB_INVALID_INPUT,
  enqueueJobInputSchema,
  enqueueJobsInputSchema,
  enqueueOptionsSchema,
  type EnqueueJobInput,
  type EnqueueJobSettings,
  type EnqueueOptions,
  type ParsedEnqueueJobInput,
} from './inputs.js';

export interface EnqueueJobResult {
  jobId: string;
  status: JobStatus;
  runNumber: number;
  /** 'existing': an earlier enqueue with the same key and the same request made this job. */
  disposition: 'inserted' | 'existing';
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
  // (which may be JSON null) travels wrapped ({"v": payload}).
  const batch = JSON.stringify(
    rows.map((r, ord) => ({
      id: r.id, job_type: r.jobType, organization_id: r.organizationId, payload: { v: r.payload }, priority: r.priority,
      max_attempts: r.maxAttempts, timeout_seconds: r.timeoutSeconds, next_run_at: r.nextRunAt, delay_ms: r.delayMs ?? null,
      idempotency_key: r.idempotencyKey, enqueue_request: r.enqueueRequest ?? null, event_payload: r.eventPayload ?? null,
      event_id: eventIds[ord], workflow_step_id: r.workflowStepId ?? null, resource_key: r.resourceKey ?? null,
      backoff_base_ms: r.backoff?.baseDelayMs ?? null, backoff_max_ms: r.backoff?.maxDelayMs ?? null, stage: r.stage ?? null, ord,
    })),
  );
  const inserted = await tx.$queryRaw<{ id: string | null; refused: string | null }[]>`
    WITH input AS (
      SELECT i.id, i.job_type, i.organization_id, i.payload -> 'v' AS payload, i.priority, i.max_attempts, i.timeout_seconds,
             i.next_run_at, i.delay_ms, i.idempotency_key, i.enqueue_request, i.event_payload, i.event_id, i.workflow_step_id,
             i.resource_key, i.backoff_base_ms, i.backoff_max_ms, i.stage, i.ord
        FROM jsonb_to_recordset(${batch}::jsonb)
             AS i(id uuid, job_type text, organization_id text, payload jsonb, priority int, max_attempts int, timeout_seconds int,
                  next_run_at timestamptz, delay_ms int, idempotency_key text, enqueue_request jsonb, event_payload jsonb,
                  event_id uuid, workflow_step_id uuid, resource_key text, backoff_base_ms int, backoff_max_ms int, stage text,
                  ord int)
    ),
    refused AS (
      SELECT DISTINCT i.job_type
        FROM input i
        LEFT JOIN runledger.job_definitions d ON d.job_type = i.job_type
       WHERE ${gate}::text <> 'off'
         AND (NOT d.enabled OR (d.job_type IS NULL AND ${gate}::text = 'strict'))
    ),
    inserted AS (
      INSERT INTO runledger.job_queue
             (id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds, next_run_at,
              idempotency_key, enqueue_request, workflow_step_id, resource_key, backoff_base_ms, backoff_max_ms, stage,
              trace_context, created_at, updated_at)
      SELECT id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds,
             CASE WHEN delay_ms IS NOT NULL THEN c.at + delay_ms * interval '1 millisecond'
                  ELSE COALESCE(next_run_at, c.at) END,
             idempotency_key, enqueue_request, workflow_step_id, resource_key, backoff_base_ms, backoff_max_ms, stage,
             CASE WHEN workflow_step_id IS NULL THEN ${traceContext}::jsonb END, c.at, c.at
        FROM input, (SELECT COALESCE(${options.at ?? null}::timestamptz, now()) AS at) c
       WHERE NOT EXISTS (SELECT 1 FROM refused)
       ORDER BY ord
      ON CONFLICT (job_type, COALESCE(organization_id, ''), idempotency_key)
         WHERE idempotency_key IS NOT NULL
      DO NOTHING
      RETURNING id, job_type, run_number, attempt, next_run_at, created_at, idempotency_key
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload, created_at)
      SELECT i.event_id, ins.id, 'ENQUEUED'::runledger.job_event_type, ins.run_number, ins.attempt, i.event_payload, ins.created_at
        FROM inserted ins
        JOIN input i ON i.id = ins.id
       WHERE i.event_payload IS NOT NULL
    ),
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type))::int AS n
        FROM (SELECT DISTINCT job_type FROM inserted WHERE ${notify}::boolean AND next_run_at <= now()) t
    )
    -- Only keyed rows can be skipped (ON CONFLICT names the idempotency index; any other conflict is an error),
    -- so only their ids come back: a plain bulk enqueue reads back one row, not one per job.
    SELECT ins.id, NULL::text AS refused FROM notified LEFT JOIN inserted ins ON ins.idempotency_key IS NOT NULL
    UNION ALL
    SELECT NULL::uuid, job_type FROM refused`;
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
 * Enqueues one job. With `idempotencyKey`, the same request again returns the
 * existing job; a different request under the key is `job.idempotency_conflict`.
 * `options.notify` (default true): false sends no wake-up NOTIFY (workers poll).
 *
 * Two forms. Through a definition (`defineJob`), the compiler checks the
 * payload against the definition's schema and the definition's
 * `retry.maxAttempts` / `timeoutSeconds` apply unless the settings say
 * otherwise (a `backoff` in the settings is completed from the definition's). By job-type name, for hosts that enqueue without importing the
 * handlers: the payload is `unknown` to the compiler (checked as storable
 * JSON at run time, and by the schema when a worker claims it).
 *
 * @example
 * await enqueueJob(prisma, capture, { invoiceId }, { idempotencyKey: `capture:${invoiceId}` });
 * await enqueueJob(prisma, { jobType: 'email.send', payload: { to: 'a@b.c' } });
 */
// The definition form last: a wrong payload's error then names the payload, not the by-name form.
export function enqueueJob(db: Db, input: EnqueueJobInput, options?: EnqueueOptions): Promise<EnqueueJobResult>;
export function enqueueJob<D extends AnyJobDefinition>(
  db: Db,
  definition: D,
  payload: JobPayload<D>,
  settings?: EnqueueJobSettings & EnqueueOptions,
): Promise<EnqueueJobResult>;
export async function enqueueJob(db: Db, first: AnyJobDefinition | EnqueueJobInput, ...rest: unknown[]): Promise<EnqueueJobResult> {
  let input: unknown;
  let options: unknown;
  if (isJobDefinition(first)) {
    const { notify, requireDefinition, ...settings } = (rest[1] ?? {}) as EnqueueJobSettings & EnqueueOptions;
    input = definedJobInput(first, { ...settings, payload: rest[0] });
    options = { ...(notify === undefined ? {} : { notify }), ...(requireDefinition === undefined ? {} : { requireDefinition }) };
  } else {
    input = first;
    options = rest[0] ?? {};
  }
  const parsed = parseInput(enqueueJobInputSchema, input, JOB_INVALID_INPUT);
  const { notify = true, requireDefinition = false } = parseInput(enqueueOptionsSchema, options, JOB_INVALID_INPUT, 'options');
  if (isJobDefinition(first)) await checkDefinitionPayload(first, rest[0], [], JOB_INVALID_INPUT);
  const [result] = await enqueueParsed(db, [parsed], { notify, definitionGate: requireDefinition ? 'strict' : 'disabled' });
  return result!;
}

/**
 * Enqueues a batch in one statement (plus one read when keys were already
 * taken). Results are in input order. All or nothing: one idempotency
 * conflict aborts the whole batch. One NOTIFY per distinct job type made
 * runnable now, none with `{ notify: false }`.
 *
 * Through a definition, each item is `{ payload, ...settings }` and every
 * payload is checked by the compiler; by name, each item names its job type.
 *
 * @example
 * await enqueueJobs(prisma, capture, invoices.map((i) => ({ payload: { invoiceId: i.id }, idempotencyKey: i.id })));
 */
export function enqueueJobs(db: Db, inputs: readonly EnqueueJobInput[], options?: EnqueueOptions): Promise<EnqueueJobResult[]>;
export function enqueueJobs<D extends AnyJobDefinition>(
  db: Db,
  definition: D,
  items: readonly (EnqueueJobSettings & { payload: JobPayload<D> })[],
  options?: EnqueueOptions,
): Promise<EnqueueJobResult[]>;
export async function enqueueJobs(db: Db, first: AnyJobDefinition | readonly EnqueueJobInput[], ...rest: unknown[]): Promise<EnqueueJobResult[]> {
  let inputs: unknown = first;
  let options: unknown = rest[0] ?? {};
  if (isJobDefinition(first)) {
    const items = rest[0];
    inputs = Array.isArray(items) ? items.map((item: unknown) => definedJobInput(first, item)) : items;
    options = rest[1] ?? {};
  }
  const parsed = parseInput(enqueueJobsInputSchema, inputs, JOB_INVALID_INPUT, 'inputs');
  const { notify = true, requireDefinition = false } = parseInput(enqueueOptionsSchema, options, JOB_INVALID_INPUT, 'options');
  if (isJobDefinition(first)) {
    const items = rest[0] as readonly { payload: unknown }[];
    for (const [index, item] of items.entries()) await checkDefinitionPayload(first, item.payload, [index], JOB_INVALID_INPUT);
  }
  return enqueueParsed(db, parsed, { notify, definitionGate: requireDefinition ? 'strict' : 'disabled' });
}

/** The by-name input of one job of `definition`: its type, and its settings under the enqueue's own. */
/** An enqueue's input from a typed definition and the call's own fields: the definition's settings unless the call gives its own. */
export function definedJobInput(definition: AnyJobDefinition, item: unknown): unknown {
  // Not an object: left for the schema to refuse, naming the field.
  if (typeof item !== 'object' || item === null) return item;
  const defaults = {
    ...(definition.maxAttempts === undefined ? {} : { maxAttempts: definition.maxAttempts }),
    ...(definition.timeoutSeconds === undefined ? {} : { timeoutSeconds: definition.timeoutSeconds }),
    ...(definition.priority === undefined ? {} : { priority: definition.priority }),
  };
  const own = stripUndefined(item as Record<string, unknown>);
  // An enqueue's backoff is completed field by field from the definition's (a field it leaves out is the
  // definition's, not the default). No backoff of its own: nothing is stored and the worker's definition applies.
  const backoff = own.backoff;
  if (typeof backoff === 'object' && backoff !== null && !Array.isArray(backoff)) {
    own.backoff = { ...definition.backoff, ...stripUndefined(backoff as Record<string, unknown>) };
  }
  return { ...defaults, ...own, jobType: definition.jobType };
}

function stripUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([key, value]) => value !== undefined || key === 'payload'));
}

async function enqueueParsed(db: Db, inputs: readonly ParsedEnqueueJobInput[], options: InsertJobsOptions): Promise<EnqueueJobResult[]> {
  if (inputs.length === 0) return [];
  const rows = inputs.map(toInsertRow);
  if (rows.every((row) => row.idempotencyKey === null)) {
    // No key: nothing can be skipped, so the batch is the one INSERT statement, autocommitted on a root
    // client. An INSERT of new rows behaves the same at every isolation level, so no READ COMMITTED check.
    const inserted = await withStatement(db, 'enqueue jobs', (client) => insertJobsTx(client, rows, options), { readCommitted: false });
    if (inserted.length !== rows.length) {
      throw new InternalError('job.internal_state', 'The enqueue did not insert every job.', {
        internalMessage: `enqueue jobs: inserted ${inserted.length} of ${rows.length} jobs without idempotency keys`,
      });
    }
    return rows.map((row) => ({ jobId: row.id, status: 'PENDING' as const, runNumber: 1, disposition: 'inserted' as const }));
  }
  return withTransaction(db, 'enqueue jobs', async ({ tx, owned }) => {
    await ensureReadCommitted({ tx, owned }, 'job.enqueue_idempotency_unsupported_isolation', 'Enqueue with an idempotency key');
    const inserted = new Set(await insertJobsTx(tx, rows, options));
    const skipped = rows.map((row, index) => ({ row, index })).filter(({ row }) => !inserted.has(row.id));
    let existing = new Map<number, EnqueueJobResult>();
    if (skipped.length > 0) {
      try {
        existing = await resolveExisting(tx, skipped);
      } catch (error) {
        // An owned transaction rolls back. A joined one is the caller's: it may catch the error and commit, so
        // the rows this batch inserted (visible to no one else yet) are removed to keep "nothing written" true.
        if (!owned && inserted.size > 0 && isRunledgerError(error, 'job.idempotency_conflict')) {
          await deleteUncommittedJobs(tx, [...inserted]);
        }
        throw error;
      }
    }
    return rows.map((row, index) =>
      inserted.has(row.id)
        ? { jobId: row.id, status: 'PENDING' as const, runNumber: 1, disposition: 'inserted' as const }
        : existing.get(index)!,
    );
  });
}

/**
 * The request an idempotency key is bound to (stored as `enqueue_request`, compared as jsonb): one shape for
 * every writer of keyed jobs (enqueue, schedules). `resource` and `backoff` only when set, so requests stored
 * before they existed still compare equal.
 */
export function canonicalJobRequest(r: {
  jobType: string;
  organizationId: string | null;
  payload: JsonValue;
  priority: number;
  maxAttempts: number;
  timeoutSeconds: number;
  resourceKey: string | null;
  backoff: { baseDelayMs: number; maxDelayMs: number } | null;
  stage?: string | null;
}): JsonValue {
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
  return {
    id: newId(),
    jobType: input.jobType,
    organizationId,
    payload: input.payload,
    priority,
    maxAttempts,
    timeoutSeconds,
    nextRunAt: input.runAt ?? null,
    delayMs: input.delayMs ?? null,
    idempotencyKey: key,
    enqueueRequest:
      key === null
        ? null
        : canonicalJobRequest({ jobType: input.jobType, organizationId, payload: input.payload, priority, maxAttempts, timeoutSeconds, resourceKey, backoff, stage: input.stage ?? null }),
    eventPayload: null,
    resourceKey,
    backoff,
    stage: input.stage ?? null,
  };
}

interface ExistingRow {
  ord: number;
  id: string | null;
  status: JobStatus | null;
  run_number: number | null;
  same_request: boolean | null;
}

/** Reads the rows that already held the keys of skipped inputs, and compares the requests in SQL. */
async function resolveExisting(
  tx: Tx,
  skipped: readonly { row: InsertJobRow; index: number }[],
): Promise<Map<number, EnqueueJobResult>> {
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
async function deleteUncommittedJobs(tx: Tx, jobIds: string[]): Promise<void> {
  await tx.$executeRaw`DELETE FROM runledger.job_queue WHERE id = ANY(${jobIds}::uuid[])`;
}
