import { isTransactionClient, type Db, type Tx } from '../client/types.js';
import { ensureReadCommitted, withStatement, withTransaction } from '../client/transaction.js';
import { InternalError, isRunledgerError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { checkDefinitionPayload } from '../job/payload.js';
import { isJobDefinition } from '../job/define-job.js';
import type { AnyJobDefinition, JobPayload } from '../job/contract.js';
import {
  JOB_INVALID_INPUT,
  enqueueJobInputSchema,
  enqueueJobsInputSchema,
  enqueueOptionsSchema,
  type EnqueueJobInput,
  type EnqueueJobSettings,
  type EnqueueOptions,
  type ParsedEnqueueJobInput,
} from './inputs.js';

import { insertJobsTx, toInsertRow, writeFlowLimitsTx, type EnqueueJobResult, type InsertJobRow, type InsertJobsOptions } from './insert-jobs.js';
import { enqueueWindowsTx, groupWindowKeys, type EnqueueWindow, type WindowedRow } from './enqueue-windows.js';
import { deleteUncommittedJobs, resolveExisting } from './enqueue-idempotency.js';
import { parseCommonJobInput } from './common-job-input.js';

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
  const parsed = parseCommonJobInput(input) ?? parseInput(enqueueJobInputSchema, input, JOB_INVALID_INPUT);
  const { notify = true, requireDefinition = false } = commonOptions(options) ?? parseInput(enqueueOptionsSchema, options, JOB_INVALID_INPUT, 'options');
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

/** No options, or only `notify` as a boolean (the common calls), without the schema; anything else: undefined. */
function commonOptions(options: unknown): EnqueueOptions | undefined {
  if (typeof options !== 'object' || options === null || Object.getPrototypeOf(options) !== Object.prototype) return undefined;
  const keys = Object.getOwnPropertyNames(options); // non-enumerable ones too: the schema reads them
  if (keys.length === 0) return NO_OPTIONS;
  const { notify } = options as { notify?: unknown };
  return keys.length === 1 && keys[0] === 'notify' && typeof notify === 'boolean' ? { notify } : undefined;
}
const NO_OPTIONS: EnqueueOptions = Object.freeze({});

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
  // The definition's concurrency key, computed from this payload, unless the enqueue names its own.
  if (definition.concurrency !== undefined && own.concurrency === undefined) {
    const { key, limit } = definition.concurrency;
    own.concurrency = { key: typeof key === 'function' ? key((item as { payload?: unknown }).payload) : key, limit };
  }
  if (definition.rateLimit !== undefined && own.rateLimit === undefined) {
    const { key, ...limit } = definition.rateLimit;
    own.rateLimit = { key: typeof key === 'function' ? key((item as { payload?: unknown }).payload) : key, ...stripUndefined(limit) };
  }
  if (definition.fairness !== undefined && own.fairness === undefined) {
    const { key, weight } = definition.fairness;
    const job = { organizationId: typeof own.organizationId === 'string' ? own.organizationId : null };
    own.fairness = { key: typeof key === 'function' ? key((item as { payload?: unknown }).payload, job) : key, ...stripUndefined({ weight }) };
  }
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
  const windowed = windowedRows(inputs, rows);
  if (windowed.length > 0) return enqueueWithWindows(db, rows, windowed, options);
  if (rows.every((row) => row.idempotencyKey === null)) {
    // No key: nothing can be skipped, so the batch is the one INSERT statement, autocommitted on a root
    // client. An INSERT of new rows behaves the same at every isolation level, so no READ COMMITTED check.
    return withStatement(db, 'enqueue jobs', (client) => insertPlainTx(client, rows, options), { readCommitted: false });
  }
  return withTransaction(db, 'enqueue jobs', ({ tx, owned }) => insertKeyedTx(tx, owned, rows, options));
}

/** Rows without idempotency keys: one INSERT, every row inserted. */
async function insertPlainTx(tx: Tx, rows: readonly InsertJobRow[], options: InsertJobsOptions): Promise<EnqueueJobResult[]> {
  const inserted = await insertJobsTx(tx, rows, options);
  if (inserted.length !== rows.length) {
    throw new InternalError('job.internal_state', 'The enqueue did not insert every job.', {
      internalMessage: `enqueue jobs: inserted ${inserted.length} of ${rows.length} jobs without idempotency keys`,
    });
  }
  return rows.map((row) => ({ jobId: row.id, status: 'PENDING' as const, runNumber: 1, disposition: 'inserted' as const }));
}

