/**
 * Materialising due slots: the scheduler loop's one operation, safe to run
 * from any number of workers at once (no leader).
 *
 * One transaction per call:
 *   1. lock the enabled schedules whose cursor (`next_run_at`) is due, in due
 *      order, `FOR UPDATE SKIP LOCKED`: a schedule another scheduler is
 *      materialising is skipped, never waited for; one whose cursor another
 *      scheduler advanced since this statement's snapshot is re-checked by
 *      READ COMMITTED and dropped;
 *   2. enqueue one job per due slot, in one statement, with the idempotency
 *      key `schedule:<key>:<slot ISO time>`: even a second materialisation of
 *      the same slot (a clock moved back, a schedule deleted and recreated)
 *      finds the key taken and inserts nothing;
 *   3. advance each cursor past `now`, in one statement.
 * The three commit together, so a crash at any point leaves either the slot
 * unmaterialised with its cursor unmoved (the next pass does it) or both done.
 *
 * Missed slots (downtime, a stopped scheduler): a schedule whose cursor is
 * several slots behind materialises only its latest `catchUp.maxSlots` (default
 * 1) slots up to `now`, oldest first, and skips the earlier ones.
 *
 * Locks: schedule rows, then job rows (new ones, and the unique idempotency
 * index). Nothing takes a job row lock and then a schedule row lock, and the
 * schedule rows are taken with SKIP LOCKED, so two schedulers never wait on
 * each other for them.
 *
 * Needs READ COMMITTED (SKIP LOCKED re-check, keyed enqueue); a joined
 * transaction at another level is refused (`schedule.unsupported_isolation`)
 * before anything is written.
 */
