/**
 * The workflow lock protocol, written once.
 *
 * Lock classes, always taken in this order within a transaction, and within a
 * class in one global order across everything the transaction touches (a
 * worker's completion batch spans many runs: it takes each class for the
 * WHOLE batch before the next class, never run by run):
 *   1. job_queue rows            (FOR UPDATE / UPDATE; ORDER BY id)
 *   2. workflow_steps rows       (FOR UPDATE; ORDER BY id)
 *        2a. the steps of the batch's own jobs (or, for run-level operations,
 *            all of the run's steps);
 *   3. the runs' release advisory locks (transaction-scoped; shared or
 *      exclusive; several runs: ORDER BY run id)
 *        2b. then, per cascade depth, the dependents of that depth's newly
 *            terminal steps (FOR UPDATE, ORDER BY id, all runs of the batch
 *            in one statement);
 *   4. the workflow_runs rows    (FOR UPDATE, ORDER BY id; last: status recompute)
 *
 * Who takes what:
 *   - Job-backed terminal completion of a batch (success, dead-letter, cancel
 *     of a job, reaped lease): all job rows (1) -> their step rows (2a) ->
 *     every affected run's release lock SHARED, blocking but bounded
 *     (RELEASE_LOCK_WAIT_MS, below PostgreSQL's 1 s deadlock_timeout so the
 *     bound fires before the deadlock detector) -> dependents (2b) depth by
 *     depth -> run rows (4). A timeout becomes `workflow.release_conflict`.
 *   - External completion: all of the run's step rows in id order (2a) ->
 *     release lock SHARED by try-lock only (never waits: cancellation may hold
 *     the exclusive form while waiting for these step rows) -> dependents (2b)
 *     -> run row (4).
 *   - Run cancellation: the run's job rows in id order (1) -> release lock
 *     EXCLUSIVE (waits for in-flight releases to finish; none can start after)
 *     -> job rows again (jobs released while it waited) -> all step rows in id
 *     order -> run row.
 *   - Claim / retry / release / continuation of a workflow job: job rows ->
 *     step rows (no release lock: they release nothing; a continued step
 *     stays live, src/queue/continue.ts).
 *   - Lease rows (runledger.job_leases, src/queue/statements/lease-rows.ts) are
 *     rung 1's appendix: a statement writes a job's lease row only after it
 *     holds that job's row (rung 1), in the same statement (claim: insert;
 *     completion, failure, continuation, release, reaper: delete; heartbeat:
 *     move its expiry; cancellation: mark it canceled), never before. So a
 *     wait for a lease row is a wait by a holder of its job row, which no other
 *     holder of that lease row lacks: lease rows add no cycle. The one writer
 *     that locks a lease row without its job row, the reaper's sweep of
 *     run-out canceled leases (their jobs finished), takes them with SKIP
 *     LOCKED and never waits.
 *   - Execution resources add no lock of their own: a claim locks job rows
 *     with SKIP LOCKED (never waits) and at most one job per key, and the
 *     key's reservation is the unique index over live lease rows' keys
 *     (job_leases_resource_uidx). Inserting
 *     into it waits only if another claim leased the same key in a statement
 *     whose snapshot missed ours, which the head rule makes rare; two such
 *     claims over two keys in opposite order would meet PostgreSQL's deadlock
 *     detector (40P01, `database.transaction_conflict`: retried like any
 *     failed claim), and a lost race is a unique violation that claimJobs
 *     retries (src/queue/claim.ts).
 *   - Concurrency keys' seats (runledger.concurrency_seats,
 *     src/queue/statements/concurrency-slots.ts, migration 20270101000006):
 *     a claim locks free seats after its job rows with SKIP LOCKED (never
 *     waits) and deletes the ones it leases with; a statement that ends a
 *     lease inserts its seat back after its job and lease rows, a seat no
 *     other statement can hold. No statement waits for a seat, so seats add
 *     no cycle. A key's limit row (runledger.concurrency_limits) is locked
 *     only by limit writes (an enqueue with SKIP LOCKED, setConcurrencyLimit
 *     with a wait on the one row), never by a claim or a lease end.
 *   - Rate keys' rows (runledger.rate_limits,
 *     src/queue/statements/rate-slots.ts) are locked by the claim only, after
 *     its concurrency seats, in key order, with waits. No statement that
 *     ends a lease touches them (a start's token is never given back), so
 *     they add no cycle; an enqueue changing a key's setting, and
 *     setRateLimit, take the row without waiting on job rows.
 *   - Fairness keys take no lock of their own: the claim's walk over keys
 *     (src/queue/statements/fair-turns.ts) reads index entries unlocked and
 *     locks each key's share of job rows with SKIP LOCKED, as the unkeyed
 *     scan does (job rows, no waits).
 *   - Attempt history (the job row's attempt columns and job_attempts rows, src/queue/attempt-row.ts) is rung 1's
 *     appendix, not a class of its own: a job's attempt row is opened and
 *     closed only by the statement that holds (or takes) that job's row, in
 *     the same statement, after it; no statement locks attempt rows on their
 *     own, so they add no wait another job-row holder could not.
 *   - Appending steps to a run (append.ts): the run's APPEND advisory lock
 *     (rung 0, blocking, taken only by appends, so appends to one run are
 *     serialised and each sees every step the previous one added) -> release
 *     lock SHARED by try-lock only (a cancellation that holds the exclusive
 *     form refuses the append at once: `workflow.release_conflict`) -> all of
 *     the run's step rows in id order (2a) -> run row (4), under which the
 *     run's status and the mutation key are read, the new rows written (new
 *     rows: nobody waits on them) and the status recomputed.
 *   - Enqueue with an active key (active-keys.ts): the key's ACTIVE-KEY
 *     advisory lock (rung 0, blocking; taken by nothing else, so it only
 *     orders enqueues of one key) -> the key's claim rows (5) -> the new run's
 *     rows (new: nobody waits on them).
 *   - Releasing active keys: claim rows (5) after the run rows (4), by the
 *     status recompute and by cancellation; the reaper's sweep takes claim
 *     rows with SKIP LOCKED (never waits).
 *   - Recovering a finished run (src/recovery/recover.ts): the source's
 *     ACTIVE-KEY lock when it was keyed (rung 0) -> the source run row FOR
 *     NO KEY UPDATE (4; serialises recoveries of one source) -> the key's
 *     claim rows (5) -> the new run's rows (new: nobody waits on them). It
 *     holds no job, step or release lock: the source is terminal, so nothing
 *     that takes those on it changes it any more, and its steps are only read.
 *   - A scheduler pass (src/schedules/run-due.ts): job_schedules rows first
 *     (rung 0, FOR UPDATE SKIP LOCKED: never waits), then only new rows: the
 *     slots' jobs and workflow runs (with their steps), whose unique
 *     idempotency keys make a second materialiser wait for the first's commit
 *     and then skip. Nothing locks a schedule row after any class above, so
 *     the pass adds no cycle. Its per-schedule savepoints release the locks of
 *     the rows they roll back and take no new class.
 *   - Declaring schedules (src/schedules/declare.ts): the DECLARE advisory
 *     lock (rung 0, blocking, one key for every owner) -> schedule rows
 *     (upsert in key order, then prune). Declarations are serialised, so two
 *     that prune each other's keys (a rolling deploy) cannot deadlock; a
 *     scheduler pass never waits for them (SKIP LOCKED), and upsertSchedule
 *     writes one row in one statement.
 *   - Recording durable functions' steps (src/workflow/function-statements.ts):
 *     the bodies' job rows (1, FOR UPDATE in id order, each named by its
 *     attempt's lease; a batch carries steps of several attempts:
 *     function-record-batch.ts) -> new FUNCTION step rows (nobody waits on them). Inside a transactional
 *     step the host's own locks come first, as for a transactional handler.
 *     It takes no step, release or run lock: the row is inserted terminal,
 *     with no edges, and the run stays RUNNING while its body's step lives.
 *   - A durable function's signal wait and a signal to it (src/workflow/function-wait-statements.ts,
 *     function-signal.ts): the body's `$function` job row (1, FOR UPDATE; the wait names it by its lease,
 *     the send by the run), then, in a second statement whose snapshot is taken once that lock is held,
 *     the run's mailbox rows (workflow_signals, FOR UPDATE; only ever locked under that job row, so they
 *     add no wait of their own) and the wait's FUNCTION step row (2: an open wait FOR UPDATE, or a new
 *     row nobody waits on), and the same job row again to wake it (function-wake.ts: already held).
 *     A send inside the host's transaction takes the host's locks first, then these, and holds the job
 *     row to the host's commit: the body's attempt waits for it only when it records a step (its claim
 *     skips a locked row), and that host transaction waits for nothing the attempt holds.
 *   - A durable function's child run (src/workflow/function-child.ts): its start takes the parent's body
 *     job row (1, by the lease), then only new rows (the child run, its steps and jobs, the `$child:`
 *     step row). Its end wakes the parent: the statement that makes the child run terminal (the status
 *     recompute in run-status.ts, or cancellation's notifyWorkflowRunTerminal) updates the parent's body
 *     job row LAST, after the child's job, step, release, run and counter locks. That is out of the
 *     ladder's order, and bounded by what a holder of the parent's job row can wait for: its own claim
 *     (SKIP LOCKED elsewhere), its continuation or step records (the parent's own step rows, new rows), a
 *     signal (the parent's own step rows), cancellation of the parent (the parent run's rows). None of
 *     these is held by the child's transaction. The one cycle left: the parent's body completing in a
 *     batch that also finishes a job of the child run (or a job counted on the same counter shard and
 *     key), while the child's last job completes in another batch; PostgreSQL's detector ends it
 *     (`database.transaction_conflict`, retried like any conflict), as for counters below.
 *   - Enqueue windows (debounce and throttle, src/queue/statements/enqueue-windows.ts): the batch's
 *     enqueue_windows rows (rung 0, FOR UPDATE in (job type, organization, kind, key) order; a new key's
 *     row by its unique insert, in the same order) -> the window's job row (1: a debounce re-arm's UPDATE,
 *     which waits for a claim holding it and then re-checks it) -> only new rows (the new window's job).
 *     A job is the job of one window only, so two enqueues never want one job row without first queueing
 *     for its window row; a claim or any lifecycle write holds job rows without waiting for window rows;
 *     the purge trigger (job_queue_delete_windows) takes window rows with SKIP LOCKED. Two exceptions, each
 *     ended by PostgreSQL's detector (`database.transaction_conflict`): a host transaction that locked a
 *     window's job row (e.g. canceled it) and then enqueues that key while another enqueue of the key waits
 *     for the job; and a batch that found a key raced (a concurrent first request committed it after the
 *     statement's snapshot) and locks it in a second pass, after keys it locked in the first.
 *   - The job definitions catalog (src/queue/catalog.ts) takes no part:
 *     enqueues read it without locking; a sync upserts its rows in job-type
 *     order in one statement and holds no other lock class. Recording an
 *     enqueue intent locks nothing. Promoting intents (src/queue/intent-row.ts)
 *     takes intent rows with SKIP LOCKED (never waits), then inserts direct
 *     jobs: new rows, whose key index may wait for a concurrent inserter of
 *     the same key, which holds no intent row it could wait for in turn.
 *
 * The append takes rung 3 before rung 2, and that cannot close a cycle: the
 * try-lock itself never waits, and the only transaction that waits without a
 * bound for a shared holder is a cancellation requesting the exclusive form,
 * which holds no step row while it waits (it locks them after). A completion
 * queued for the shared form behind such a cancellation waits bounded, as
 * always. So an append that holds the shared lock and waits for step rows
 * waits only for transactions that finish without it.
 *
 * Finished-job counters (rung 6, job_counts rows; src/queue/statements/finished-counts.ts). Every statement
 * that finishes jobs (completion, failure to dead letter, cancel of a job or of a run's jobs, the reaper) adds
 * to its counters in one upsert, in key order (minute, type, organization, status, kind), as an unreferenced
 * CTE, which PostgreSQL runs after the statement's main query: so within a statement they are the last lock,
 * and two statements share at most a prefix of the same ordered list, which cannot close a cycle. A counter
 * row is held to commit; the worker's completion transaction goes on to rungs 2b-4 holding it. A cycle
 * through counters therefore needs two transactions of the same shard (backend pid modulo 16), one holding
 * a counter and waiting for a run or step row, the other holding that row and running a second terminal
 * statement on the same counter: only a host transaction that finishes jobs twice could do it, and
 * PostgreSQL's detector ends it (`database.transaction_conflict`, retried like any conflict). The shard
 * keeps concurrent workers of one type and minute off one row (test/integration/finished-counts.test.ts).
 *
 * Rungs 0 and 5. Rung 0 locks are taken first and by nothing that holds
 * another lock class, so no waiter on them holds anything a rung-0 holder
 * waits for. Claim rows (5) are taken last; their only blocking takers are
 * enqueues of a key (for a terminal holder's claim, which no status path
 * changes any more) and the release paths (for their own runs' claims).
 *
 * Appends and the "no dependents" shortcut. Job-backed completion decides in
 * one statement whether its step has dependents (terminal.ts: steps without
 * any skip the release lock and the cascade). That statement may wait for the
 * step row an append holds and then read the edges with its older snapshot,
 * missing the edges the append just committed. So the status recompute that
 * follows reads the edges of those steps again with a fresh snapshot (the
 * append committed before the step row was granted) and releases late
 * dependents before any run row is locked (`recomputeAfterTerminal`).
 *
 * Why it cannot deadlock. Two transactions can only wait on each other in a
 * cycle if one holds a lock of a class (or an id within a class) that comes
 * later than one it waits for. Every path above climbs the same ladder, and
 * within one class takes its rows in id order in one statement, for its whole
 * batch. The exceptions, each bounded:
 *   - Cancellation re-locks job rows (1) after taking the exclusive lock (3):
 *     a job-backed completion may hold such a row and wait for the shared
 *     lock. That wait is bounded and turns into `workflow.release_conflict` (it
 *     rolls back, the job stays leased and is retried), so the cycle always
 *     breaks on the completion's side, never by a deadlock error.
 *   - Dependents are locked depth by depth (2b): a step canceled at depth k
 *     has its own dependents locked at depth k + 1, after depth k's rows. A
 *     concurrent batch B can hold one of those (d, a dependent of a step B
 *     completes) while waiting, in its own depth-1 statement, for a row after
 *     d in id order that we locked at depth k. So from depth 2 on the wait is
 *     bounded (RELEASE_LOCK_WAIT_MS) and becomes `workflow.release_conflict`:
 *     we roll back, B proceeds, we are retried. Depth 1 waits unbounded.
 * Shared holders never block each other: concurrent completions in one run
 * release in parallel, serialised only by the dependent step rows they share.
 * Why the old per-run loop deadlocked: batch A locked run X's dependent then
 * waited for run Y's while batch B held Y's and waited for X's; taking class
 * 2b for the whole batch in one id-ordered statement removes that order
 * inversion.
 */
