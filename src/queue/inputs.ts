/**
 * Public input schemas of the queue. Every exported queue operation parses its
 * input here before touching the database, so a bad input writes nothing and
 * the ValidationError (code `job.invalid_input`) names the offending field
 * (`priority`, `2.payload`, `lease.workerId`, ...).
 */
import { z } from 'zod';
import { scopeSchema } from '../db/scope.js';
import { backoffPolicySchema } from '../job/retry-policy.js';
import { truncateText } from '../validation/storable.js';
import {
  int32,
  jsonInput,
  jsonValue,
  leaseSeconds,
  nonBlank,
  positiveInt,
  requestKey,
  storableText,
  uuid,
  UUID_REGEX,
  organizationId,
  timestamp,
  concurrencyLimit,
  ratePeriodMs,
  rateStarts,
  fairWeight,
} from '../validation/primitives.js';

export const JOB_INVALID_INPUT = 'job.invalid_input';

/** A stage label (enqueue's `stage`, `ctx.setStage`): non-blank, at most 128 bytes of UTF-8. */
export const MAX_STAGE_BYTES = 128;
export const stageLabel = storableText
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_STAGE_BYTES, `must be at most ${MAX_STAGE_BYTES} bytes (UTF-8)`);

/** Upper bounds that keep one statement's arrays (and its locks) bounded. */
export const MAX_ENQUEUE_BATCH = 10_000;
export const MAX_CLAIM_BATCH = 1_000;
export const MAX_REAP_BATCH = 10_000;
export const MAX_LIST_LIMIT = 500;

import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_STACK_LENGTH } from '../job/defaults.js';

const jobStatus = z.enum(['PENDING', 'LEASED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED']);
const workerId = nonBlank(200);

export const concurrencySettingSchema = z.strictObject({ key: requestKey, limit: concurrencyLimit });

/**
 * A rate limit (docs/guide/flow-control.md): at most `limit` job starts per `periodMs` for `key` on average,
 * and at most `burst` (default `limit`) at once: a token bucket of `burst` tokens gaining `limit` per period.
 */
export const rateLimitSettingSchema = z
  .strictObject({ key: requestKey, limit: rateStarts, periodMs: ratePeriodMs, burst: rateStarts.optional() })
  .transform((r) => ({ key: r.key, limit: r.limit, periodMs: r.periodMs, burst: r.burst ?? r.limit }));
export type RateLimitSetting = z.output<typeof rateLimitSettingSchema>;

/**
 * A fairness key (docs/guide/flow-control.md, "Fair claiming"): claims take turns between a type's keys, `weight`
 * (default 1) jobs per round. Stored on the job: a key's weight is its next job's.
 */
export const fairnessSettingSchema = z
  .strictObject({ key: requestKey, weight: fairWeight.optional() })
  .transform((f) => ({ key: f.key, weight: f.weight ?? 1 }));
export type FairnessSetting = z.output<typeof fairnessSettingSchema>;

/** The issue of a second setting of one key that differs from the first (a key's row takes one value). */
export function sameSettingPerKey<T extends { key: string }>(
  items: readonly (T | undefined)[],
  path: (index: number) => (string | number)[],
  what: string,
  same: (a: T, b: T) => boolean,
  addIssue: (issue: { code: 'custom'; path: (string | number)[]; message: string }) => void,
): void {
  const seen = new Map<string, T>();
  items.forEach((item, index) => {
    if (item === undefined) return;
    const first = seen.get(item.key);
    if (first === undefined) seen.set(item.key, item);
    else if (!same(first, item)) addIssue({ code: 'custom', path: path(index), message: `differs from an earlier ${what} for the same key` });
  });
}

/** The longest debounce or throttle window, and a debounce's longest maximum wait: 7 days. */
export const MAX_ENQUEUE_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;
const windowMs = z
  .number()
  .int('must be an integer')
  .min(1, 'must be at least 1')
  .max(MAX_ENQUEUE_WINDOW_MS, `must be at most ${MAX_ENQUEUE_WINDOW_MS} (7 days)`);

/**
 * `debounce`: the last request of a window wins (docs/guide/flow-control.md). The first request for `key` creates a
 * job due `windowMs` later (database clock); each later one while that job is PENDING and unstarted replaces its
 * payload and settings and pushes it to now + `windowMs`, never past the window's first request + `maxWaitMs`.
 */
export const debounceSchema = z
  .strictObject({ key: requestKey, windowMs, maxWaitMs: windowMs.optional() })
  .refine((d) => d.maxWaitMs === undefined || d.maxWaitMs >= d.windowMs, { path: ['maxWaitMs'], message: 'must be at least windowMs' });