/** Rows some of which have idempotency keys: one insert, then the holders of keys already taken (enqueue-idempotency.ts). */
async function insertKeyedTx(tx: Tx, owned: boolean, rows: readonly InsertJobRow[], options: InsertJobsOptions): Promise<EnqueueJobResult[]> {
  await ensureReadCommitted({ tx, owned }, 'job.enqueue_idempotency_unsupported_isolation', 'Enqueue with an idempotency key');
  const inserted = new Set(await insertJobsTx(tx, rows, { ...options, deferFlowLimits: true }));
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
  // Now that nothing can refuse the batch: the limits of the keys its inserted jobs name.
  await writeFlowLimitsTx(
    tx,
    rows.filter((row) => inserted.has(row.id)),
  );
  return rows.map((row, index) =>
    inserted.has(row.id) ? { jobId: row.id, status: 'PENDING' as const, runNumber: 1, disposition: 'inserted' as const } : existing.get(index)!,
  );
}

/** The requests with a debounce or throttle window, with their place in the batch. */
function windowedRows(inputs: readonly ParsedEnqueueJobInput[], rows: readonly InsertJobRow[]): WindowedRow[] {
  return inputs.flatMap((input, index) => {
    const window: EnqueueWindow | null = input.debounce
      ? { kind: 'DEBOUNCE', key: input.debounce.key, windowMs: input.debounce.windowMs, maxWaitMs: input.debounce.maxWaitMs ?? null }
      : input.throttle
        ? { kind: 'THROTTLE', key: input.throttle.key, windowMs: input.throttle.windowMs, maxWaitMs: null }
        : null;
    return window === null ? [] : [{ row: rows[index]!, index, window }];
  });
}

/**
 * A batch with window requests. One key and nothing else: its statement on its own (autocommit on a root
 * client: each pass is whole for the one key). Otherwise one transaction, all or nothing: the other rows first
 * (an idempotency conflict there throws before any window is touched), then the windows' statement.
 */
async function enqueueWithWindows(
  db: Db,
  rows: readonly InsertJobRow[],
  windowed: readonly WindowedRow[],
  options: InsertJobsOptions,
): Promise<EnqueueJobResult[]> {
  const windowIndexes = new Set(windowed.map((w) => w.index));
  const plain = rows.map((row, index) => ({ row, index })).filter(({ index }) => !windowIndexes.has(index));
  if (plain.length === 0 && groupWindowKeys(windowed).length === 1) {
    // A raced first pass (another enqueue of the key committed after its snapshot) is sent again in a transaction:
    // its passes hold the window row they lock, where autocommitted ones could race again and again.
    const results =
      (await withStatement(db, 'enqueue jobs', (client) => enqueueWindowsTx(client, windowed, options, !isTransactionClient(db)))) ??
      (await withTransaction(db, 'enqueue jobs', ({ tx }) => enqueueWindowsTx(tx, windowed, options)));
    return rows.map((_, index) => results!.get(index)!);
  }
  return withTransaction(db, 'enqueue jobs', async ({ tx, owned }) => {
    const results = new Map<number, EnqueueJobResult>();
    const plainRows = plain.map((p) => p.row);
    if (plain.length > 0) {
      const done = plainRows.every((row) => row.idempotencyKey === null)
        ? await insertPlainTx(tx, plainRows, options)
        : await insertKeyedTx(tx, owned, plainRows, options);
      for (const [position, result] of done.entries()) results.set(plain[position]!.index, result);
    }
    try {
      for (const [index, result] of (await enqueueWindowsTx(tx, windowed, options))!) results.set(index, result);
    } catch (error) {
      // The windows' refusals (catalog, isolation) write nothing; in a joined transaction the caller may catch
      // and commit, so the jobs this batch inserted above go too, as for an idempotency conflict.
      const mine = plainRows.filter((_row, position) => results.get(plain[position]!.index)?.disposition === 'inserted').map((row) => row.id);
      if (!owned && mine.length > 0 && isRunledgerError(error)) await deleteUncommittedJobs(tx, mine);
      throw error;
    }
    return rows.map((_, index) => results.get(index)!);
  });
}
