/**
 * Integrity checks over one page of workflow runs: four read-only statements
 * whatever the page size, each reaching rows through an index on the page's
 * run ids (steps by (workflow_run_id, ...), edges by dependent step id or by
 * run, jobs by primary key). Each statement starts from `unnest(page ids)`
 * joined on a primary key, not `id = ANY(...)` on the table: with the latter
 * the planner hash-joined a sequential scan of every run on a million-job
 * database (scripts/integrity-explain.ts).
 *
 * Dependency counters are recomputed from first principles. An edge is
 * "settled" when its prerequisite is terminal and the release cascade ran for
 * it. The cascade runs for every terminal transition except run cancellation,
 * which cancels the live steps of the run without releasing (nothing can run
 * after it): so in a CANCELED run, prerequisites canceled by the cancellation
 * itself (`last_error_code = workflow.run_canceled`) are not settled. Then:
 *   total       = edges into the step
 *   pending     = total - settled edges
 *   unsatisfied = settled ON_SUCCESS edges whose prerequisite did not succeed
 */
import type { Tx } from '../client/types.js';
import { WORKFLOW_RUN_CANCELED } from '../queue/statements/cancel-run-jobs.js';
import { RECOVERY_CARRIED } from '../workflow/enqueue.js';
import { DEPENDENCY_UNSATISFIED } from '../coordination/dependency-release.js';
import type { ViolationRow } from './violations.js';
import { TERMINAL_RUN } from '../db/fragments.js';

const TERMINAL_STEP = ['SUCCEEDED', 'FAILED', 'CANCELED'];

