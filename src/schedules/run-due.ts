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
 * A workflow schedule's slot enqueues a run (enqueueWorkflowRuns' semantics,
 * the same slot idempotency key on the run) instead of a job.
 *
 * One bad schedule does not hold up the others. Step 2 runs inside a
 * savepoint; when it fails for a reason that belongs to a schedule (its
 * stored workflow no longer validates, a constraint refuses its job, its
 * slot's key is held by a different run) the savepoint is rolled back and
 * each schedule is then materialised in a savepoint of its own, so only the
 * failing ones are left out. Their slots are skipped like any materialised
 * slot (the cursor advances, so a broken schedule cannot stay at the head of
 * the due order and starve the rest), and the error is recorded on the
 * schedule (`lastError`) until a later slot succeeds. A workflow that fails
 * validation is found before any statement and never needs the fallback.
 * Failures that are not a schedule's (connection, deadlock, timeout) abort
 * the pass as before; the next pass retries everything.
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
import { databaseErrorInfo, isConnectionFault, normalizeDatabaseError } from '../errors/database-error.js';
import { isRunledgerError } from '../errors/runledger-error.js';
import { canonicalJobRequest, insertJobsTx, type InsertJobRow } from '../queue/insert-jobs.js';
import { ValidationError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import type { JsonValue } from '../model/json.js';
import type { ValidatedWorkflowRun } from '../workflow/run-definition.js';
import { persistRuns } from '../workflow/enqueue.js';
import { dueSlots } from './cron.js';
import { scheduleNotFound } from './crud.js';
import type { ScheduleRow } from './rows.js';
import { slotWorkflowRun } from './targets.js';
import {
  SCHEDULE_INVALID_INPUT,
  SCHEDULE_UNSUPPORTED_ISOLATION,
  runDueSchedulesInputSchema,
  scheduleRefSchema,
  type RunDueSchedulesInput,
  type ScheduleRef,
} from './inputs.js';

export interface MaterialisedSlot {
  scheduleKey: string;
  slot: Date;
  /** The slot's job (job schedules); null for a workflow schedule. */
  jobId: string | null;
  /** The slot's run (workflow schedules); null for a job schedule. */
  workflowRunId: string | null;
  /** 'existing': the slot's job or run was already there (its idempotency key was taken); nothing new was enqueued. */
  disposition: 'inserted' | 'existing';
}

/** A schedule whose due slots this pass could not materialise (skipped; recorded on the schedule as `lastError`). */
export interface FailedSchedule {
  scheduleKey: string;
  /** The slots skipped. */
  slots: Date[];
  code: string;
  message: string;
}

export interface RunDueSchedulesResult {
  /** The clock the pass used (the given `now`, or the database's). */
  now: Date;
  /** Schedules whose cursor this pass advanced. */
  schedules: number;
  jobs: MaterialisedSlot[];
  /** Schedules whose slots failed this pass; the others were materialised regardless. */
  failed: FailedSchedule[];
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
    if (due.length === 0) return { now: clock, schedules: 0, jobs: [], failed: [] };

    const plans = due.map((row) => ({ row, ...dueSlots(row, row.next_run_at, clock, row.catch_up_max_slots) }));
    const { jobs, failed } = await materialise(
      tx,
      plans.map(({ row, slots }) => planTargets(row, slots)),
    );
    const failure = new Map(failed.map((f) => [f.scheduleKey, f]));
    // One statement advances every cursor, failed schedules' too. A cursor with no future slot (an expression that
    // can never match again) disables the schedule instead, keeping its last cursor.
    await tx.$executeRaw`
      UPDATE runledger.job_schedules js
         SET next_run_at = COALESCE(u.next_run_at, js.next_run_at),
             enabled = u.next_run_at IS NOT NULL,
             last_slot_at = CASE WHEN u.error_code IS NULL THEN u.last_slot_at ELSE js.last_slot_at END,
             last_job_id = CASE WHEN u.error_code IS NULL THEN u.last_job_id ELSE js.last_job_id END,
             last_workflow_run_id = CASE WHEN u.error_code IS NULL THEN u.last_run_id ELSE js.last_workflow_run_id END,
             last_error_code = u.error_code,
             last_error_message = u.error_message,
             last_error_at = CASE WHEN u.error_code IS NULL THEN NULL ELSE ${clock}::timestamptz END,
             updated_at = now()
        FROM unnest(${plans.map((p) => p.row.id)}::uuid[],
                    ${plans.map((p) => p.next)}::timestamptz[],
                    ${plans.map((p) => p.slots[p.slots.length - 1]!)}::timestamptz[],
                    ${plans.map((p) => lastOf(jobs, p.row.schedule_key)?.jobId ?? null)}::uuid[],
                    ${plans.map((p) => lastOf(jobs, p.row.schedule_key)?.workflowRunId ?? null)}::uuid[],
                    ${plans.map((p) => failure.get(p.row.schedule_key)?.code ?? null)}::text[],
                    ${plans.map((p) => failure.get(p.row.schedule_key)?.message ?? null)}::text[])
             AS u(id, next_run_at, last_slot_at, last_job_id, last_run_id, error_code, error_message)
       WHERE js.id = u.id`;
    return { now: clock, schedules: plans.length, jobs, failed };
  });
}

