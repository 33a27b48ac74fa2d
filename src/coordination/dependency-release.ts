/**
 * Dependency release: the breadth-first cascade that follows steps becoming
 * terminal (seed `resolve_terminal_step_queue_tx`), set-based across a whole
 * batch: one statement per cascade depth, whatever the number of steps, runs
 * and dependents.
 *
 * One level (`releaseLevel`), for a frontier of newly terminal steps of any
 * number of runs:
 *   1. read the frontier's outgoing edges; an edge recorded under another run
 *      than its prerequisite's fails closed (`workflow.internal_state`) before
 *      anything of the level changes (the schema's (run, step) foreign keys
 *      already forbid it: this is defence in depth);
 *   2. lock every direct dependent of the whole frontier FOR UPDATE in id
 *      order (one global order across runs, so intersecting fan-outs and
 *      cross-run batches take shared rows in one order); a dependent outside
 *      its edge's run fails closed the same way;
 *   3. one UPDATE over the dependents, aggregated per dependent: pending minus
 *      the number of its frontier prerequisites, unsatisfied plus those of them
 *      that did not succeed on an ON_SUCCESS edge. READ COMMITTED re-reads a
 *      row updated concurrently, so the arithmetic applies to the latest
 *      committed counters. A dependent that reaches pending = 0 while BLOCKED
 *      moves in the same UPDATE: with unsatisfied = 0 a JOB step becomes
 *      ENQUEUED with a new job id, an EXTERNAL step WAITING_FOR_EXTERNAL;
 *      otherwise it is CANCELED with `workflow.dependency_unsatisfied`;
 *   4. the released job steps' jobs and the wake-up notification are
 *      inserted by the same statement (their ENQUEUED events are derived
 *      from the job rows: the job_trail view).
 * The steps canceled in 3 are the next level's frontier.
 *
 * Time follows cause. A dependent's release (or cancellation) time and its new
 * job's created_at / next_run_at (its derived ENQUEUED event's time) all take one
 * `clock_timestamp()` read once every dependent of the level is locked, not
 * `now()`: `now()` is this transaction's start, which can predate the commit
 * of a concurrent batch that finished another prerequisite of the same
 * dependent (we waited for its lock on the dependent row, or the caller's
 * transaction simply began earlier). Every other prerequisite's finish was
 * written by a transaction that decremented this dependent's counter under
 * its row lock and committed before we got the lock (or by this transaction,
 * earlier), so the clock read after the lock is >= each of them; GREATEST
 * over the prerequisites would need every incoming edge read again.
 *
 * Callers hold the release lock (shared) of every run in the frontier,
 * proven by `ReleaseLocksHeld` (see locking.ts for the protocol).
 */
import type { Tx } from '../client/types.js';
import { JOB_AVAILABLE_CHANNEL } from '../model/constants.js';
import { InternalError } from '../errors/runledger-error.js';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_TIMEOUT_SECONDS } from '../job/defaults.js';
import { databaseErrorInfo } from '../errors/database-error.js';
import { RELEASE_LOCK_WAIT_MS, releaseConflict, type ReleaseLocksHeld } from './locking.js';

export const DEPENDENCY_UNSATISFIED = 'workflow.dependency_unsatisfied';
const DEPENDENCY_UNSATISFIED_MESSAGE = 'Step dependency requirements were not satisfied.';

export function internalState(internalMessage: string): InternalError {
  return new InternalError('workflow.internal_state', 'The workflow run is in an inconsistent state.', { internalMessage });
}

/** A step that just became terminal, with its run (the run it must release within). */
export interface TerminalStep {
  stepId: string;
  workflowRunId: string;
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELED';
  /** False when the step is known to have no dependents (nothing to release); unknown counts as true. */
  hasDependents?: boolean;
}

/**
 * Runs the cascade from `initial` to the end: one statement per depth.
 * Returns the runs in which a job step was released (ENQUEUED): they have
 * live work, so they are RUNNING.
 */