/** Step-level checks: counters, release state, output and finished_at. */
export async function checkSteps(tx: Tx, runIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH steps AS MATERIALIZED (
      SELECT ws.id, ws.workflow_run_id, ws.step_key, ws.status, ws.output IS NOT NULL AS has_output,
             ws.finished_at IS NOT NULL AS has_finished_at, ws.released_at, ws.finished_at, ws.dependency_count_total AS total,
             ws.dependency_count_pending AS pending, ws.dependency_count_unsatisfied AS unsatisfied, r.status AS run_status
        FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_runs r ON r.id = page.id
        JOIN runledger.workflow_steps ws ON ws.workflow_run_id = r.id
    ),
    edges AS (
      SELECT e.dependent_step_id, e.release_mode, p.status AS prerequisite_status,
             (p.status::text = ANY(${TERMINAL_STEP}::text[])
              AND NOT (d.run_status = 'CANCELED' AND p.status = 'CANCELED' AND p.last_error_code IS NOT DISTINCT FROM ${WORKFLOW_RUN_CANCELED}::text)) AS settled
        FROM runledger.workflow_step_dependencies e
        JOIN steps d ON d.id = e.dependent_step_id
        JOIN runledger.workflow_steps p ON p.id = e.prerequisite_step_id
       WHERE e.dependent_step_id = ANY(ARRAY(SELECT id FROM steps))
    ),
    expected AS (
      SELECT dependent_step_id AS id, count(*)::int AS total,
             (count(*) FILTER (WHERE NOT settled))::int AS pending,
             (count(*) FILTER (WHERE settled AND release_mode = 'ON_SUCCESS' AND prerequisite_status <> 'SUCCEEDED'))::int AS unsatisfied
        FROM edges
       GROUP BY dependent_step_id
    ),
    calc AS (
      SELECT s.*, COALESCE(x.total, 0) AS e_total, COALESCE(x.pending, 0) AS e_pending, COALESCE(x.unsatisfied, 0) AS e_unsatisfied
        FROM steps s
        LEFT JOIN expected x ON x.id = s.id
    )
    SELECT 'step.dependency_counters' AS kind, workflow_run_id, id AS step_id, step_key, NULL::uuid AS job_id,
           jsonb_build_object('total', e_total, 'pending', e_pending, 'unsatisfied', e_unsatisfied) AS expected,
           jsonb_build_object('total', total, 'pending', pending, 'unsatisfied', unsatisfied) AS found
      FROM calc
     WHERE total <> e_total OR pending <> e_pending OR unsatisfied <> e_unsatisfied
    UNION ALL
    SELECT 'step.released_early', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('status', 'BLOCKED', 'pending', e_pending, 'unsatisfied', e_unsatisfied),
           jsonb_build_object('status', status)
      FROM calc
     WHERE status NOT IN ('BLOCKED', 'CANCELED') AND (e_pending > 0 OR e_unsatisfied > 0)
    UNION ALL
    SELECT 'step.not_released', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('status', CASE WHEN e_unsatisfied > 0 THEN 'CANCELED' ELSE 'ENQUEUED or WAITING_FOR_EXTERNAL' END),
           jsonb_build_object('status', status, 'pending', e_pending, 'unsatisfied', e_unsatisfied)
      FROM calc
     WHERE status = 'BLOCKED' AND run_status <> 'CANCELED' AND e_pending = 0
    UNION ALL
    SELECT 'step.output_not_succeeded', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('output', NULL), jsonb_build_object('status', status, 'hasOutput', true)
      FROM calc
     WHERE has_output AND status <> 'SUCCEEDED'
    UNION ALL
    SELECT 'step.finished_at', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('finishedAt', CASE WHEN status::text = ANY(${TERMINAL_STEP}::text[]) THEN 'set' ELSE 'null' END),
           jsonb_build_object('status', status, 'finishedAt', CASE WHEN has_finished_at THEN 'set' ELSE 'null' END)
      FROM calc
     WHERE has_finished_at <> (status::text = ANY(${TERMINAL_STEP}::text[]))
    UNION ALL
    SELECT 'step.finished_before_released', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('finishedAt', 'no earlier than releasedAt'),
           jsonb_build_object('releasedAt', released_at, 'finishedAt', finished_at)
      FROM calc
     WHERE finished_at < released_at`;
}

/**
 * Step -> job linkage and status agreement: the job a step names exists,
 * names the step back, and has a status its step's status allows.
 */
export async function checkStepJobs(tx: Tx, runIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH steps AS MATERIALIZED (
      SELECT ws.id, ws.workflow_run_id, ws.step_key, ws.execution_kind, ws.status, ws.job_id, ws.status_reason,
             j.id AS found_job_id, j.status AS job_status, j.workflow_step_id AS job_step_id,
             ws.released_at, j.created_at AS job_created_at, j.next_run_at AS job_next_run_at
        FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_steps ws ON ws.workflow_run_id = page.id
        LEFT JOIN runledger.job_queue j ON j.id = ws.job_id
    )
    SELECT 'step.job_on_external_step' AS kind, workflow_run_id, id AS step_id, step_key, job_id,
           jsonb_build_object('jobId', NULL) AS expected, jsonb_build_object('jobId', job_id) AS found
      FROM steps WHERE execution_kind = 'EXTERNAL' AND job_id IS NOT NULL
    UNION ALL
    SELECT 'step.job_on_blocked_step', workflow_run_id, id, step_key, job_id,
           jsonb_build_object('jobId', NULL), jsonb_build_object('status', status, 'jobId', job_id)
      FROM steps WHERE status = 'BLOCKED' AND job_id IS NOT NULL
    UNION ALL
    SELECT 'step.job_missing', workflow_run_id, id, step_key, job_id,
           jsonb_build_object('job', 'exists'), jsonb_build_object('status', status, 'jobId', job_id, 'jobExists', found_job_id IS NOT NULL)
      FROM steps
     WHERE execution_kind = 'JOB' AND status IN ('ENQUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED') AND found_job_id IS NULL
       -- A step a recovery carried over succeeded in its source run, without a job here (recovery.carried_step checks it).
       AND NOT (status = 'SUCCEEDED' AND job_id IS NULL AND status_reason IS NOT DISTINCT FROM ${RECOVERY_CARRIED}::text)
    UNION ALL
    SELECT 'step.job_link_mismatch', workflow_run_id, id, step_key, job_id,
           jsonb_build_object('jobWorkflowStepId', id), jsonb_build_object('jobWorkflowStepId', job_step_id)
      FROM steps WHERE found_job_id IS NOT NULL AND job_step_id IS DISTINCT FROM id
    UNION ALL
    SELECT 'step.job_status_mismatch', workflow_run_id, id, step_key, job_id,
           jsonb_build_object('jobStatus', CASE status
               WHEN 'SUCCEEDED' THEN 'SUCCEEDED'
               WHEN 'FAILED' THEN 'DEAD_LETTERED or CANCELED'
               WHEN 'CANCELED' THEN 'CANCELED or DEAD_LETTERED'
               ELSE 'PENDING or LEASED' END),
           jsonb_build_object('stepStatus', status, 'jobStatus', job_status)
      FROM steps
     WHERE found_job_id IS NOT NULL
       AND NOT CASE status
             WHEN 'SUCCEEDED' THEN job_status = 'SUCCEEDED'
             WHEN 'FAILED' THEN job_status IN ('DEAD_LETTERED', 'CANCELED')
             WHEN 'CANCELED' THEN job_status IN ('CANCELED', 'DEAD_LETTERED')
             WHEN 'ENQUEUED' THEN job_status IN ('PENDING', 'LEASED')
             WHEN 'RUNNING' THEN job_status IN ('PENDING', 'LEASED')
             ELSE false END
    UNION ALL
    SELECT 'step.job_created_before_release', workflow_run_id, id, step_key, job_id,
           jsonb_build_object('jobCreatedAt', 'no earlier than releasedAt', 'jobNextRunAt', 'no earlier than releasedAt'),
           jsonb_build_object('releasedAt', released_at, 'jobCreatedAt', job_created_at, 'jobNextRunAt', job_next_run_at)
      FROM steps
     WHERE found_job_id IS NOT NULL AND (job_created_at < released_at OR job_next_run_at < released_at)`;
}