/** `throttle`: the first request of a window wins; later ones within `windowMs` of it return its job and write nothing. */
export const throttleSchema = z.strictObject({ key: requestKey, windowMs });

export const enqueueJobInputSchema = z
  .strictObject({
    jobType: nonBlank(200),
    payload: jsonInput,
    organizationId: organizationId.nullish(),
    priority: int32.optional(),
    maxAttempts: positiveInt.optional(),
    timeoutSeconds: positiveInt.optional(),
    runAt: timestamp.optional(),
    /** Measured on the database clock, as claiming is. */
    delayMs: z.number().int('must be an integer').min(0, 'must not be negative').max(2147483647).optional(),
    idempotencyKey: requestKey.optional(),
    /**
     * Execution resource: at most one job per key is LEASED at any time, across workers, job types and
     * organizations (src/queue/claim.ts). Non-blank, at most 512 bytes.
     */
    resource: requestKey.optional(),
    /**
     * Concurrency key: at most `limit` jobs naming `key` are LEASED at any time, across workers, job types and
     * organizations (src/queue/statements/concurrency-slots.ts). The limit is stored on the key's row: this
     * enqueue sets it unless an operator pinned it (`setConcurrencyLimit`).
     */
    concurrency: concurrencySettingSchema.optional(),
    /**
     * Rate limit: each start (lease) of this job takes a token of `key`'s bucket, shared by every worker; with
     * no token the job waits PENDING (src/queue/statements/rate-slots.ts). The limit is stored on the key's
     * row: this enqueue sets it unless an operator pinned it (`setRateLimit`).
     */
    rateLimit: rateLimitSettingSchema.optional(),
    /**
     * Fair claiming: claims take turns between the keys of a type (one tenant's backlog does not starve
     * another's trickle), `weight` jobs of this key per round (src/queue/statements/fair-turns.ts).
     */
    fairness: fairnessSettingSchema.optional(),
    /** The job's stage label until its handler sets another (`ctx.setStage`). */
    stage: stageLabel.optional(),
    /**
     * This job's retry backoff, over its definition's (`defineJob(..., { retry: { backoff } })`) and the
     * default; either field may be given alone (the other from the definition, else the default). Stored on
     * the row, so every retry of this job uses it, whichever worker fails it.
     */
    backoff: backoffPolicySchema.optional(),
    /** Debounce: the last request of the key's window wins (see debounceSchema). */
    debounce: debounceSchema.optional(),
    /** Throttle: the first request of the key's window wins (see throttleSchema). */
    throttle: throttleSchema.optional(),
  })
  .refine((input) => input.runAt === undefined || input.delayMs === undefined, {
    path: ['runAt'],
    message: 'give runAt or delayMs, not both',
  })
  .superRefine((input, ctx) => {
    // Combinations that mean nothing (docs/guide/flow-control.md, "Combining"): refused, naming the field.
    if (input.debounce !== undefined && input.throttle !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['throttle'], message: 'give debounce or throttle, not both' });
    }
    if (input.debounce !== undefined) {
      for (const field of ['runAt', 'delayMs'] as const) {
        if (input[field] !== undefined)
          ctx.addIssue({ code: 'custom', path: [field], message: 'cannot be combined with debounce: the window sets the due time' });
      }
    }
    if ((input.debounce !== undefined || input.throttle !== undefined) && input.idempotencyKey !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['idempotencyKey'],
        message: 'cannot be combined with debounce or throttle: the window key already answers repeated requests',
      });
    }
  });
/** One job of the string job-type form: the payload is `unknown` to the compiler, checked as storable JSON at run time. */
export type EnqueueJobInput = Omit<z.input<typeof enqueueJobInputSchema>, 'payload'> & { payload: unknown };
/** An enqueue's own settings for one job of a definition (`enqueueJob(db, definition, payload, settings)`). */
export type EnqueueJobSettings = Omit<EnqueueJobInput, 'jobType' | 'payload'>;
export type ParsedEnqueueJobInput = z.output<typeof enqueueJobInputSchema>;

export const enqueueJobsInputSchema = z
  .array(enqueueJobInputSchema)
  .max(MAX_ENQUEUE_BATCH)
  .superRefine((jobs, ctx) => {
    // One limit per key per statement: the key's row takes one value.
    const limits = new Map<string, number>();
    jobs.forEach((job, index) => {
      if (job.concurrency === undefined) return;
      const seen = limits.get(job.concurrency.key);
      if (seen === undefined) limits.set(job.concurrency.key, job.concurrency.limit);
      else if (seen !== job.concurrency.limit) {
        ctx.addIssue({ code: 'custom', path: [index, 'concurrency', 'limit'], message: `differs from an earlier job's limit (${seen}) for the same key` });
      }
    });
    sameSettingPerKey(
      jobs.map((job) => job.rateLimit),
      (index) => [index, 'rateLimit'],
      "job's rate limit",
      (a, b) => a.limit === b.limit && a.periodMs === b.periodMs && a.burst === b.burst,
      (issue) => ctx.addIssue(issue),
    );
  });