import { empty, sqltag, type Sql } from '@prisma/client/runtime/client';
import type { Tx } from '../client/types.js';
import { databaseErrorInfo } from '../errors/database-error.js';
import { ConflictError } from '../errors/runledger-error.js';

/** Namespace of runledger's two-key advisory locks ('RUNL'). */
export const RELEASE_LOCK_NAMESPACE = 0x52554e4c;
/** Namespace of the per-run append locks ('RUNA'), rung 0. */
export const APPEND_LOCK_NAMESPACE = 0x52554e41;
/** Namespace of the per-(scope, key) active-key locks ('RUNK'), rung 0. */
export const ACTIVE_KEY_LOCK_NAMESPACE = 0x52554e4b;
/** Namespace of the schedule-declaration lock ('RUNS'), rung 0: one declaration (declareSchedules) at a time. */
export const SCHEDULE_DECLARE_LOCK_NAMESPACE = 0x52554e53;
/** Bound on waiting for the shared release lock; below deadlock_timeout (1 s by default). */
export const RELEASE_LOCK_WAIT_MS = 500;

/** Proof, for functions that release steps, that the caller holds these runs' release locks. */
export interface ReleaseLocksHeld {
  readonly workflowRunIds: ReadonlySet<string>;
  readonly mode: 'shared' | 'exclusive';
}

