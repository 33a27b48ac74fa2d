/**
 * Creating, reading, pausing and deleting schedules. Each operation is one
 * statement (autocommit on a root client, joined on a transaction client), so
 * there is nothing to half-write. Validation (cron expression, timezone, every
 * field) runs before any statement is sent.
 *
 * Locks: an upsert, pause, resume or delete touches one schedule row, by key;
 * it waits for a scheduler pass holding that row (see run-due.ts), which is
 * short and takes no other lock before it, so they cannot deadlock.
 */
import type { Db, Tx } from '../client/types.js';
import { withStatement, withTransaction } from '../client/transaction.js';
import { newId } from '../db/ids.js';
import { NotFoundError } from '../errors/runledger-error.js';
import { jsonParam } from '../model/job-rows.js';
import { parseInput } from '../validation/parse.js';
import { nextSlotAfter } from './cron.js';
import { toSchedule, type Schedule, type ScheduleRow } from './rows.js';
import {
  DEFAULT_CATCH_UP_MAX_SLOTS,
  SCHEDULE_INVALID_INPUT,
  SCHEDULE_NOT_FOUND,
  listSchedulesInputSchema,
  scheduleRefSchema,
  setScheduleEnabledInputSchema,
  upsertScheduleInputSchema,
  type ListSchedulesInput,
  type ParsedSchedule,
  type ScheduleRef,
  type SetScheduleEnabledInput,
  type UpsertScheduleInput,
} from './inputs.js';

const DEFAULT_LIST_LIMIT = 50;

export function scheduleNotFound(key: string, operation: string): NotFoundError {
  return new NotFoundError(SCHEDULE_NOT_FOUND, 'The schedule does not exist.', {
    internalMessage: `${operation}: schedule ${key} not found`,
    details: { key },
  });
}

/**
 * Creates the schedule `key`, or updates it to exactly this definition.
 *
 * The cursor (`nextRunAt`) is the first slot after `now` when the schedule is
 * new, when its cron expression or timezone changes, and when it goes from
 * disabled to enabled. Otherwise it is kept: re-declaring an unchanged
 * schedule (every worker start does) never skips or repeats a slot.
 *
 * @example
 * await upsertSchedule(prisma, { key: 'nightly-report', cron: '30 2 * * *', timezone: 'Europe/Berlin', jobType: 'report.build', payload: {}, enabled: true });
 */
export async function upsertSchedule(db: Db, input: UpsertScheduleInput): Promise<Schedule> {
  const s = parseInput(upsertScheduleInputSchema, input, SCHEDULE_INVALID_INPUT);
  return withStatement(db, 'upsert schedule', async (tx) => (await upsertSchedulesTx(tx, [s], null))[0]!);
}

/**
 * Upserts several parsed schedules in one statement (see upsertSchedule),
 * tagging them `declaredBy`. Rows are written in key order, so concurrent
 * callers declaring overlapping sets (workers starting together) take the
 * rows' locks in one order and cannot deadlock; ON CONFLICT makes the loser
 * of an insert race update instead of failing. Keys must be distinct.
 */