/** What one schedule's due slots enqueue, or why they cannot (a stored workflow that no longer validates). */
interface SchedulePlan {
  row: ScheduleRow;
  slots: Date[];
  jobs: { slot: Date; job: InsertJobRow }[];
  runs: { slot: Date; run: ValidatedWorkflowRun }[];
  invalid: { code: string; message: string } | null;
}

function planTargets(row: ScheduleRow, slots: Date[]): SchedulePlan {
  const plan: SchedulePlan = { row, slots, jobs: [], runs: [], invalid: null };
  if (row.workflow_type === null) {
    plan.jobs = slots.map((slot) => ({ slot, job: slotJob(row, slot, 'slot') }));
    return plan;
  }
  try {
    plan.runs = slots.map((slot) => ({ slot, run: slotWorkflowRun(row, slotIdempotencyKey(row.schedule_key, slot)) }));
  } catch (error) {
    if (!isScheduleFault(error)) throw error;
    plan.invalid = faultOf(error);
  }
  return plan;
}

/**
 * Step 2 for every plan (module comment): all at once in one savepoint, and
 * only if that fails for a schedule's reason, schedule by schedule, each in a
 * savepoint of its own (a statement or two per schedule, on this error path
 * only).
 */
async function materialise(tx: Tx, plans: readonly SchedulePlan[]): Promise<{ jobs: MaterialisedSlot[]; failed: FailedSchedule[] }> {
  const failed: FailedSchedule[] = plans.flatMap((p) => (p.invalid ? [{ scheduleKey: p.row.schedule_key, slots: p.slots, ...p.invalid }] : []));
  const valid = plans.filter((p) => p.invalid === null);
  if (valid.length === 0) return { jobs: [], failed };
  await tx.$executeRaw`SAVEPOINT runledger_due_schedules`;
  try {
    const jobs = await materialiseTargets(tx, valid);
    await tx.$executeRaw`RELEASE SAVEPOINT runledger_due_schedules`;
    return { jobs, failed };
  } catch (error) {
    if (!isScheduleFault(error)) throw error;
    await tx.$executeRaw`ROLLBACK TO SAVEPOINT runledger_due_schedules`;
  }
  const jobs: MaterialisedSlot[] = [];
  for (const plan of valid) {
    await tx.$executeRaw`SAVEPOINT runledger_due_schedule`;
    try {
      jobs.push(...(await materialiseTargets(tx, [plan])));
      await tx.$executeRaw`RELEASE SAVEPOINT runledger_due_schedule`;
    } catch (error) {
      if (!isScheduleFault(error)) throw error;
      await tx.$executeRaw`ROLLBACK TO SAVEPOINT runledger_due_schedule`;
      await tx.$executeRaw`RELEASE SAVEPOINT runledger_due_schedule`;
      failed.push({ scheduleKey: plan.row.schedule_key, slots: plan.slots, ...faultOf(error) });
    }
  }
  await tx.$executeRaw`RELEASE SAVEPOINT runledger_due_schedules`;
  return { jobs, failed };
}

/** The plans' jobs in one statement (plus one for keys already taken), their runs in enqueueWorkflowRuns' constant few. */
async function materialiseTargets(tx: Tx, plans: readonly SchedulePlan[]): Promise<MaterialisedSlot[]> {
  const jobSlots = plans.flatMap(({ row, jobs }) => jobs.map(({ slot, job }) => ({ row, slot, job })));
  const runSlots = plans.flatMap(({ row, runs }) => runs.map(({ slot, run }) => ({ row, slot, run })));
  const jobs = jobSlots.length === 0 ? [] : await insertSlotJobs(tx, jobSlots);
  // Not owned: on a conflict persistRuns removes what it inserted before throwing (the savepoint would too).
  const runs =
    runSlots.length === 0
      ? []
      : await persistRuns(
          tx,
          runSlots.map((s) => s.run),
          false,
        );
  const runResults = runSlots.map(({ row, slot }, i) => ({
    scheduleKey: row.schedule_key,
    slot,
    jobId: null,
    workflowRunId: runs[i]!.workflowRunId,
    disposition: runs[i]!.disposition,
  }));
  // In plan order, each schedule's slots oldest first.
  const order = new Map(plans.map((p, i) => [p.row.schedule_key, i]));
  return [...jobs, ...runResults].sort((a, b) => order.get(a.scheduleKey)! - order.get(b.scheduleKey)! || a.slot.getTime() - b.slot.getTime());
}