export function releaseConflict(workflowRunId: string, internal: string, cause?: unknown, workflowRunIds?: readonly string[]): ConflictError {
  return new ConflictError('workflow.release_conflict', 'The workflow run is being changed concurrently (for example canceled); retry.', {
    internalMessage: `run ${workflowRunId}: ${internal}`,
    details: workflowRunIds && workflowRunIds.length > 1 ? { workflowRunIds: [...workflowRunIds] } : { workflowRunId },
    cause,
  });
}

/**
 * Blocking shared acquire of several runs' release locks, in run id order,
 * with a bounded wait, in one statement. The caller's own lock_timeout is
 * read first and restored after the locks are granted, so a joined
 * transaction keeps its settings; the nesting fixes the order: `prev` is
 * materialised before `bounded` sets the bound, every lock is requested
 * after it (a join needs both sides), and the restore runs on the aggregate
 * of all grants.
 */
export async function lockRunsReleaseShared(tx: Tx, workflowRunIds: Iterable<string>): Promise<ReleaseLocksHeld> {
  const ids = [...new Set(workflowRunIds)].sort();
  if (ids.length === 0) return { workflowRunIds: new Set(), mode: 'shared' };
  try {
    await tx.$queryRaw`
      WITH ${boundedReleaseLocksShared(sqltag`SELECT id FROM unnest(${ids}::uuid[]) WITH ORDINALITY AS u(id, ord) ORDER BY ord`)}
      SELECT v AS restored FROM restored`;
  } catch (error) {
    if (databaseErrorInfo(error).sqlState === '55P03') {
      throw releaseConflict(ids.length === 1 ? ids[0]! : `${ids.length} runs`, `shared release lock not granted within ${RELEASE_LOCK_WAIT_MS} ms`, error, ids);
    }
    throw error;
  }
  return { workflowRunIds: new Set(ids), mode: 'shared' };
}

