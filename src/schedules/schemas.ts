/**
 * Public input schemas of schedules. Every exported schedule operation parses
 * here first, so a bad input writes nothing and the ValidationError
 * (`schedule.invalid_input`) names the field: `cron` for an expression croner
 * refuses or one that never matches, `timezone` for an unknown IANA zone.
 */
import { z } from 'zod';
import { enqueueJobInputSchema, DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_TIMEOUT_SECONDS } from '../queue/schemas.js';
import { int32, jsonValue, nonBlank, positiveInt, requestKey, storableText, timestamp } from '../validation/primitives.js';
import { cronProblem, timezoneProblem } from './cron.js';

export const SCHEDULE_INVALID_INPUT = 'schedule.invalid_input';
export const SCHEDULE_NOT_FOUND = 'schedule.not_found';
export const SCHEDULE_UNSUPPORTED_ISOLATION = 'schedule.unsupported_isolation';

export const DEFAULT_TIMEZONE = 'UTC';
export const DEFAULT_CATCH_UP_MAX_SLOTS = 1;
export const MAX_CATCH_UP_SLOTS = 1_000;
export const MAX_SCHEDULE_BATCH = 1_000;
export const MAX_SCHEDULE_LIST_LIMIT = 500;
export { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_TIMEOUT_SECONDS };

/**
 * Schedule keys: what an operator types (`runledger schedules pause nightly-report`). At most 200 bytes, so
 * a slot's idempotency key (`schedule:<key>:<ISO time>`) stays within the 512 bytes keys may have.
 */
export const scheduleKey = storableText
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= 200, 'must be at most 200 bytes (UTF-8)');

/** The same organization id rule as enqueue, whatever form host ids take. */
const organizationId = enqueueJobInputSchema.shape.organizationId;

export const upsertScheduleInputSchema = z
  .strictObject({
    key: scheduleKey,
    cron: nonBlank(200),
    timezone: nonBlank(100).default(DEFAULT_TIMEZONE),
    jobType: nonBlank(200),
    payload: jsonValue,
    organizationId,
    enabled: z.boolean(),
    priority: int32.default(DEFAULT_PRIORITY),
    maxAttempts: positiveInt.default(DEFAULT_MAX_ATTEMPTS),
    timeoutSeconds: positiveInt.default(DEFAULT_TIMEOUT_SECONDS),
    /** Execution resource of every job this schedule makes (see enqueueJob). */
    resource: requestKey.optional(),
    /**
     * Missed slots after downtime: how many of them, the latest ones, one pass
     * materialises. Default 1: only the latest missed slot runs.
     */
    catchUp: z.strictObject({ maxSlots: positiveInt.max(MAX_CATCH_UP_SLOTS) }).optional(),
    /** The clock the first slot is computed from (default: now). For tests and backfills. */
    now: timestamp.optional(),
  })
  .superRefine((input, ctx) => {
    const zoneProblem = timezoneProblem(input.timezone);
    if (zoneProblem) {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: zoneProblem });
      return;
    }
    // An invalid `now` has its own issue already; the cron library would throw on it.
    if (input.now !== undefined && !timestamp.safeParse(input.now).success) return;
    const problem = cronProblem(input.cron, input.timezone, input.now ?? new Date());
    if (problem) ctx.addIssue({ code: 'custom', path: ['cron'], message: problem });
  });
export type UpsertScheduleInput = z.input<typeof upsertScheduleInputSchema>;

export const scheduleRefSchema = z.strictObject({ key: scheduleKey });
export type ScheduleRef = z.input<typeof scheduleRefSchema>;

export const setScheduleEnabledInputSchema = z.strictObject({
  key: scheduleKey,
  /** Resuming computes the next slot after this instant (default: now); slots missed while paused do not run. */
  now: timestamp.optional(),
});
export type SetScheduleEnabledInput = z.input<typeof setScheduleEnabledInputSchema>;

export const listSchedulesInputSchema = z.strictObject({
  enabled: z.boolean().optional(),
  jobType: nonBlank(200).optional(),
  limit: positiveInt.max(MAX_SCHEDULE_LIST_LIMIT).optional(),
  /** The `nextCursor` of the previous page (pages are in key order; the cursor is the last key). */
  cursor: scheduleKey.optional(),
});
export type ListSchedulesInput = z.input<typeof listSchedulesInputSchema>;

export const runDueSchedulesInputSchema = z.strictObject({
  /** The scheduler's clock; default: the database's `statement_timestamp()`. */
  now: timestamp.optional(),
  /** Most schedules one call materialises (each may yield up to its catch-up limit of jobs). */
  limit: positiveInt.max(MAX_SCHEDULE_BATCH),
});
export type RunDueSchedulesInput = z.input<typeof runDueSchedulesInputSchema>;
