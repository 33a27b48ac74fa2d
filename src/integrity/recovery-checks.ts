/**
 * Integrity checks of workflow recovery (src/recovery/) over one page of
 * runs: one read-only statement. Lineage rows are reached through
 * workflow_recoveries' unique recovery-run index and its (source, ...)
 * primary key, carried steps through the steps of the page's runs.
 *
 *   recovery.lineage        a workflow_recoveries row whose source or
 *                           recovery run is in the page: both runs exist, the
 *                           source is finished (it is never reopened), and
 *                           both have the same workflow type and organization;
 *   recovery.carried_step   a step marked carried (statusReason
 *                           `workflow.recovery_carried`) is SUCCEEDED without a
 *                           job, in a failed-only recovery run whose source
 *                           has a SUCCEEDED step of that key with the same
 *                           output.
 */
import type { Tx } from '../client/types.js';
import { RECOVERY_CARRIED } from '../workflow/enqueue.js';
import type { ViolationRow } from './violations.js';
import { TERMINAL_RUN } from '../db/fragments.js';

export async function checkRecoveries(tx: Tx, runIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH links AS (
      SELECT r.* FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN LATERAL (SELECT * FROM runledger.workflow_recoveries x WHERE x.recovery_run_id = page.id LIMIT 1) r ON true
      UNION
      SELECT r.* FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_recoveries r ON r.source_run_id = page.id
    ),
    lineage AS (
      SELECT l.source_run_id, l.recovery_run_id, l.request_key, src.id AS src_id, src.status AS src_status,
             src.workflow_type AS src_type, src.organization_id AS src_org, rec.id AS rec_id,
             rec.workflow_type AS rec_type, rec.organization_id AS rec_org
        FROM links l
        LEFT JOIN LATERAL (SELECT * FROM runledger.workflow_runs w WHERE w.id = l.source_run_id LIMIT 1) src ON true
        LEFT JOIN LATERAL (SELECT * FROM runledger.workflow_runs w WHERE w.id = l.recovery_run_id LIMIT 1) rec ON true
    ),
    carried AS (
      SELECT ws.id, ws.workflow_run_id, ws.step_key, ws.status, ws.job_id, ws.output, r.source_run_id, r.mode,
             src.status AS src_status, src.output AS src_output, src.id AS src_id
        FROM unnest(${runIds}::uuid[]) AS page(id)
        JOIN runledger.workflow_steps ws ON ws.workflow_run_id = page.id
        LEFT JOIN LATERAL (SELECT * FROM runledger.workflow_recoveries x WHERE x.recovery_run_id = page.id LIMIT 1) r ON true
        LEFT JOIN LATERAL (
          SELECT s.id, s.status, s.output FROM runledger.workflow_steps s
           WHERE s.workflow_run_id = r.source_run_id AND s.step_key = ws.step_key LIMIT 1
        ) src ON true
       WHERE ws.status_reason = ${RECOVERY_CARRIED}
    )
    SELECT 'recovery.lineage' AS kind, recovery_run_id AS workflow_run_id, NULL::uuid AS step_id, NULL::text AS step_key, NULL::uuid AS job_id,
           jsonb_build_object('sourceRunId', source_run_id, 'bothExist', true, 'sourceFinished', true,
                              'sameTypeAndOrganization', true) AS expected,
           jsonb_build_object('sourceExists', src_id IS NOT NULL, 'recoveryExists', rec_id IS NOT NULL, 'sourceStatus', src_status,
                              'sourceType', src_type, 'recoveryType', rec_type,
                              'sameOrganization', src_org IS NOT DISTINCT FROM rec_org) AS found
      FROM lineage
     WHERE src_id IS NULL OR rec_id IS NULL
        OR src_status NOT IN ${TERMINAL_RUN}
        OR src_type IS DISTINCT FROM rec_type OR src_org IS DISTINCT FROM rec_org
    UNION ALL
    SELECT 'recovery.carried_step', workflow_run_id, id, step_key, job_id,
           jsonb_build_object('status', 'SUCCEEDED', 'jobId', NULL, 'recoveryMode', 'FAILED_ONLY', 'sourceStepStatus', 'SUCCEEDED',
                              'output', src_output),
           jsonb_build_object('status', status, 'jobId', job_id, 'recoveryMode', mode, 'sourceRunId', source_run_id,
                              'sourceStepStatus', src_status, 'output', output)
      FROM carried
     WHERE status <> 'SUCCEEDED' OR job_id IS NOT NULL OR mode IS DISTINCT FROM 'FAILED_ONLY'
        OR src_id IS NULL OR src_status <> 'SUCCEEDED' OR output IS DISTINCT FROM src_output`;
}