/** Run status (the recompute rule of run-status.ts), result and finished_at. */
export async function checkRuns(tx: Tx, runIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH counts AS (
      SELECT r.id, r.status, r.result, r.finished_at IS NOT NULL AS has_finished_at,
             count(ws.id) FILTER (WHERE ws.status IN ('BLOCKED', 'ENQUEUED', 'RUNNING')) AS active,
             count(ws.id) FILTER (WHERE ws.status = 'WAITING_FOR_EXTERNAL') AS waiting,
             count(ws.id) FILTER (WHERE ws.status IN ('FAILED', 'CANCELED')) AS errored,
             r.finished_at, max(ws.finished_at) AS last_step_finished_at,
             r.result_step_key IS NOT NULL AS has_result_step,
             (array_agg(ws.output) FILTER (WHERE ws.step_key = r.result_step_key AND ws.status = 'SUCCEEDED'))[1] AS result_output
        FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_runs r ON r.id = page.id
        LEFT JOIN runledger.workflow_steps ws ON ws.workflow_run_id = r.id
       GROUP BY r.id
    ),
    calc AS (
      SELECT c.*,
             CASE WHEN status = 'CANCELED' AND active = 0 AND waiting = 0 THEN 'CANCELED'
                  WHEN active > 0 THEN 'RUNNING'
                  WHEN waiting > 0 THEN 'WAITING_FOR_EXTERNAL'
                  WHEN errored > 0 THEN 'COMPLETED_WITH_ERRORS'
                  ELSE 'SUCCEEDED' END AS expected_status
        FROM counts c
    )
    SELECT 'run.status_mismatch' AS kind, id AS workflow_run_id, NULL::uuid AS step_id, NULL::text AS step_key, NULL::uuid AS job_id,
           jsonb_build_object('status', CASE WHEN status = 'CANCELED' THEN 'CANCELED with no live step' ELSE expected_status END) AS expected,
           jsonb_build_object('status', status, 'liveSteps', active, 'waitingSteps', waiting, 'erroredSteps', errored) AS found
      FROM calc WHERE status::text <> expected_status
    UNION ALL
    SELECT 'run.result_mismatch', id, NULL, NULL, NULL,
           jsonb_build_object('result', CASE WHEN status = 'SUCCEEDED' AND has_result_step THEN result_output END),
           jsonb_build_object('status', status, 'result', result)
      FROM calc
     WHERE (status = 'SUCCEEDED' AND has_result_step AND result IS DISTINCT FROM result_output)
        OR ((status <> 'SUCCEEDED' OR NOT has_result_step) AND result IS NOT NULL)
    UNION ALL
    SELECT 'run.finished_at', id, NULL, NULL, NULL,
           jsonb_build_object('finishedAt', CASE WHEN status IN ${TERMINAL_RUN} THEN 'set' ELSE 'null' END),
           jsonb_build_object('status', status, 'finishedAt', CASE WHEN has_finished_at THEN 'set' ELSE 'null' END)
      FROM calc
     WHERE has_finished_at <> (status IN ${TERMINAL_RUN})
    UNION ALL
    SELECT 'run.finished_before_step', id, NULL, NULL, NULL,
           jsonb_build_object('finishedAt', 'no earlier than its last step'),
           jsonb_build_object('finishedAt', finished_at, 'lastStepFinishedAt', last_step_finished_at)
      FROM calc
     WHERE finished_at < last_step_finished_at`;
}

/**
 * Edges recorded under these runs, or leading into their steps, join two steps of the edge's own run; and
 * time follows cause along each: the dependent was released (or, an unsatisfied dependency, canceled) no
 * earlier than its prerequisite step and that step's job finished.
 */
export async function checkEdges(tx: Tx, runIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH page_edges AS (
      SELECT e.* FROM runledger.workflow_step_dependencies e WHERE e.workflow_run_id = ANY(${runIds}::uuid[])
      UNION
      SELECT e.* FROM runledger.workflow_step_dependencies e
       WHERE e.dependent_step_id = ANY(ARRAY(SELECT id FROM runledger.workflow_steps WHERE workflow_run_id = ANY(${runIds}::uuid[])))
    ),
    joined AS MATERIALIZED (
      SELECT e.workflow_run_id, e.prerequisite_step_id, e.dependent_step_id, p.workflow_run_id AS prerequisite_run_id,
             d.workflow_run_id AS dependent_run_id, d.step_key, p.step_key AS prerequisite_key,
             p.finished_at AS prerequisite_finished_at, pj.finished_at AS prerequisite_job_finished_at,
             COALESCE(d.released_at, CASE WHEN d.status = 'CANCELED' AND d.last_error_code IS NOT DISTINCT FROM ${DEPENDENCY_UNSATISFIED}::text
                                          THEN d.finished_at END) AS settled_at,
             d.released_at IS NOT NULL AS released
        FROM page_edges e
        LEFT JOIN runledger.workflow_steps p ON p.id = e.prerequisite_step_id
        LEFT JOIN runledger.workflow_steps d ON d.id = e.dependent_step_id
        LEFT JOIN runledger.job_queue pj ON pj.id = p.job_id
    )
    SELECT 'edge.crosses_runs' AS kind, workflow_run_id, dependent_step_id AS step_id, step_key, NULL::uuid AS job_id,
           jsonb_build_object('workflowRunId', workflow_run_id) AS expected,
           jsonb_build_object('prerequisiteStepId', prerequisite_step_id, 'prerequisiteRunId', prerequisite_run_id,
                              'dependentStepId', dependent_step_id, 'dependentRunId', dependent_run_id) AS found
      FROM joined
     WHERE prerequisite_run_id IS DISTINCT FROM workflow_run_id OR dependent_run_id IS DISTINCT FROM workflow_run_id
    UNION ALL
    SELECT 'edge.released_before_prerequisite_finished', workflow_run_id, dependent_step_id, step_key, NULL,
           jsonb_build_object(CASE WHEN released THEN 'releasedAt' ELSE 'canceledAt' END,
                              'no earlier than ' || prerequisite_key || ' (step and job) finished'),
           jsonb_build_object(CASE WHEN released THEN 'releasedAt' ELSE 'canceledAt' END, settled_at,
                              'prerequisiteStepId', prerequisite_step_id, 'prerequisiteFinishedAt', prerequisite_finished_at,
                              'prerequisiteJobFinishedAt', prerequisite_job_finished_at)
      FROM joined
     WHERE settled_at < prerequisite_finished_at OR settled_at < prerequisite_job_finished_at`;
}

/** The jobs of these runs' steps, both ways (the step names the job; the job names the step). */
export async function jobIdsOfRuns(tx: Tx, runIds: readonly string[]): Promise<string[]> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    WITH steps AS MATERIALIZED (
      SELECT id, job_id FROM runledger.workflow_steps WHERE workflow_run_id = ANY(${runIds}::uuid[])
    )
    SELECT job_id AS id FROM steps WHERE job_id IS NOT NULL
    UNION
    SELECT j.id FROM runledger.job_queue j WHERE j.workflow_step_id = ANY(ARRAY(SELECT id FROM steps))`;
  return rows.map((row) => row.id).sort();
}