/** Options of one `enqueueJob` / `enqueueJobs` call (not part of any job's request or idempotency key). */
export const enqueueOptionsSchema = z.strictObject({
  /**
   * Send the wake-up NOTIFY for the job types this call makes runnable now (default true). false: workers
   * find the jobs by polling (`pollIntervalMs`) or when a claim is already due; use it for bulk loads or
   * producers whose workers poll (`listen: false`), to spare the listeners the wake-ups.
   */
  notify: z.boolean().optional(),
  /**
   * Refuse a job type the definitions catalog does not hold (default false: only a type whose definition is
   * disabled is refused, so a host may enqueue before any worker has synced its definitions). See
   * src/queue/catalog.ts; the refusal is `job.definition_not_found_or_disabled` and writes nothing.
   */
  requireDefinition: z.boolean().optional(),
});
export type EnqueueOptions = z.input<typeof enqueueOptionsSchema>;

export const jobLeaseSchema = z.object({
  jobId: uuid,
  runNumber: positiveInt,
  attempt: positiveInt,
  workerId,
  /**
   * Routing hint (a ClaimedJob carries it): whether the job backs a workflow
   * step. Lets a completion skip the direct-jobs-only autocommit statement
   * when it would match nothing; never trusted for correctness (the SQL reads
   * `workflow_step_id` itself).
   */
  workflowManaged: z.boolean().optional(),
});
export type ParsedJobLease = z.output<typeof jobLeaseSchema>;

export const claimJobsInputSchema = z.strictObject({
  workerId,
  jobTypes: z.array(nonBlank(200)).min(1, 'must name at least one job type').optional(),
  limit: positiveInt.max(MAX_CLAIM_BATCH),
  leaseSeconds,
  markRunning: z.boolean().optional(),
});
export type ClaimJobsInput = z.input<typeof claimJobsInputSchema>;

/*
 * Lease-fenced writes take one object: the lease (a ClaimedJob or JobLease
 * spread in, its other fields ignored) plus the operation's own fields, e.g.
 * `failJob(db, { ...lease, error: { code, message }, retryable: true })`.
 */
export const heartbeatJobInputSchema = jobLeaseSchema.extend({
  leaseSeconds: leaseSeconds.optional(),
  /**
   * Progress and checkpoint to store (null clears, absent keeps). Nested, not
   * beside the lease: a ClaimedJob carries the values read at claim time under
   * the same names, and spreading one in must not write those back.
   */
  save: z.strictObject({ progress: jsonValue.optional(), checkpoint: jsonValue.optional() }).optional(),
});
export type HeartbeatJobInput = z.input<typeof heartbeatJobInputSchema>;

/** `setJobStage(db, { ...lease, stage })`. */
export const setJobStageInputSchema = jobLeaseSchema.extend({ stage: stageLabel });
export type SetJobStageInput = z.input<typeof setJobStageInputSchema>;

const progressCount = z.number().int('must be an integer').min(0, 'must not be negative').max(Number.MAX_SAFE_INTEGER);

/** `recordJobProgress(db, { ...lease, processed, total? })`: numeric progress, `processed` of `total` (optional: unknown size). */
export const recordJobProgressInputSchema = jobLeaseSchema
  .extend({ processed: progressCount, total: progressCount.optional() })
  .refine((p) => p.total === undefined || p.processed <= p.total, { message: 'must not exceed total', path: ['processed'] });
export type RecordJobProgressInput = z.input<typeof recordJobProgressInputSchema>;

/** `continueJob(db, { ...lease, delayMs?, save? })`: ends this slice of a long job; the next one is runnable after `delayMs`. */
export const continueJobInputSchema = jobLeaseSchema.extend({
  /** 0 (default): runnable at once. */
  delayMs: z.number().int('must be an integer').min(0, 'must not be negative').max(2_147_483_647).optional(),
  /** Checkpoint and progress the next slice starts from (null clears, absent keeps); nested for the reason heartbeatJob's is. */
  save: z.strictObject({ progress: jsonValue.optional(), checkpoint: jsonValue.optional() }).optional(),
});
export type ContinueJobInput = z.input<typeof continueJobInputSchema>;

export const completeJobInputSchema = jobLeaseSchema.extend({ output: jsonValue.optional() });
export type CompleteJobInput = z.input<typeof completeJobInputSchema>;