import type { Db, Tx } from '../client/types.js';
import { ensureReadCommitted, withTransaction } from '../client/transaction.js';
import { newId } from '../db/ids.js';
import { canonicalJobRequest, insertJobsTx, type InsertJobRow } from '../queue/enqueue.js';
import { ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import type { JsonValue } from '../validation/primitives.js';
import { dueSlots } from './cron.js';
import { scheduleNotFound } from './crud.js';
import type { ScheduleRow } from './rows.js';
import { SCHEDULE_INVALID_INPUT, SCHEDULE_UNSUPPORTED_ISOLATION, runDueSchedulesInputSchema, scheduleRefSchema, type RunDueSchedulesInput, type ScheduleRef } from './schemas.js';

export interface MaterialisedSlot {
  scheduleKey: string;
  slot: Date;
  jobId: string | null;
  /** 'existing': the slot's job was already there (its idempotency key was taken); nothing new was enqueued. */
  disposition: 'inserted' | 'existing';
}

export interface RunDueSchedulesResult {
  /** The clock the pass used (the given `now`, or the database's). */
  now: Date;
  /** Schedules whose cursor this pass advanced. */
  schedules: number;
  jobs: MaterialisedSlot[];
}

/** The idempotency key of a slot's job; the slot's exact instant, so every slot of every schedule has its own. */
export function slotIdempotencyKey(scheduleKey: string, slot: Date): string {
  if (typeof scheduleKey !== 'string') throw new ValidationError(SCHEDULE_INVALID_INPUT, 'scheduleKey', 'Expected a string.');
  if (!(slot instanceof Date) || Number.isNaN(slot.getTime())) throw new ValidationError(SCHEDULE_INVALID_INPUT, 'slot', 'Expected a valid Date.');
  return `schedule:${scheduleKey}:${slot.toISOString()}`;
}

/**
 * Materialises the due slots of at most `limit` schedules (see the module
 * comment). Call it again while `schedules === limit`: more may be due.
 *
 * @example
 * // A test with an injected clock:
 * await runDueSchedules(prisma, { now: new Date('2027-01-01T02:30:00Z'), limit: 100 });
 */
export async function runDueSchedules(db: Db, input: RunDueSchedulesInput): Promise<RunDueSchedulesResult> {
  const { now, limit } = parseInput(runDueSchedulesInputSchema, input, SCHEDULE_INVALID_INPUT);
  return withTransaction(db, 'run due schedules', async (context) => {
    await ensureReadCommitted(context, SCHEDULE_UNSUPPORTED_ISOLATION, 'Running due schedules');
    const tx = context.tx;
    const due = await tx.$queryRaw<(ScheduleRow & { clock: Date })[]>`
      SELECT js.*, COALESCE(${now ?? null}::timestamptz, statement_timestamp()) AS clock
        FROM runledger.job_schedules js
       WHERE js.enabled
         AND js.next_run_at <= COALESCE(${now ?? null}::timestamptz, statement_timestamp())
       ORDER BY js.next_run_at, js.id
       LIMIT ${limit}
         FOR UPDATE SKIP LOCKED`;
    const clock = now ?? due[0]?.clock ?? new Date();
    if (due.length === 0) return { now: clock, schedules: 0, jobs: [] };

    const plans = due.map((row) => ({ row, ...dueSlots(row, row.next_run_at, clock, row.catch_up_max_slots) }));
    const slots = plans.flatMap(({ row, slots }) => slots.map((slot) => ({ row, slot, job: slotJob(row, slot, 'slot') })));
    const jobs = await insertSlotJobs(tx, slots);
    // One statement advances every cursor. A cursor with no future slot (an expression that can never match
    // again) disables the schedule instead, keeping its last cursor.
    await tx.$executeRaw`
      UPDATE runledger.job_schedules js
         SET next_run_at = COALESCE(u.next_run_at, js.next_run_at),
             enabled = u.next_run_at IS NOT NULL,
             last_slot_at = u.last_slot_at,
             last_job_id = u.last_job_id,
             updated_at = now()
        FROM unnest(${plans.map((p) => p.row.id)}::uuid[],
                    ${plans.map((p) => p.next)}::timestamptz[],
                    ${plans.map((p) => p.slots[p.slots.length - 1]!)}::timestamptz[],
                    ${plans.map((p) => lastJobOf(jobs, p.row.schedule_key))}::uuid[])
             AS u(id, next_run_at, last_slot_at, last_job_id)
       WHERE js.id = u.id`;
    return { now: clock, schedules: plans.length, jobs };
  });
}

/**
 * Enqueues the schedule's job now, outside its cron slots ("run now"). The
 * cursor is not moved, so the next slot still runs. Each call makes a new job.
 */
export async function runScheduleNow(db: Db, ref: ScheduleRef): Promise<{ jobId: string }> {
  const { key } = parseInput(scheduleRefSchema, ref, SCHEDULE_INVALID_INPUT);
  return withTransaction(db, 'run schedule now', async ({ tx }) => {
    // FOR SHARE: a concurrent delete or redefinition waits until this job is enqueued from the definition read.
    const [row] = await tx.$queryRaw<ScheduleRow[]>`SELECT * FROM runledger.job_schedules WHERE schedule_key = ${key} FOR SHARE`;
    if (!row) throw scheduleNotFound(key, 'run schedule now');
    const job = slotJob(row, null, 'manual');
    await insertJobsTx(tx, [job]);
    return { jobId: job.id };
  });
}

function slotJob(row: ScheduleRow, slot: Date | null, trigger: 'slot' | 'manual'): InsertJobRow {
  const key = slot === null ? null : slotIdempotencyKey(row.schedule_key, slot);
  const resource = row.resource_key;
  return {
    id: newId(),
    jobType: row.job_type,
    organizationId: row.organization_id,
    payload: row.payload,
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutSeconds: row.timeout_seconds,
    nextRunAt: null,
    idempotencyKey: key,
    // The same canonical request enqueueJob stores, so the key means the same thing to both.
    enqueueRequest:
      key === null
        ? null
        : canonicalJobRequest({
            jobType: row.job_type,
            organizationId: row.organization_id,
            payload: row.payload,
            priority: row.priority,
            maxAttempts: row.max_attempts,
            timeoutSeconds: row.timeout_seconds,
            resourceKey: resource,
            backoff: null,
          }),
    // The ENQUEUED event says which schedule and slot made the job.
    eventPayload: { schedule: { key: row.schedule_key, trigger, ...(slot === null ? {} : { slot: slot.toISOString() }) } } satisfies JsonValue,
    resourceKey: resource,
  };
}

/** Inserts the slots' jobs in one statement; a slot whose key is taken reports the job holding it. */
async function insertSlotJobs(tx: Tx, slots: readonly { row: ScheduleRow; slot: Date; job: InsertJobRow }[]): Promise<MaterialisedSlot[]> {
  const inserted = new Set(await insertJobsTx(tx, slots.map((s) => s.job)));
  const skipped = slots.filter((s) => !inserted.has(s.job.id));
  const holders = new Map<string, string>();
  if (skipped.length > 0) {
    const rows = await tx.$queryRaw<{ idempotency_key: string; id: string }[]>`
      SELECT jq.idempotency_key, jq.id
        FROM unnest(${skipped.map((s) => s.job.jobType)}::text[], ${skipped.map((s) => s.job.organizationId)}::text[],
                    ${skipped.map((s) => s.job.idempotencyKey)}::text[]) AS k(job_type, organization_id, idempotency_key)
        JOIN runledger.job_queue jq
          ON jq.job_type = k.job_type AND jq.idempotency_key = k.idempotency_key
         AND jq.organization_id::text IS NOT DISTINCT FROM k.organization_id`;
    for (const row of rows) holders.set(row.idempotency_key, row.id);
  }
  return slots.map(({ row, slot, job }) => ({
    scheduleKey: row.schedule_key,
    slot,
    // null only if the job holding the key was deleted (purged) in the instant between the two statements.
    jobId: inserted.has(job.id) ? job.id : (holders.get(job.idempotencyKey!) ?? null),
    disposition: inserted.has(job.id) ? ('inserted' as const) : ('existing' as const),
  }));
}

function lastJobOf(jobs: readonly MaterialisedSlot[], scheduleKey: string): string | null {
  const mine = jobs.filter((j) => j.scheduleKey === scheduleKey);
  return mine[mine.length - 1]?.jobId ?? null;
}