export async function releaseDependents(tx: Tx, locks: ReleaseLocksHeld, initial: readonly TerminalStep[]): Promise<Set<string>> {
  const runsWithReleasedJobs = new Set<string>();
  let frontier = [...initial];
  for (let depth = 1; frontier.length > 0; depth += 1) {
    for (const step of frontier) {
      if (!locks.workflowRunIds.has(step.workflowRunId)) {
        throw internalState(`release of step ${step.stepId} in run ${step.workflowRunId} without its release lock`);
      }
    }
    const level = await releaseLevel(tx, frontier, depth > 1);
    for (const runId of level.runsWithReleasedJobs) runsWithReleasedJobs.add(runId);
    frontier = level.canceled;
  }
  return runsWithReleasedJobs;
}

interface LevelRow {
  /** Null: the level had no edges (the row only carries the restored setting). */
  kind: 'canceled' | 'released_job' | 'released_external' | 'foreign_edge' | 'outside_run' | null;
  step_id: string | null;
  workflow_run_id: string | null;
  detail: string | null;
}

/**
 * One cascade depth. `boundedWait`: from the second depth on, waiting for a
 * dependent's lock is bounded (RELEASE_LOCK_WAIT_MS) and a timeout becomes
 * `workflow.release_conflict` (see locking.ts: the one lock wait that could
 * otherwise close a cycle). The caller's lock_timeout is restored by the same
 * statement (`restored` is the outer side of the final join, so it is always
 * evaluated, after `locked` has taken every lock).
 */
interface LevelOutcome {
  canceled: TerminalStep[];
  runsWithReleasedJobs: Set<string>;
}

async function releaseLevel(tx: Tx, frontier: readonly TerminalStep[], boundedWait: boolean): Promise<LevelOutcome> {
  let rows: LevelRow[];
  try {
    rows = await releaseLevelStatement(tx, frontier, boundedWait);
  } catch (error) {
    if (boundedWait && databaseErrorInfo(error).sqlState === '55P03') {
      const runIds = [...new Set(frontier.map((step) => step.workflowRunId))];
      throw releaseConflict(
        runIds.length === 1 ? runIds[0]! : `${runIds.length} runs`,
        `cascade dependents not locked within ${RELEASE_LOCK_WAIT_MS} ms`,
        error,
        runIds,
      );
    }
    throw error;
  }
  return interpretLevel(rows);
}

