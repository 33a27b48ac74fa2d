/**
 * Integrity checks of durable functions' recorded steps (src/workflow/function-*.ts) over one page of
 * runs: one read-only statement. The steps are reached through workflow_steps_run_key_key's
 * (workflow_run_id, ...) prefix, the body step by (workflow_run_id, step_key), edges by their
 * prerequisite (primary key prefix) and dependent indexes, a carried step's source by the lineage's
 * unique recovery-run index and the source run's (workflow_run_id, step_key).
 *
 *   function.call_index            a FUNCTION row has a call index; no other kind of step has one
 *   function.call_index_duplicate  no two FUNCTION rows of a run share a call index (replay reads the
 *                                  record by index: two rows at one index make it ambiguous)
 *   function.outside_function_run  a FUNCTION row belongs to a function run: one whose result step is
 *                                  `$function`, a JOB step (the body)
 *   function.step_state            a FUNCTION row is terminal, has no job and no dependency edge (nothing
 *                                  waits on it), has its run's organization, was released, finished no
 *                                  earlier than it started, and a `$sleep` records its wake time
 *   function.step_after_body       no FUNCTION row finished after its run's body did: a step is recorded
 *                                  under the body's live lease, which ends with the body
 *   function.carried_call_index    a FUNCTION row a recovery carried over has its source row's call index
 *                                  (the fork replays it at the same call)
 *
 * Call indexes need not be dense: a failed step is not recorded, and a body may catch that failure and
 * go on, or a parallel sibling may be recorded beside it, so a finished run can have gaps.
 */
import type { Tx } from '../client/types.js';
import { FUNCTION_STEP_KEY } from '../model/constants.js';
import { RECOVERY_CARRIED } from '../workflow/enqueue.js';
import type { ViolationRow } from './violations.js';

const TERMINAL_STEP = ['SUCCEEDED', 'FAILED', 'CANCELED'];

export async function checkFunctionSteps(tx: Tx, runIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH fn AS MATERIALIZED (
      SELECT ws.id, ws.workflow_run_id, ws.step_key, ws.execution_kind, ws.status, ws.call_index, ws.job_id,
             ws.organization_id, ws.released_at, ws.started_at, ws.finished_at, ws.dependency_count_total AS total,
             ws.status_reason, ws.output, r.organization_id AS run_organization_id, r.result_step_key
        FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_runs r ON r.id = page.id
        JOIN runledger.workflow_steps ws ON ws.workflow_run_id = r.id
       WHERE ws.execution_kind = 'FUNCTION' OR ws.call_index IS NOT NULL
    ),
    checked AS MATERIALIZED (
      SELECT f.*, body.execution_kind AS body_kind, body.status AS body_status, body.finished_at AS body_finished_at,
             (EXISTS (SELECT 1 FROM runledger.workflow_step_dependencies e WHERE e.prerequisite_step_id = f.id)
              OR EXISTS (SELECT 1 FROM runledger.workflow_step_dependencies e WHERE e.dependent_step_id = f.id)) AS has_edge
        FROM fn f
        LEFT JOIN LATERAL (
          SELECT b.execution_kind, b.status, b.finished_at FROM runledger.workflow_steps b
           WHERE b.workflow_run_id = f.workflow_run_id AND b.step_key = ${FUNCTION_STEP_KEY}
        ) body ON true
       WHERE f.execution_kind = 'FUNCTION'
    ),
    carried AS (
      SELECT c.id, c.workflow_run_id, c.step_key, c.call_index, src.call_index AS source_call_index, l.source_run_id
        FROM checked c
        JOIN LATERAL (SELECT x.source_run_id FROM runledger.workflow_recoveries x WHERE x.recovery_run_id = c.workflow_run_id LIMIT 1) l ON true
        JOIN LATERAL (
          SELECT s.call_index FROM runledger.workflow_steps s WHERE s.workflow_run_id = l.source_run_id AND s.step_key = c.step_key
        ) src ON true
       WHERE c.status_reason IS NOT DISTINCT FROM ${RECOVERY_CARRIED}::text
    )
    SELECT 'function.call_index' AS kind, workflow_run_id, id AS step_id, step_key, NULL::uuid AS job_id,
           jsonb_build_object('callIndex', CASE WHEN execution_kind = 'FUNCTION' THEN 'set' ELSE 'null' END) AS expected,
           jsonb_build_object('executionKind', execution_kind, 'callIndex', call_index) AS found
      FROM fn
     WHERE (execution_kind = 'FUNCTION') <> (call_index IS NOT NULL)
    UNION ALL
    SELECT 'function.call_index_duplicate', workflow_run_id, NULL, min(step_key COLLATE "C"), NULL,
           jsonb_build_object('callIndex', 'unique in its run'),
           jsonb_build_object('callIndex', call_index, 'stepKeys', jsonb_agg(step_key ORDER BY step_key COLLATE "C"))
      FROM checked
     WHERE call_index IS NOT NULL
     GROUP BY workflow_run_id, call_index
    HAVING count(*) > 1
    UNION ALL
    SELECT 'function.outside_function_run', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('resultStepKey', ${FUNCTION_STEP_KEY}::text, 'bodyKind', 'JOB'),
           jsonb_build_object('resultStepKey', result_step_key, 'bodyKind', body_kind)
      FROM checked
     WHERE result_step_key IS DISTINCT FROM ${FUNCTION_STEP_KEY}::text OR body_kind IS DISTINCT FROM 'JOB'
    UNION ALL
    SELECT 'function.step_state', workflow_run_id, id, step_key, job_id,
           jsonb_build_object('status', 'SUCCEEDED, FAILED or CANCELED', 'jobId', NULL, 'dependencyCountTotal', 0, 'hasEdge', false, 'organizationId', run_organization_id,
                              'releasedAt', 'set', 'finishedAt', 'no earlier than startedAt',
                              'wakeAt', CASE WHEN step_key ~ '^[$]sleep(#[0-9]+)?$' THEN 'set' END),
           jsonb_build_object('status', status, 'jobId', job_id, 'dependencyCountTotal', total, 'hasEdge', has_edge,
                              'organizationId', organization_id, 'releasedAt', released_at, 'startedAt', started_at,
                              'finishedAt', finished_at, 'wakeAt', output -> 'wakeAt')
      FROM checked
     WHERE NOT (status::text = ANY(${TERMINAL_STEP}::text[])) OR job_id IS NOT NULL OR total <> 0 OR has_edge
        OR organization_id IS DISTINCT FROM run_organization_id OR released_at IS NULL OR finished_at < started_at
        OR (step_key ~ '^[$]sleep(#[0-9]+)?$' AND jsonb_typeof(output -> 'wakeAt') IS DISTINCT FROM 'string')
    UNION ALL
    SELECT 'function.step_after_body', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('finishedAt', 'no later than the body ($function) finished'),
           jsonb_build_object('finishedAt', finished_at, 'bodyStatus', body_status, 'bodyFinishedAt', body_finished_at)
      FROM checked
     WHERE finished_at > body_finished_at
    UNION ALL
    SELECT 'function.carried_call_index', workflow_run_id, id, step_key, NULL,
           jsonb_build_object('callIndex', source_call_index), jsonb_build_object('callIndex', call_index, 'sourceRunId', source_run_id)
      FROM carried
     WHERE call_index IS DISTINCT FROM source_call_index`;
}
