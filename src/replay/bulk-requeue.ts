/**
 * Bulk requeue of dead letters: every DEAD_LETTERED direct job matching a
 * filter (type, last error code, dead-lettered between two times), up to a
 * cap, starts a new run in place, as compareAndRequeueJob does for one job
 * (requeue.ts: same transition, same cleared columns, same REQUEUED event),
 * in one transaction and a constant number of statements whatever the count.
 *
 * One audited operation: the call draws one `operationId`, and every job's
 * REQUEUED event carries it with the operator's `reason` and the filter, so
 * the trail of each job says which operation requeued it and why, and the
 * operation's jobs are found again by that id.
 *
 * Statements: (1) the matching rows, locked `FOR UPDATE SKIP LOCKED` in
 * (dead_lettered_at, id) order (the finish time, for a dead letter) up to the cap; (2) one `unnest` UPDATE of those
 * rows with their events and one NOTIFY per job type; (3) whether more rows
 * still match (the cap left some). The preview (`countDeadLetteredJobs`) is
 * one count bounded by `max`.
 *
 * Locks: the job rows only. SKIP LOCKED means the operation never waits for
 * a row, so it cannot take part in a deadlock; a row another transaction
 * holds (a single requeue, a purge) is left to it and not counted. Workflow
 * jobs are never selected (a failed run is recovered as a whole, src/recovery).
 * A dead letter holds no live lease, so no quiescence check is needed (that
 * is for CANCELED jobs only).
 *
 * Cost on a large table: statements (1) and the preview read direct dead
 * letters only, through job_queue_dead_letter_idx (by organization and type,
 * then finish time), never the history
 * (test/integration/dashboard-fleet-plans.test.ts, on 1M jobs).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { z } from 'zod';
import { withStatement, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { newId } from '../db/ids.js';
import { scopeSchema, type Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { parseInput } from '../validation/parse.js';
import { nonBlank, positiveInt, timestamp } from '../validation/primitives.js';
import { REQUEUE_STATE_POLICIES, type RequeueStatePolicy } from './inputs.js';
import { JOB_INVALID_INPUT } from '../queue/inputs.js';
import { inScopeByKind } from '../db/fragments.js';
import { requeueDeadLettersStatement, type PickedDeadLetter as Picked } from '../queue/statements/requeue-jobs.js';

/** The most jobs one bulk requeue may start again. */
export const MAX_BULK_REQUEUE = 1_000;
/** The most a preview may count; past it the answer is "more than". */
export const MAX_BULK_PREVIEW = 10_000;
/**
 * What a preview counts by default: as many as one requeue may take, so the answer is exact wherever it decides
 * anything. Counting further reads further: on 1M jobs, 10,000 fresh dead letters (not yet all-visible, as after
 * an incident) cost 25 to 70 ms, 1,000 a few.
 */
export const DEFAULT_BULK_PREVIEW = MAX_BULK_REQUEUE;

export const deadLetterFilterSchema = z.strictObject({
  jobType: nonBlank(200).optional(),
  errorCode: nonBlank(200).optional(),
  /** Dead-lettered at or after this time. */
  finishedAfter: timestamp.optional(),
  /** Dead-lettered before this time. */
  finishedBefore: timestamp.optional(),
});
export type DeadLetterFilter = z.input<typeof deadLetterFilterSchema>;
type ParsedFilter = z.output<typeof deadLetterFilterSchema>;

export const countDeadLetteredJobsInputSchema = z.strictObject({
  scope: scopeSchema,
  filter: deadLetterFilterSchema.default({}),
  max: positiveInt.max(MAX_BULK_PREVIEW).default(DEFAULT_BULK_PREVIEW),
});
export type CountDeadLetteredJobsInput = z.input<typeof countDeadLetteredJobsInputSchema>;