async function releaseLevelStatement(tx: Tx, frontier: readonly TerminalStep[], boundedWait: boolean): Promise<LevelRow[]> {
  return tx.$queryRaw<LevelRow[]>`
    WITH prev AS MATERIALIZED (SELECT current_setting('lock_timeout') AS previous),
    bound AS MATERIALIZED (
      SELECT set_config('lock_timeout', CASE WHEN ${boundedWait}::boolean THEN ${`${RELEASE_LOCK_WAIT_MS}ms`} ELSE previous END, true) AS v
        FROM prev
    ),
    frontier AS (
      SELECT * FROM unnest(${frontier.map((s) => s.stepId)}::uuid[], ${frontier.map((s) => s.workflowRunId)}::uuid[],
                           ${frontier.map((s) => s.status)}::text[]) AS f(step_id, run_id, status)
    ),
    -- Each frontier step's edges by one probe of the edge primary key (LATERAL, OFFSET 0 so it is not flattened
    -- into a join): under unnest's 10-row estimate and a table's statistics the planner otherwise hashed the
    -- frontier and read the whole edge table, and (in locked, below) the whole step table, per level
    -- (docs/operate/performance.md, "Plans the hot statements keep").
    edges AS MATERIALIZED (
      SELECT e.prerequisite_step_id, e.dependent_step_id, e.workflow_run_id AS edge_run_id, f.run_id,
             (e.release_mode = 'ON_SUCCESS' AND f.status <> 'SUCCEEDED') AS unsatisfied
        FROM frontier f
       CROSS JOIN LATERAL (
         SELECT e.prerequisite_step_id, e.dependent_step_id, e.workflow_run_id, e.release_mode
           FROM runledger.workflow_step_dependencies e
          WHERE e.prerequisite_step_id = f.step_id
         OFFSET 0
       ) e
    ),
    foreign_edge AS MATERIALIZED (
      SELECT prerequisite_step_id, edge_run_id, run_id FROM edges WHERE edge_run_id <> run_id LIMIT 1
    ),
    per_dependent AS MATERIALIZED (
      SELECT dependent_step_id, run_id, count(*)::int AS settled, (count(*) FILTER (WHERE unsatisfied))::int AS unsatisfied
        FROM edges
       GROUP BY dependent_step_id, run_id
    ),
    -- Rung 2 of the lock protocol: every dependent of the level, one global id order. The settle
    -- counts ride along, so no later part of the statement joins two CTEs (a CTE has no index: such
    -- joins ran as nested loops, O(width^2), under unnest's small row estimate).
    -- Each dependent by one primary-key probe, locked as it is visited, in id order (the outer side is sorted
    -- and a nested loop keeps its order).
    locked AS MATERIALIZED (
      SELECT ws.id, ws.workflow_run_id, ws.status, p.run_id, p.settled, p.unsatisfied
        FROM (SELECT * FROM per_dependent
               WHERE NOT EXISTS (SELECT 1 FROM foreign_edge) AND (SELECT v FROM bound) IS NOT NULL
               ORDER BY dependent_step_id) p
       CROSS JOIN LATERAL (
         SELECT ws.id, ws.workflow_run_id, ws.status
           FROM runledger.workflow_steps ws
          WHERE ws.id = p.dependent_step_id
            FOR UPDATE
       ) ws
       ORDER BY ws.id
    ),
    restored AS MATERIALIZED (
      SELECT set_config('lock_timeout', previous, true) AS v FROM prev WHERE (SELECT count(*) FROM locked) >= 0
    ),
    -- The release time, read once every dependent is locked (module comment, "Time follows cause").
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    -- A dependent missing (hashed NOT IN) or in another run than its edge's.
    outside_run AS MATERIALIZED (
      SELECT p.dependent_step_id, p.run_id
        FROM per_dependent p
       WHERE NOT EXISTS (SELECT 1 FROM foreign_edge)
         AND p.dependent_step_id NOT IN (SELECT id FROM locked)
      UNION ALL
      SELECT l.id, l.run_id FROM locked l WHERE l.workflow_run_id <> l.run_id
       LIMIT 1
    ),
    updated AS (
      UPDATE runledger.workflow_steps ws
         SET dependency_count_pending = ws.dependency_count_pending - p.settled,
             dependency_count_unsatisfied = ws.dependency_count_unsatisfied + p.unsatisfied,
             status = CASE
                        WHEN ws.status <> 'BLOCKED' OR ws.dependency_count_pending - p.settled > 0 THEN ws.status
                        WHEN ws.dependency_count_unsatisfied + p.unsatisfied > 0 THEN 'CANCELED'
                        WHEN ws.execution_kind = 'JOB' THEN 'ENQUEUED'
                        ELSE 'WAITING_FOR_EXTERNAL'
                      END::runledger.workflow_step_status,
             job_id = CASE WHEN ws.status = 'BLOCKED' AND ws.dependency_count_pending - p.settled = 0
                             AND ws.dependency_count_unsatisfied + p.unsatisfied = 0 AND ws.execution_kind = 'JOB'
                           THEN runledger.uuid_v7() ELSE ws.job_id END,
             released_at = CASE WHEN ws.status = 'BLOCKED' AND ws.dependency_count_pending - p.settled = 0
                                  AND ws.dependency_count_unsatisfied + p.unsatisfied = 0
                                THEN (SELECT at FROM clock) ELSE ws.released_at END,
             finished_at = CASE WHEN ws.status = 'BLOCKED' AND ws.dependency_count_pending - p.settled = 0
                                  AND ws.dependency_count_unsatisfied + p.unsatisfied > 0
                                THEN COALESCE(ws.finished_at, (SELECT at FROM clock)) ELSE ws.finished_at END,
             status_reason = CASE WHEN ws.status = 'BLOCKED' AND ws.dependency_count_pending - p.settled = 0
                                    AND ws.dependency_count_unsatisfied + p.unsatisfied > 0
                                  THEN ${DEPENDENCY_UNSATISFIED} ELSE ws.status_reason END,
             last_error_code = CASE WHEN ws.status = 'BLOCKED' AND ws.dependency_count_pending - p.settled = 0
                                      AND ws.dependency_count_unsatisfied + p.unsatisfied > 0
                                    THEN ${DEPENDENCY_UNSATISFIED} ELSE ws.last_error_code END,
             last_error_message = CASE WHEN ws.status = 'BLOCKED' AND ws.dependency_count_pending - p.settled = 0
                                         AND ws.dependency_count_unsatisfied + p.unsatisfied > 0
                                       THEN ${DEPENDENCY_UNSATISFIED_MESSAGE} ELSE ws.last_error_message END,
             updated_at = (SELECT at FROM clock)
        FROM locked p
       -- By primary key (an InitPlan array): never a scan of the step table, whatever the estimates.
       WHERE ws.id = ANY(ARRAY(SELECT id FROM locked))
         AND ws.id = p.id
         AND ws.workflow_run_id = p.run_id
         AND NOT EXISTS (SELECT 1 FROM foreign_edge)
         AND NOT EXISTS (SELECT 1 FROM outside_run)
      RETURNING ws.id, ws.workflow_run_id, ws.step_key, ws.status, ws.job_id, ws.job_type, ws.organization_id, ws.payload,
                ws.priority, ws.max_attempts, ws.timeout_seconds, ws.resource_key, ws.concurrency_key, ws.rate_key, ws.backoff_base_ms, ws.backoff_max_ms,
                ws.fair_key, ws.fair_weight, ws.stage, p.status AS previous_status
    ),
    moved AS MATERIALIZED (
      SELECT * FROM updated WHERE previous_status = 'BLOCKED' AND status <> 'BLOCKED'
    ),
    jobs AS (
      INSERT INTO runledger.job_queue
             (id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds, next_run_at, created_at, updated_at,
              workflow_step_id, resource_key, concurrency_key, rate_key, fair_key, fair_weight, backoff_base_ms, backoff_max_ms, stage)
      SELECT m.job_id, m.job_type, m.organization_id, m.payload,
             COALESCE(m.priority, ${DEFAULT_PRIORITY}::int), COALESCE(m.max_attempts, ${DEFAULT_MAX_ATTEMPTS}::int),
             COALESCE(m.timeout_seconds, ${DEFAULT_TIMEOUT_SECONDS}::int), c.at, c.at, c.at, m.id, m.resource_key, m.concurrency_key, m.rate_key,
             m.fair_key, m.fair_weight, m.backoff_base_ms, m.backoff_max_ms, m.stage
        FROM moved m CROSS JOIN clock c
       WHERE m.status = 'ENQUEUED'
       ORDER BY m.job_id
      RETURNING id, job_type
    ),
    -- No ENQUEUED event is written: the job_trail view derives it from the job row and its step.
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type))::int AS n FROM (SELECT DISTINCT job_type FROM jobs) t
    )
    SELECT x.kind, x.step_id, x.workflow_run_id, x.detail
      FROM restored
      LEFT JOIN (
        SELECT CASE m.status WHEN 'CANCELED' THEN 'canceled' WHEN 'ENQUEUED' THEN 'released_job' ELSE 'released_external' END AS kind,
               m.id AS step_id, m.workflow_run_id, NULL::text AS detail
          FROM moved m CROSS JOIN notified
        UNION ALL
        SELECT 'foreign_edge', prerequisite_step_id, run_id, edge_run_id::text FROM foreign_edge
        UNION ALL
        SELECT 'outside_run', dependent_step_id, run_id, NULL FROM outside_run
      ) x ON true`;
}

function interpretLevel(allRows: readonly LevelRow[]): LevelOutcome {
  const rows = allRows.filter((row) => row.kind !== null);

  const foreign = rows.find((row) => row.kind === 'foreign_edge');
  if (foreign) {
    throw internalState(`dependency edge from step ${foreign.step_id} belongs to run ${foreign.detail}, expected ${foreign.workflow_run_id}`);
  }
  const outside = rows.find((row) => row.kind === 'outside_run');
  if (outside) throw internalState(`dependency edge references dependent ${outside.step_id} outside run ${outside.workflow_run_id}`);
  const canceled = rows
    .filter((row) => row.kind === 'canceled')
    .map((row): TerminalStep => ({ stepId: row.step_id!, workflowRunId: row.workflow_run_id!, status: 'CANCELED' }));
  const runsWithReleasedJobs = new Set(rows.filter((row) => row.kind === 'released_job').map((row) => row.workflow_run_id!));
  return { canceled, runsWithReleasedJobs };
}
