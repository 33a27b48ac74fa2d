/**
 * Public input schemas of schedules. Every exported schedule operation parses
 * here first, so a bad input writes nothing and the ValidationError
 * (`schedule.invalid_input`) names the field: `cron` for an expression croner
 * refuses or one that never matches, `timezone` for an unknown IANA zone.
 */
import { z } from 'zod';
import { enqueueJobInputSchema } from '../queue/inputs.js';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_TIMEOUT_SECONDS } from '../job/defaults.js';
import { int32, jsonValue, nonBlank, positiveInt, requestKey, storableText, timestamp } from '../validation/primitives.js';
import { cronProblem, timezoneProblem } from './cron.js';
import type { WorkflowRunInput } from '../workflow/run-definition.js';
import { workflowRunProblem } from './targets.js';

export const SCHEDULE_INVALID_INPUT = 'schedule.invalid_input';
export const SCHEDULE_NOT_FOUND = 'schedule.not_found';
export const SCHEDULE_UNSUPPORTED_ISOLATION = 'schedule.unsupported_isolation';

export const DEFAULT_TIMEZONE = 'UTC';
export const DEFAULT_CATCH_UP_MAX_SLOTS = 1;
export const MAX_CATCH_UP_SLOTS = 1_000;
export const MAX_SCHEDULE_BATCH = 1_000;
export const MAX_SCHEDULE_LIST_LIMIT = 500;

/**
 * Schedule keys: what an operator types (`runledger schedules pause nightly-report`). At most 200 bytes, so
 * a slot's idempotency key (`schedule:<key>:<ISO time>`) stays within the 512 bytes keys may have.
 */
export const scheduleKey = storableText
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= 200, 'must be at most 200 bytes (UTF-8)');

/** The same organization id rule as enqueue, whatever form host ids take. */
const organizationId = enqueueJobInputSchema.shape.organizationId;

/** The settings of a job target; a workflow target's steps carry their own. */
const JOB_ONLY_SETTINGS = ['priority', 'maxAttempts', 'timeoutSeconds', 'resource'] as const;

export const upsertScheduleInputSchema = z
  .strictObject({
    key: scheduleKey,
    cron: nonBlank(200),
    timezone: nonBlank(100).default(DEFAULT_TIMEZONE),
    /** Target, one of: a job (`jobType` and `payload`)... */
    jobType: nonBlank(200).optional(),
    payload: jsonValue.optional(),
    /**
     * ...or a workflow run (what `workflow(...).build()` returns), enqueued
     * whole at each slot. It must not set `organizationId` (the schedule's
     * applies) nor `idempotencyKey` (each slot's is derived from the schedule
     * key and the slot time, as for jobs).
     */
    workflow: z
      .custom<WorkflowRunInput>(
        (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
        'must be a workflow run (workflow(...).build())',
      )
      .optional(),
    organizationId,
    enabled: z.boolean(),
    /** Job targets only (defaults as enqueueJob's). */
    priority: int32.optional(),
    maxAttempts: positiveInt.optional(),
    timeoutSeconds: positiveInt.optional(),
    /** Execution resource of every job this schedule makes (see enqueueJob); job targets only. */
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
    targetProblems(input, ctx);
  })
  .transform((input) => ({
    ...input,
    priority: input.priority ?? DEFAULT_PRIORITY,
    maxAttempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    timeoutSeconds: input.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
    // Validated by targetProblems: present exactly when there is no jobType.
    workflow: input.workflow === undefined ? undefined : storedWorkflowRun(input.workflow),
  }));

interface TargetFields {
  jobType?: string | undefined;
  payload?: unknown;
  workflow?: WorkflowRunInput | undefined;
  priority?: number | undefined;
  maxAttempts?: number | undefined;
  timeoutSeconds?: number | undefined;
  resource?: string | undefined;
}

/** Exactly one target; a job target has a payload; a workflow target is a valid run, without job settings, organization or key. */
function targetProblems(input: TargetFields, ctx: z.core.$RefinementCtx): void {
  if (input.workflow === undefined) {
    if (input.jobType === undefined) ctx.addIssue({ code: 'custom', path: ['jobType'], message: 'is required (or give a workflow)' });
    else if (input.payload === undefined) ctx.addIssue({ code: 'custom', path: ['payload'], message: 'is required with jobType' });
    // The row tells a job target by its payload column: JSON null would be stored as no payload at all.
    else if (input.payload === null) ctx.addIssue({ code: 'custom', path: ['payload'], message: 'must not be null for a job schedule (use {} for none)' });
    return;
  }
  if (input.jobType !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['jobType'], message: 'a schedule has one target: jobType or workflow, not both' });
    return;
  }
  for (const field of ['payload', ...JOB_ONLY_SETTINGS] as const) {
    if (input[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: "applies to job targets only (set it on the workflow's steps)" });
  }
  const run = input.workflow as { organizationId?: unknown; idempotencyKey?: unknown };
  if (run.organizationId !== undefined && run.organizationId !== null) {
    ctx.addIssue({ code: 'custom', path: ['workflow', 'organizationId'], message: "must not be set: the schedule's organizationId applies" });
  }
  if (run.idempotencyKey !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['workflow', 'idempotencyKey'], message: 'must not be set: each slot has its own key' });
  }
  const problem = workflowRunProblem(input.workflow);
  if (problem) ctx.addIssue({ code: 'custom', path: ['workflow', ...problem.field.split('.')], message: problem.message });
}

/** The run as stored: its plain JSON form, without the fields the scheduler supplies. */
function storedWorkflowRun(run: WorkflowRunInput): Omit<WorkflowRunInput, 'organizationId' | 'idempotencyKey'> {
  const { organizationId: _organization, idempotencyKey: _key, ...rest } = run;
  return JSON.parse(JSON.stringify(rest)) as Omit<WorkflowRunInput, 'organizationId' | 'idempotencyKey'>;
}

export type UpsertScheduleInput = z.input<typeof upsertScheduleInputSchema>;
export type ParsedSchedule = z.output<typeof upsertScheduleInputSchema>;

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
