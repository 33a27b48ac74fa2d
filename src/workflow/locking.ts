/**
 * The workflow lock protocol, written once.
 *
 * Locks, always taken in this order within a transaction:
 *   1. job_queue rows            (FOR UPDATE / UPDATE; several rows: ORDER BY id)
 *   2. workflow_steps rows       (FOR UPDATE; several rows: ORDER BY id)
 *   3. the run's release advisory lock (transaction-scoped; shared or exclusive)
 *   4. the workflow_runs row     (FOR UPDATE, last: status recompute)
 *
 * Who takes what:
 *   - Job-backed terminal completion (success, dead-letter, cancel of a job):
 *     job row -> its step row -> release lock SHARED, blocking but bounded
 *     (RELEASE_LOCK_WAIT_MS, below PostgreSQL's 1 s deadlock_timeout so the
 *     bound fires before the deadlock detector) -> dependents' step rows in id
 *     order -> run row. A timeout becomes `workflow.release_conflict`.
 *   - External completion: all of the run's step rows in id order -> release
 *     lock SHARED by try-lock only (never waits: cancellation may hold the
 *     exclusive form while waiting for these step rows) -> run row.
 *   - Run cancellation: the run's job rows in id order -> release lock
 *     EXCLUSIVE (waits for in-flight releases to finish; none can start after)
 *     -> job rows again (jobs released while it waited) -> all step rows in id
 *     order -> run row.
 *   - Claim / retry of a workflow job: job row -> step row (no release lock:
 *     they release nothing).
 *
 * Why it cannot deadlock: every path climbs the same ladder. The one exception
 * is cancellation re-locking job rows (1) after taking the exclusive lock (3):
 * a job-backed completion may hold such a row and wait for the shared lock.
 * That completion's wait is bounded and turns into `workflow.release_conflict`
 * (it rolls back, the job stays leased and is retried or reaped), so the cycle
 * always breaks on the completion's side, never by a deadlock error.
 * Shared holders never block each other: concurrent completions in one run
 * release in parallel, serialised only by the dependent step rows they share
 * (locked in id order before any counter changes).
 */
import type { Tx } from '../client/types.js';
import { databaseErrorInfo } from '../errors/database-error.js';
import { ConflictError } from '../errors/runledger-error.js';

/** Namespace of runledger's two-key advisory locks ('RUNL'). */
const RELEASE_LOCK_NAMESPACE = 0x52554e4c;
/** Bound on waiting for the shared release lock; below deadlock_timeout (1 s by default). */
export const RELEASE_LOCK_WAIT_MS = 500;

/** Proof, for functions that release steps, that the caller holds the run's release lock (shared). */
export interface ReleaseLockHeld {
  readonly workflowRunId: string;
  readonly mode: 'shared' | 'exclusive';
}

export function releaseConflict(workflowRunId: string, internal: string, cause?: unknown): ConflictError {
  return new ConflictError('workflow.release_conflict', 'The workflow run is being changed concurrently (for example canceled); retry.', {
    internalMessage: `run ${workflowRunId}: ${internal}`,
    details: { workflowRunId },
    cause,
  });
}

/**
 * Blocking shared acquire with a bounded wait. The caller's own lock_timeout is
 * restored afterwards, so a joined transaction keeps its settings.
 */
export async function lockRunReleaseShared(tx: Tx, workflowRunId: string): Promise<ReleaseLockHeld> {
  // Statement 1 reads the caller's lock_timeout before bounding it (the
  // MATERIALIZED CTE row exists before the projection calls set_config).
  const rows = await tx.$queryRaw<{ previous: string }[]>`
    WITH prev AS MATERIALIZED (SELECT current_setting('lock_timeout') AS previous)
    SELECT previous, set_config('lock_timeout', ${`${RELEASE_LOCK_WAIT_MS}ms`}, true) AS bounded FROM prev`;
  const previous = rows[0]?.previous ?? '0';
  try {
    // Statement 2 waits for the lock, then restores the caller's setting; the
    // OFFSET 0 subquery is evaluated first and is never flattened.
    await tx.$queryRaw`
      SELECT set_config('lock_timeout', ${previous}, true) AS restored
        FROM (SELECT pg_advisory_xact_lock_shared(${RELEASE_LOCK_NAMESPACE}::int, hashtext(${workflowRunId}::text))::text AS granted OFFSET 0) locked`;
  } catch (error) {
    if (databaseErrorInfo(error).sqlState === '55P03') {
      throw releaseConflict(workflowRunId, `shared release lock not granted within ${RELEASE_LOCK_WAIT_MS} ms`, error);
    }
    throw error;
  }
  return { workflowRunId, mode: 'shared' };
}

/** Shared acquire that never waits: null when cancellation holds the exclusive form. */
export async function tryLockRunReleaseShared(tx: Tx, workflowRunId: string): Promise<ReleaseLockHeld | null> {
  const rows = await tx.$queryRaw<{ granted: boolean }[]>`
    SELECT pg_try_advisory_xact_lock_shared(${RELEASE_LOCK_NAMESPACE}::int, hashtext(${workflowRunId}::text)) AS granted`;
  return rows[0]?.granted ? { workflowRunId, mode: 'shared' } : null;
}

/** Exclusive acquire for cancellation: waits until in-flight releases commit. */
export async function lockRunReleaseExclusive(tx: Tx, workflowRunId: string): Promise<ReleaseLockHeld> {
  // $executeRaw: the function returns void, which $queryRaw cannot decode.
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${RELEASE_LOCK_NAMESPACE}::int, hashtext(${workflowRunId}::text))`;
  return { workflowRunId, mode: 'exclusive' };
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
