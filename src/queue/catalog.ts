/**
 * The job definitions catalog (`job_definitions`): one row per job type, so a
 * process that does not import the handlers (an API server, the CLI, an
 * operator) knows the types the workers run, their defaults, and whether an
 * operator has switched a type off.
 *
 * Writers: `syncJobDefinitions` (a worker at start; the CLI) upserts the
 * settings of the given definitions in one statement, in job-type order, so
 * concurrent syncs of overlapping sets neither fail nor deadlock (each waits
 * for the other's row, then updates or leaves it). A sync never changes
 * `enabled`: a new type starts enabled, and an operator's
 * `setJobDefinitionEnabled` survives every restart. A row whose settings
 * did not change is left alone (its `updated_at` too).
 *
 * Readers: direct enqueue joins the catalog in its INSERT (src/queue/enqueue.ts:
 * a disabled type is refused, and with `requireDefinition` so is a missing
 * one); workflow enqueue and appends read the defaults of their job steps'
 * types inside a statement they send anyway (src/workflow/catalog-defaults.ts);
 * the intent promoter joins it to find enabled
 * types (src/queue/intent-row.ts). No reader locks catalog rows: a `disable`
 * refuses enqueues that start after it commits; one already running may
 * still insert its jobs.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { NotFoundError, ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { nonBlank } from '../validation/primitives.js';
import type { JsonValue } from '../model/json.js';
import { isJobDefinition, storedDefinitionSchema } from '../job/define-job.js';
import type { AnyJobDefinition } from '../job/contract.js';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_TIMEOUT_SECONDS, type BackoffPolicy } from '../job/defaults.js';
import { jsonParam } from '../model/job-rows.js';
import { JOB_INVALID_INPUT, pageFields, type Page } from './inputs.js';

/** One catalog row. */
export interface JobDefinitionRecord {
  jobType: string;
  enabled: boolean;
  defaultPriority: number;
  defaultMaxAttempts: number;
  defaultTimeoutSeconds: number;
  backoff: BackoffPolicy;
  /** The payload's JSON Schema when the definition's schema can produce one (zod 4); else null. */
  payloadSchema: JsonValue | null;
  /** sha256 (hex) of `payloadSchema`; null with it. */
  payloadSchemaHash: string | null;
  createdAt: Date;
  updatedAt: Date;
}

interface JobDefinitionRow {
  job_type: string;
  enabled: boolean;
  default_priority: number;
  default_max_attempts: number;
  default_timeout_seconds: number;
  backoff_base_ms: number;
  backoff_max_ms: number;
  payload_schema: JsonValue | null;
  payload_schema_hash: string | null;
  created_at: Date;
  updated_at: Date;
}