export async function upsertSchedulesTx(tx: Tx, schedules: readonly ParsedSchedule[], declaredBy: string | null): Promise<Schedule[]> {
  if (schedules.length === 0) return [];
  const sorted = [...schedules].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const column = <T>(pick: (s: ParsedSchedule) => T) => sorted.map(pick);
  const rows = await tx.$queryRaw<ScheduleRow[]>`
    INSERT INTO runledger.job_schedules AS js
           (id, schedule_key, cron, timezone, job_type, organization_id, payload, workflow_type, workflow_run, priority, max_attempts,
            timeout_seconds, resource_key, enabled, catch_up_max_slots, next_run_at, declared_by)
    SELECT u.id, u.schedule_key, u.cron, u.timezone, u.job_type, u.organization_id, u.payload, u.workflow_type, u.workflow_run,
           u.priority, u.max_attempts, u.timeout_seconds, u.resource_key, u.enabled, u.catch_up_max_slots, u.next_run_at,
           ${declaredBy}::text
      FROM unnest(${column(() => newId())}::uuid[], ${column((s) => s.key)}::text[], ${column((s) => s.cron)}::text[],
                  ${column((s) => s.timezone)}::text[], ${column((s) => s.jobType ?? null)}::text[],
                  ${column((s) => s.organizationId ?? null)}::text[],
                  ${column((s) => (s.jobType === undefined ? null : jsonParam(s.payload ?? null)))}::jsonb[],
                  ${column((s) => s.workflow?.workflowType ?? null)}::text[],
                  ${column((s) => (s.workflow === undefined ? null : JSON.stringify(s.workflow)))}::jsonb[],
                  ${column((s) => s.priority)}::int[], ${column((s) => s.maxAttempts)}::int[], ${column((s) => s.timeoutSeconds)}::int[],
                  ${column((s) => s.resource ?? null)}::text[], ${column((s) => s.enabled)}::boolean[],
                  ${column((s) => s.catchUp?.maxSlots ?? DEFAULT_CATCH_UP_MAX_SLOTS)}::int[],
                  -- Validation proved a future slot exists.
                  ${column((s) => nextSlotAfter(s, s.now ?? new Date())!)}::timestamptz[])
           WITH ORDINALITY AS u(id, schedule_key, cron, timezone, job_type, organization_id, payload, workflow_type, workflow_run, priority,
                                max_attempts, timeout_seconds, resource_key, enabled, catch_up_max_slots, next_run_at, ord)
     ORDER BY u.ord
    ON CONFLICT (schedule_key) DO UPDATE
       SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, job_type = EXCLUDED.job_type,
           organization_id = EXCLUDED.organization_id, payload = EXCLUDED.payload,
           workflow_type = EXCLUDED.workflow_type, workflow_run = EXCLUDED.workflow_run, priority = EXCLUDED.priority,
           max_attempts = EXCLUDED.max_attempts, timeout_seconds = EXCLUDED.timeout_seconds,
           resource_key = EXCLUDED.resource_key, enabled = EXCLUDED.enabled,
           catch_up_max_slots = EXCLUDED.catch_up_max_slots, declared_by = EXCLUDED.declared_by,
           next_run_at = CASE WHEN js.cron = EXCLUDED.cron AND js.timezone = EXCLUDED.timezone AND js.enabled
                              THEN js.next_run_at ELSE EXCLUDED.next_run_at END,
           updated_at = now()
    RETURNING js.*`;
  const byKey = new Map(rows.map((row) => [row.schedule_key, toSchedule(row)]));
  return schedules.map((s) => byKey.get(s.key)!);
}

/** Deletes the schedule; true when it existed. Jobs it already made are not touched. */
export async function deleteSchedule(db: Db, ref: ScheduleRef): Promise<boolean> {
  const { key } = parseInput(scheduleRefSchema, ref, SCHEDULE_INVALID_INPUT, 'ref');
  return withStatement(db, 'delete schedule', async (tx) => {
    const deleted = await tx.$executeRaw`DELETE FROM runledger.job_schedules WHERE schedule_key = ${key}`;
    return deleted > 0;
  });
}

/** The schedule, or null when none has this key. */
export async function findSchedule(db: Db, ref: ScheduleRef): Promise<Schedule | null> {
  const { key } = parseInput(scheduleRefSchema, ref, SCHEDULE_INVALID_INPUT, 'ref');
  return withStatement(
    db,
    'find schedule',
    async (tx) => {
      const rows = await tx.$queryRaw<ScheduleRow[]>`SELECT * FROM runledger.job_schedules WHERE schedule_key = ${key}`;
      return rows[0] ? toSchedule(rows[0]) : null;
    },
    { readCommitted: false },
  );
}