/**
 * Rung 3's bounded shared acquire as four CTEs, for a statement that takes it
 * after its own locks (one round trip): `prev` reads the caller's
 * lock_timeout (and evaluates `before`, e.g. a count over the CTEs that take
 * rungs 1-2, so those run first), `bounded` sets RELEASE_LOCK_WAIT_MS,
 * `granted` takes the release lock of each run `runIds` yields (a query of
 * `id`s in run id order), `restored` puts the caller's lock_timeout back.
 * The statement selects from `restored` (as the outer side of its final
 * join), so the restore always runs. A wait past the bound raises 55P03:
 * the caller maps it to `releaseConflict`.
 */
export function boundedReleaseLocksShared(runIds: Sql, before: Sql = empty): Sql {
  return sqltag`prev AS MATERIALIZED (SELECT current_setting('lock_timeout') AS previous${before}),
    bounded AS MATERIALIZED (SELECT previous, set_config('lock_timeout', ${`${RELEASE_LOCK_WAIT_MS}ms`}, true) AS bound FROM prev),
    granted AS MATERIALIZED (
      SELECT count(pg_advisory_xact_lock_shared(${RELEASE_LOCK_NAMESPACE}::int, hashtext(r.id::text)) IS NULL) AS n
        FROM bounded, (${runIds}) r
    ),
    restored AS MATERIALIZED (SELECT set_config('lock_timeout', bounded.previous, true) AS v FROM bounded, granted)`;
}