function toRecord(row: JobDefinitionRow): JobDefinitionRecord {
  return {
    jobType: row.job_type,
    enabled: row.enabled,
    defaultPriority: row.default_priority,
    defaultMaxAttempts: row.default_max_attempts,
    defaultTimeoutSeconds: row.default_timeout_seconds,
    backoff: { baseDelayMs: row.backoff_base_ms, maxDelayMs: row.backoff_max_ms },
    payloadSchema: row.payload_schema,
    payloadSchemaHash: row.payload_schema_hash,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface SyncJobDefinitionsResult {
  /** Types that had no row. */
  inserted: string[];
  /** Types whose settings changed. */
  updated: string[];
  /** Types whose row already said the same. */
  unchanged: string[];
}

/** The JSON Schema of a zod 4 schema, or null for any other Standard Schema (no common way to ask). */
function payloadJsonSchema(definition: AnyJobDefinition): JsonValue | null {
  const schema = definition.schema as unknown;
  if (typeof schema !== 'object' || schema === null || !('_zod' in schema)) return null;
  try {
    return z.toJSONSchema(schema as z.ZodType, { unrepresentable: 'any', io: 'input' }) as JsonValue;
  } catch {
    // A schema zod cannot describe (a custom check it refuses to render): the row simply has none.
    return null;
  }
}

/**
 * Writes the settings of `definitions` to the catalog: inserts missing types
 * (enabled), updates changed ones, leaves `enabled` as the operator set it.
 * Idempotent and safe to run from many workers at once (one statement). A
 * type the catalog holds but `definitions` omits is left as it is (another
 * worker may still run it).
 *
 * @example
 * await syncJobDefinitions(prisma, [capture, sendEmail]);
 */
export async function syncJobDefinitions(db: Db, definitions: readonly AnyJobDefinition[]): Promise<SyncJobDefinitionsResult> {
  if (!Array.isArray(definitions)) throw new ValidationError(JOB_INVALID_INPUT, 'definitions', 'Invalid definitions: expected an array of job definitions');
  const byType = new Map<string, AnyJobDefinition>();
  // Array.from: forEach would skip the holes of a sparse array instead of refusing them.
  Array.from(definitions).forEach((definition, index) => {
    if (!isJobDefinition(definition))
      throw new ValidationError(JOB_INVALID_INPUT, `definitions.${index}`, `Invalid definitions.${index}: expected a defineJob(...) definition`);
    if (byType.has(definition.jobType)) {
      throw new ValidationError(JOB_INVALID_INPUT, `definitions.${index}`, `Invalid definitions.${index}: job type ${definition.jobType} is defined twice`);
    }
    byType.set(definition.jobType, definition);
  });
  if (byType.size === 0) return { inserted: [], updated: [], unchanged: [] };
  parseInput(z.object({ definitions: z.array(storedDefinitionSchema) }), { definitions: Array.from(definitions) }, JOB_INVALID_INPUT);
  // Code-point order, the lock order of every sync (the statement inserts in input order).
  const rows = [...byType.values()].sort((a, b) => (a.jobType < b.jobType ? -1 : a.jobType > b.jobType ? 1 : 0));
  const schemas = rows.map(payloadJsonSchema);
  const written = await withStatement(
    db,
    'sync job definitions',
    async (tx) =>
      tx.$queryRaw<{ job_type: string; inserted: boolean }[]>`
      INSERT INTO runledger.job_definitions AS d
             (job_type, default_priority, default_max_attempts, default_timeout_seconds, backoff_base_ms, backoff_max_ms,
              payload_schema, payload_schema_hash)
      SELECT i.job_type, i.priority, i.max_attempts, i.timeout_seconds, i.base_ms, i.max_ms, i.payload_schema, i.payload_schema_hash
        FROM unnest(${rows.map((d) => d.jobType)}::text[], ${rows.map((d) => d.priority ?? DEFAULT_PRIORITY)}::int[],
                    ${rows.map((d) => d.maxAttempts ?? DEFAULT_MAX_ATTEMPTS)}::int[],
                    ${rows.map((d) => d.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS)}::int[],
                    ${rows.map((d) => d.backoff.baseDelayMs)}::int[], ${rows.map((d) => d.backoff.maxDelayMs)}::int[],
                    ${schemas.map((s) => jsonParam(s))}::jsonb[],
                    ${schemas.map((s) => (s === null ? null : createHash('sha256').update(JSON.stringify(s)).digest('hex')))}::text[])
             WITH ORDINALITY AS i(job_type, priority, max_attempts, timeout_seconds, base_ms, max_ms, payload_schema, payload_schema_hash, ord)
       ORDER BY i.ord
      ON CONFLICT (job_type) DO UPDATE
         SET default_priority = EXCLUDED.default_priority,
             default_max_attempts = EXCLUDED.default_max_attempts,
             default_timeout_seconds = EXCLUDED.default_timeout_seconds,
             backoff_base_ms = EXCLUDED.backoff_base_ms,
             backoff_max_ms = EXCLUDED.backoff_max_ms,
             payload_schema = EXCLUDED.payload_schema,
             payload_schema_hash = EXCLUDED.payload_schema_hash,
             updated_at = now()
       WHERE (d.default_priority, d.default_max_attempts, d.default_timeout_seconds, d.backoff_base_ms, d.backoff_max_ms, d.payload_schema_hash)
             IS DISTINCT FROM
             (EXCLUDED.default_priority, EXCLUDED.default_max_attempts, EXCLUDED.default_timeout_seconds, EXCLUDED.backoff_base_ms,
              EXCLUDED.backoff_max_ms, EXCLUDED.payload_schema_hash)
      RETURNING d.job_type, (d.xmax = 0) AS inserted`,
  );
  const changed = new Map(written.map((row) => [row.job_type, row.inserted]));
  const result: SyncJobDefinitionsResult = { inserted: [], updated: [], unchanged: [] };
  for (const { jobType } of rows) {
    const inserted = changed.get(jobType);
    (inserted === undefined ? result.unchanged : inserted ? result.inserted : result.updated).push(jobType);
  }
  return result;
}

// Any job type, which never holds NUL (PostgreSQL text cannot).
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the one character a job type cannot hold (PostgreSQL text).
const JOB_TYPE_CURSOR = /^[^\u0000]{1,200}$/;
export const listJobDefinitionsInputSchema = z.strictObject({ ...pageFields(JOB_TYPE_CURSOR, 'listJobDefinitions') });
export type ListJobDefinitionsInput = z.input<typeof listJobDefinitionsInputSchema>;

/**
 * The catalog, in job-type order (code points), a page at a time.
 *
 * @example
 * const { items } = await listJobDefinitions(prisma, { limit: 100 });
 */
export async function listJobDefinitions(db: Db, input?: ListJobDefinitionsInput): Promise<Page<JobDefinitionRecord>> {
  const { limit, cursor } = parseInput(listJobDefinitionsInputSchema, input ?? {}, JOB_INVALID_INPUT);
  const rows = await withStatement(
    db,
    'list job definitions',
    async (tx) => tx.$queryRaw<JobDefinitionRow[]>`
      SELECT * FROM runledger.job_definitions
       WHERE ${cursor ?? null}::text IS NULL OR job_type COLLATE "C" > ${cursor ?? null}::text COLLATE "C"
       ORDER BY job_type COLLATE "C"
       LIMIT ${limit + 1}`,
    { readCommitted: false },
  );
  const items = rows.slice(0, limit).map(toRecord);
  return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.jobType : null };
}

export const setJobDefinitionEnabledInputSchema = z.strictObject({ jobType: nonBlank(200), enabled: z.boolean() });
export type SetJobDefinitionEnabledInput = z.input<typeof setJobDefinitionEnabledInputSchema>;

/**
 * Switches a type on or off. Off: direct enqueues of the type are refused
 * (`job.definition_not_found_or_disabled`) and its enqueue intents wait; jobs
 * already queued still run. A type the catalog does not hold is
 * `job.definition_not_found` (sync it first).
 *
 * @example
 * await setJobDefinitionEnabled(prisma, { jobType: 'billing.capture', enabled: false });
 */
export async function setJobDefinitionEnabled(db: Db, input: SetJobDefinitionEnabledInput): Promise<JobDefinitionRecord> {
  const { jobType, enabled } = parseInput(setJobDefinitionEnabledInputSchema, input, JOB_INVALID_INPUT);
  const [row] = await withStatement(
    db,
    'set job definition enabled',
    async (tx) =>
      tx.$queryRaw<JobDefinitionRow[]>`
      UPDATE runledger.job_definitions
         SET enabled = ${enabled}, updated_at = CASE WHEN enabled = ${enabled} THEN updated_at ELSE now() END
       WHERE job_type = ${jobType}
      RETURNING *`,
  );
  if (!row) {
    throw new NotFoundError('job.definition_not_found', 'The job type has no definition.', {
      internalMessage: `set job definition enabled: no catalog row for job type ${jobType}`,
      details: { jobType },
    });
  }
  return toRecord(row);
}