export const requeueDeadLetteredJobsInputSchema = z.strictObject({
  scope: scopeSchema,
  filter: deadLetterFilterSchema.default({}),
  /** The cap: at most this many jobs are requeued (1 to MAX_BULK_REQUEUE). */
  limit: positiveInt.max(MAX_BULK_REQUEUE, `must be at most ${MAX_BULK_REQUEUE}`),
  /** Audit text, recorded on every requeued job's REQUEUED event. */
  reason: nonBlank(1_000),
  statePolicy: z.enum(REQUEUE_STATE_POLICIES).default('preserve_progress_and_checkpoint'),
});
export type RequeueDeadLetteredJobsInput = z.input<typeof requeueDeadLetteredJobsInputSchema>;

export interface DeadLetterCount {
  /** Matching dead letters, counted up to `max`. */
  count: number;
  /** More than `max` match. */
  more: boolean;
}

export interface RequeueDeadLetteredJobsResult {
  /** Recorded as `operationId` on every REQUEUED event this call wrote. */
  operationId: string;
  /** The requeued jobs (now PENDING, next run), in the order they were taken. */
  jobIds: string[];
  /** Matching dead letters are left: the cap was reached (or a row was held by another transaction). */
  more: boolean;
  statePolicy: RequeueStatePolicy;
}

const EMPTY = sqltag``;

/**
 * The dead letters `scope` and `filter` select. Each condition is in the text only when it applies (the
 * statement has a few shapes, not one with `$1 IS NULL OR ...` arms), so even a generic plan reads
 * job_queue_dead_letter_idx ((organization_id, job_type, dead_lettered_at, id) over direct dead letters)
 * by organization and type, instead of filtering every dead letter on the heap. `dead_lettered_at` is the
 * finish time of a DEAD_LETTERED job and NULL otherwise (generated: migration 20261228000000), the index's
 * predicate in place of `status`, which a completion changes.
 */
function matching(scope: Scope, f: ParsedFilter): Sql {
  return sqltag`jq.dead_lettered_at IS NOT NULL AND jq.workflow_step_id IS NULL AND ${inScopeByKind(scope, 'jq.organization_id')}
       ${f.jobType === undefined ? EMPTY : sqltag`AND jq.job_type = ${f.jobType}::text`}
       ${f.errorCode === undefined ? EMPTY : sqltag`AND jq.last_error_code = ${f.errorCode}::text`}
       ${f.finishedAfter === undefined ? EMPTY : sqltag`AND jq.dead_lettered_at >= ${f.finishedAfter}::timestamptz`}
       ${f.finishedBefore === undefined ? EMPTY : sqltag`AND jq.dead_lettered_at < ${f.finishedBefore}::timestamptz`}`;
}

/** The preview's statement (exported for the plan test). */
export function deadLetterCountQuery(scope: Scope, filter: ParsedFilter, max: number): Sql {
  return sqltag`
    SELECT count(*)::int AS n FROM (
      SELECT 1 FROM runledger.job_queue jq WHERE ${matching(scope, filter)} LIMIT ${max + 1}::int
    ) m`;
}

/** The most groups the dashboard's dead-letter list shows (largest first). */
export const MAX_DEAD_LETTER_GROUPS = 200;

/**
 * Direct dead letters in `scope` grouped by type and last error code: how many, the oldest and newest
 * dead-lettering, and the newest one's message (cut to 500 characters) as a sample. One statement; it reads
 * every direct dead letter in scope once (job_queue_dead_letter_idx's predicate), so its cost is the backlog of
 * dead letters, which a requeue or retention empties, never the history of succeeded jobs.
 */
export function deadLetterGroupsQuery(scope: Scope): Sql {
  return sqltag`
    WITH d AS MATERIALIZED (
      SELECT jq.job_type, jq.last_error_code, jq.last_error_message, jq.finished_at, jq.id
        FROM runledger.job_queue jq WHERE ${matching(scope, {})}
    ),
    g AS (
      SELECT job_type, last_error_code, count(*)::int AS n, min(finished_at) AS oldest, max(finished_at) AS newest FROM d GROUP BY 1, 2
    ),
    sample AS (
      SELECT DISTINCT ON (job_type, last_error_code) job_type, last_error_code, left(last_error_message, 500) AS message
        FROM d ORDER BY job_type, last_error_code, finished_at DESC, id DESC
    )
    SELECT g.job_type, g.last_error_code, g.n, g.oldest, g.newest, sample.message
      FROM g JOIN sample ON sample.job_type = g.job_type AND sample.last_error_code IS NOT DISTINCT FROM g.last_error_code
     ORDER BY g.n DESC, g.job_type, g.last_error_code NULLS LAST
     LIMIT ${MAX_DEAD_LETTER_GROUPS + 1}::int`;
}