/** The schedule; `schedule.not_found` when none has this key. */
export async function getSchedule(db: Db, ref: ScheduleRef): Promise<Schedule> {
  const schedule = await findSchedule(db, ref);
  if (!schedule) throw scheduleNotFound(ref.key, 'get schedule');
  return schedule;
}

/** The `{ items, nextCursor }` page shape of every list. */
export interface SchedulePage {
  items: Schedule[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Schedules in key order, a page at a time (keyset on the unique key).
 *
 * @example
 * let page = await listSchedules(prisma, { limit: 100 });
 * while (page.nextCursor) page = await listSchedules(prisma, { limit: 100, cursor: page.nextCursor });
 */
export async function listSchedules(db: Db, input: ListSchedulesInput = {}): Promise<SchedulePage> {
  const f = parseInput(listSchedulesInputSchema, input, SCHEDULE_INVALID_INPUT);
  const limit = f.limit ?? DEFAULT_LIST_LIMIT;
  return withStatement(
    db,
    'list schedules',
    async (tx) => {
      // One row beyond the page tells whether another page exists.
      const rows = await tx.$queryRaw<ScheduleRow[]>`
        SELECT * FROM runledger.job_schedules
         WHERE (${f.cursor ?? null}::text IS NULL OR schedule_key > ${f.cursor ?? null}::text)
           AND (${f.enabled ?? null}::boolean IS NULL OR enabled = ${f.enabled ?? null}::boolean)
           AND (${f.jobType ?? null}::text IS NULL OR job_type = ${f.jobType ?? null}::text)
         ORDER BY schedule_key
         LIMIT ${limit + 1}`;
      const page = rows.slice(0, limit).map(toSchedule);
      return { items: page, nextCursor: rows.length > limit ? page[page.length - 1]!.key : null };
    },
    { readCommitted: false },
  );
}

/** Stops the schedule from making jobs (its cursor is kept). Idempotent; `schedule.not_found` for an unknown key. */
export async function pauseSchedule(db: Db, input: SetScheduleEnabledInput): Promise<Schedule> {
  const { key } = parseInput(setScheduleEnabledInputSchema, input, SCHEDULE_INVALID_INPUT);
  return withStatement(db, 'pause schedule', async (tx) => {
    const rows = await tx.$queryRaw<ScheduleRow[]>`
      UPDATE runledger.job_schedules
         SET enabled = false, updated_at = CASE WHEN enabled THEN now() ELSE updated_at END
       WHERE schedule_key = ${key}
      RETURNING *`;
    if (!rows[0]) throw scheduleNotFound(key, 'pause schedule');
    return toSchedule(rows[0]);
  });
}

/**
 * Enables a paused schedule. Its next slot is the first one after `now`:
 * slots that fell while it was paused do not run. Resuming an enabled
 * schedule changes nothing. An expression with no future slot stays paused.
 */
export async function resumeSchedule(db: Db, input: SetScheduleEnabledInput): Promise<Schedule> {
  const { key, now } = parseInput(setScheduleEnabledInputSchema, input, SCHEDULE_INVALID_INPUT);
  // Two statements (read the expression under the row lock, then write the cursor computed from it), so that a
  // concurrent upsert changing the expression cannot pair the old cursor with the new expression.
  return withTransaction(db, 'resume schedule', async ({ tx }) => {
    const [row] = await tx.$queryRaw<ScheduleRow[]>`SELECT * FROM runledger.job_schedules WHERE schedule_key = ${key} FOR UPDATE`;
    if (!row) throw scheduleNotFound(key, 'resume schedule');
    if (row.enabled) return toSchedule(row);
    const next = nextSlotAfter(row, now ?? new Date());
    if (next === null) return toSchedule(row);
    const [updated] = await tx.$queryRaw<ScheduleRow[]>`
      UPDATE runledger.job_schedules SET enabled = true, next_run_at = ${next}::timestamptz, updated_at = now()
       WHERE id = ${row.id}::uuid
      RETURNING *`;
    return toSchedule(updated!);
  });
}