/**
 * A failure that belongs to the schedule being materialised, not to the
 * pass: runledger's own validation or conflict errors, and the database
 * refusing the data (SQLSTATE classes 22 data exception, 23 integrity
 * violation). Connection faults, deadlocks and timeouts are not.
 */
function isScheduleFault(error: unknown): boolean {
  if (isRunledgerError(error)) return (error.category === 'validation' || error.category === 'conflict') && !error.code.startsWith('database.');
  if (isConnectionFault(error)) return false;
  const { sqlState } = databaseErrorInfo(error);
  return sqlState !== undefined && (sqlState.startsWith('22') || sqlState.startsWith('23'));
}

/** The code and public message recorded on the schedule (never SQL). */
function faultOf(error: unknown): { code: string; message: string } {
  const known = isRunledgerError(error) ? error : normalizeDatabaseError(error, 'materialise schedule slot');
  return { code: known.code, message: known.message };
}

/**
 * Enqueues the schedule's job now, outside its cron slots ("run now"). The
 * cursor is not moved, so the next slot still runs. Each call makes a new job.
 */
export async function runScheduleNow(db: Db, ref: ScheduleRef): Promise<{ jobId: string | null; workflowRunId: string | null }> {
  const { key } = parseInput(scheduleRefSchema, ref, SCHEDULE_INVALID_INPUT, 'ref');
  return withTransaction(db, 'run schedule now', async ({ tx, owned }) => {
    // FOR SHARE: a concurrent delete or redefinition waits until this job is enqueued from the definition read.
    const [row] = await tx.$queryRaw<ScheduleRow[]>`SELECT * FROM runledger.job_schedules WHERE schedule_key = ${key} FOR SHARE`;
    if (!row) throw scheduleNotFound(key, 'run schedule now');
    if (row.workflow_type !== null) {
      const [run] = await persistRuns(tx, [slotWorkflowRun(row, null)], owned);
      return { jobId: null, workflowRunId: run!.workflowRunId };
    }
    const job = slotJob(row, null, 'manual');
    await insertJobsTx(tx, [job]);
    return { jobId: job.id, workflowRunId: null };
  });
}

function slotJob(row: ScheduleRow, slot: Date | null, trigger: 'slot' | 'manual'): InsertJobRow {
  const key = slot === null ? null : slotIdempotencyKey(row.schedule_key, slot);
  const resource = row.resource_key;
  // A job schedule's row has both (job_schedules_one_target).
  const settings = {
    jobType: row.job_type!,
    organizationId: row.organization_id,
    payload: row.payload!,
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutSeconds: row.timeout_seconds,
  };
  return {
    id: newId(),
    ...settings,
    nextRunAt: null,
    idempotencyKey: key,
    // The same canonical request enqueueJob stores, so the key means the same thing to both.
    enqueueRequest: key === null ? null : canonicalJobRequest({ ...settings, resourceKey: resource, backoff: null }),
    // The ENQUEUED event says which schedule and slot made the job.
    eventPayload: { schedule: { key: row.schedule_key, trigger, ...(slot === null ? {} : { slot: slot.toISOString() }) } } satisfies JsonValue,
    resourceKey: resource,
  };
}

/** Inserts the slots' jobs in one statement; a slot whose key is taken reports the job holding it. */
async function insertSlotJobs(tx: Tx, slots: readonly { row: ScheduleRow; slot: Date; job: InsertJobRow }[]): Promise<MaterialisedSlot[]> {
  const inserted = new Set(
    await insertJobsTx(
      tx,
      slots.map((s) => s.job),
    ),
  );
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
    workflowRunId: null,
    disposition: inserted.has(job.id) ? ('inserted' as const) : ('existing' as const),
  }));
}

function lastOf(jobs: readonly MaterialisedSlot[], scheduleKey: string): MaterialisedSlot | undefined {
  const mine = jobs.filter((j) => j.scheduleKey === scheduleKey);
  return mine[mine.length - 1];
}
