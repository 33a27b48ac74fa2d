/**
 * Integrity of enqueue intents over one page of jobs: a settled intent
 * (PROMOTED, or CONFLICT with the key's holder) names a job of its own job
 * type, organization and idempotency key (the promoter only ever points an
 * intent at the job its key resolved to). One read-only statement, an index
 * probe per job (job_enqueue_intents_job_id_idx).
 */
import type { Tx } from '../client/types.js';
import type { ViolationRow } from './violations.js';

export async function checkEnqueueIntents(tx: Tx, jobIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    SELECT 'intent.job_mismatch' AS kind, NULL::uuid AS workflow_run_id, NULL::uuid AS step_id, NULL::text AS step_key,
           j.id AS job_id,
           jsonb_build_object('intentId', i.id, 'jobType', i.job_type, 'organizationId', i.organization_id,
                              'idempotencyKey', i.idempotency_key) AS expected,
           jsonb_build_object('state', i.state, 'jobType', j.job_type, 'organizationId', j.organization_id,
                              'idempotencyKey', j.idempotency_key) AS found
      FROM unnest(${jobIds}::uuid[]) AS page(id)
      JOIN runledger.job_enqueue_intents i ON i.job_id = page.id
      JOIN runledger.job_queue j ON j.id = page.id
     WHERE (j.job_type, j.organization_id, j.idempotency_key) IS DISTINCT FROM (i.job_type, i.organization_id, i.idempotency_key)`;
}