/** A batch of completions: one item per job, each `{ ...lease, output }`. */
export const completeJobsBatchSchema = z
  .array(completeJobInputSchema)
  .max(MAX_CLAIM_BATCH)
  .superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((item, index) => {
      if (seen.has(item.jobId)) ctx.addIssue({ code: 'custom', path: [index, 'jobId'], message: 'names a job already in this batch' });
      seen.add(item.jobId);
    });
  });

/** The internal form of a completion batch (lease and output apart), what the completion path works on. */
export const completeJobsInputSchema = z.array(z.object({ lease: jobLeaseSchema, output: jsonValue.optional() })).max(MAX_CLAIM_BATCH);
export type CompleteJobsItem = z.input<typeof completeJobsInputSchema>[number];

/** What a failed attempt records: the job's lastErrorCode and lastErrorMessage, and the attempt's stack when there is one. */
export const jobFailureSchema = z.strictObject({
  code: nonBlank(200),
  message: storableText.transform((s) => truncateText(s, MAX_ERROR_MESSAGE_LENGTH)),
  stack: storableText.transform((s) => truncateText(s, MAX_ERROR_STACK_LENGTH)).optional(),
});

export const failJobInputSchema = jobLeaseSchema.extend({
  error: jobFailureSchema,
  retryable: z.boolean(),
  retryNotBefore: timestamp.optional(),
  /**
   * The backoff of the job's type (a worker passes its definition's); default DEFAULT_BACKOFF. A backoff
   * stored on the job row (its enqueue's or step's) wins over it.
   */
  backoff: backoffPolicySchema.optional(),
});
export type FailJobInput = z.input<typeof failJobInputSchema>;

export const releaseJobInputSchema = jobLeaseSchema.extend({
  /** Recorded on the job's release event: blank would say nothing, so it is refused like every other reason. */
  reason: nonBlank(200).default('job.released'),
});
export type ReleaseJobInput = z.input<typeof releaseJobInputSchema>;

export const cancelJobInputSchema = z.strictObject({
  jobId: uuid,
  scope: scopeSchema,
  reason: nonBlank(1_000).optional(),
});
export type CancelJobInput = z.input<typeof cancelJobInputSchema>;

export const reapExpiredLeasesInputSchema = z.strictObject({
  limit: positiveInt.max(MAX_REAP_BATCH),
});
export type ReapExpiredLeasesInput = z.input<typeof reapExpiredLeasesInputSchema>;

export const jobRefSchema = z.strictObject({ scope: scopeSchema, jobId: uuid });
export type JobRef = z.input<typeof jobRefSchema>;

/**
 * The paging fields every list shares: `limit` (default 50, at most 500) and
 * `cursor`, the `nextCursor` of the previous page (opaque; absent for the first).
 */
export const DEFAULT_LIST_LIMIT = 50;
export function pageFields(cursorPattern: RegExp, list: string) {
  return {
    limit: positiveInt.max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
    cursor: z.string().regex(cursorPattern, `must be a nextCursor returned by ${list}`).optional(),
  };
}
const MAX_BIGINT = 9_223_372_036_854_775_807n;
/**
 * `pageFields` for a cursor that starts with a bigint (a sequence number, or
 * microseconds before ':'): up to 19 digits pass the pattern, so one beyond
 * PostgreSQL's bigint is refused here rather than by the cast.
 */
export function bigintPageFields(cursorPattern: RegExp, list: string) {
  const message = `must be a nextCursor returned by ${list}`;
  return {
    ...pageFields(cursorPattern, list),
    cursor: z
      .string()
      .regex(cursorPattern, message)
      // Runs after a failed pattern too (zod goes on checking): only a leading number is read.
      .refine((cursor) => {
        const digits = /^[0-9]{1,19}/.exec(cursor);
        return digits === null || BigInt(digits[0]) <= MAX_BIGINT;
      }, message)
      .optional(),
  };
}

/** One page of a list: `nextCursor` is null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export const listJobsInputSchema = z.strictObject({
  scope: scopeSchema,
  status: z.union([jobStatus, z.array(jobStatus).min(1)]).optional(),
  jobType: nonBlank(200).optional(),
  ...pageFields(UUID_REGEX, 'listJobs'),
});
export type ListJobsInput = z.input<typeof listJobsInputSchema>;

export const listJobEventsInputSchema = z.strictObject({ scope: scopeSchema, jobId: uuid, ...bigintPageFields(/^[0-9]{1,19}$/, 'listJobEvents') });
export type ListJobEventsInput = z.input<typeof listJobEventsInputSchema>;