/** Shared acquire that never waits: null when cancellation holds the exclusive form. */
export async function tryLockRunReleaseShared(tx: Tx, workflowRunId: string): Promise<ReleaseLocksHeld | null> {
  const rows = await tx.$queryRaw<{ granted: boolean }[]>`
    SELECT pg_try_advisory_xact_lock_shared(${RELEASE_LOCK_NAMESPACE}::int, hashtext(${workflowRunId}::text)) AS granted`;
  return rows[0]?.granted ? { workflowRunIds: new Set([workflowRunId]), mode: 'shared' } : null;
}

/** Exclusive acquire for cancellation: waits until in-flight releases commit. */
export async function lockRunReleaseExclusive(tx: Tx, workflowRunId: string): Promise<ReleaseLocksHeld> {
  // $executeRaw: the function returns void, which $queryRaw cannot decode.
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${RELEASE_LOCK_NAMESPACE}::int, hashtext(${workflowRunId}::text))`;
  return { workflowRunIds: new Set([workflowRunId]), mode: 'exclusive' };
}

/** Locks every job row of the run's steps, in id order (rung 1). */
export async function lockRunJobRows(tx: Tx, workflowRunId: string): Promise<void> {
  await tx.$queryRaw`
    SELECT jq.id
      FROM runledger.job_queue jq
      JOIN runledger.workflow_steps ws ON ws.job_id = jq.id
     WHERE ws.workflow_run_id = ${workflowRunId}::uuid
     ORDER BY jq.id
       FOR UPDATE OF jq`;
}

/** Locks every step row of the run, in id order (rung 2). Returns how many. */
export async function lockRunStepRows(tx: Tx, workflowRunId: string): Promise<number> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM runledger.workflow_steps
     WHERE workflow_run_id = ${workflowRunId}::uuid
     ORDER BY id
       FOR UPDATE`;
  return rows.length;
}

/** Rung 0 for appends: serialises appends to one run (blocking; held until the transaction ends). */
export async function lockRunAppend(tx: Tx, workflowRunId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${APPEND_LOCK_NAMESPACE}::int, hashtext(${workflowRunId}::text))`;
}

/**
 * Rung 0 for an active key: serialises enqueues of one (scope, key). A hash
 * collision only serialises two unrelated keys, never merges them: the claim
 * itself is decided by the rows.
 */
export async function lockActiveKey(tx: Tx, scope: string, activeKey: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ACTIVE_KEY_LOCK_NAMESPACE}::int, hashtext(${scope}::text || chr(10) || ${activeKey}::text))`;
}