/** The rows statement (1) locks (exported for the plan test). */
export function deadLetterPickQuery(scope: Scope, filter: ParsedFilter, limit: number): Sql {
  return sqltag`
    SELECT jq.id, jq.run_number, jq.last_error_code, jq.last_error_message
      FROM runledger.job_queue jq
     WHERE ${matching(scope, filter)}
     ORDER BY jq.dead_lettered_at, jq.id
     LIMIT ${limit}::int
       FOR UPDATE OF jq SKIP LOCKED`;
}

/**
 * How many dead letters match this filter, counted up to `max` (default 1,000, the most one requeue takes; at most 10,000).
 *
 * @example
 * const { count, more } = await countDeadLetteredJobs(prisma, { scope: adminScope(), filter: { jobType: 'mail.send' } });
 */
export async function countDeadLetteredJobs(db: Db, input: CountDeadLetteredJobsInput): Promise<DeadLetterCount> {
  const { scope, filter, max } = parseInput(countDeadLetteredJobsInputSchema, input, JOB_INVALID_INPUT);
  const [row] = await withStatement(
    db,
    'count dead-lettered jobs',
    async (tx) => tx.$queryRaw<{ n: number }[]>(...asTemplate(deadLetterCountQuery(scope, filter, max))),
    {
      readCommitted: false,
    },
  );
  const n = row?.n ?? 0;
  return { count: Math.min(n, max), more: n > max };
}

/**
 * Requeues up to `limit` dead-lettered direct jobs matching `filter`, as one audited operation (module comment).
 * Joins the caller's interactive transaction or opens its own.
 *
 * @example
 * const result = await requeueDeadLetteredJobs(prisma, {
 *   scope: adminScope(),
 *   filter: { jobType: 'mail.send', errorCode: 'smtp.timeout' },
 *   limit: 500,
 *   reason: 'SMTP relay back after incident 4411',
 * });
 */
export async function requeueDeadLetteredJobs(db: Db, input: RequeueDeadLetteredJobsInput): Promise<RequeueDeadLetteredJobsResult> {
  const request = parseInput(requeueDeadLetteredJobsInputSchema, input, JOB_INVALID_INPUT);
  const operationId = newId();
  return withTransaction(db, 'requeue dead-lettered jobs', async ({ tx }) => {
    const picked = await tx.$queryRaw<Picked[]>(...asTemplate(deadLetterPickQuery(request.scope, request.filter, request.limit)));
    const jobIds = picked.length === 0 ? [] : await requeuePickedTx(tx, picked, request, operationId);
    const [rest] = await tx.$queryRaw<{ more: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM runledger.job_queue jq WHERE ${matching(request.scope, request.filter)}) AS more`;
    return { operationId, jobIds, more: rest?.more ?? false, statePolicy: request.statePolicy };
  });
}

async function requeuePickedTx(tx: Tx, picked: Picked[], request: z.output<typeof requeueDeadLetteredJobsInputSchema>, operationId: string): Promise<string[]> {
  const reset = request.statePolicy === 'reset_progress_and_checkpoint';
  const filter = JSON.stringify(request.filter);
  const rows = await tx.$queryRaw<{ id: string }[]>(
    ...asTemplate(
      requeueDeadLettersStatement(
        picked,
        picked.map(() => newId()),
        request.statePolicy,
        reset,
        operationId,
        request.reason,
        filter,
      ),
    ),
  );
  return rows.map((row) => row.id);
}
