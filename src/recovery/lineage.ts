/**
 * Reading recovery lineage: the recoveries of a run, a page at a time, and
 * the two lineage fields `getWorkflowRun` adds to a run (what it was
 * recovered from; how many recoveries it has and the latest). Every read is
 * within an exact scope; a run outside it is `workflow.run_not_found`.
 */
import { withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams } from '../db/scope.js';
import type { Page } from '../queue/inputs.js';
import { parseInput } from '../validation/parse.js';
import { WORKFLOW_INVALID_INPUT } from '../workflow/run-definition.js';
import { runNotFound } from './errors.js';
import { listWorkflowRecoveriesInputSchema, type ListWorkflowRecoveriesInput } from './inputs.js';
import { toWorkflowRecovery, type RecoveryRow, type WorkflowRecovery } from '../workflow/run-lineage.js';
import { inScope } from '../db/fragments.js';

/**
 * Recoveries of the run `runId` (as their source), oldest first, a page at a
 * time (keyset on created_at, recovery run id). One statement: the run row
 * proves visibility even when the page is empty.
 *
 * @example
 * const { items } = await listWorkflowRecoveries(prisma, { runId, scope: organizationScope(orgId) });
 */
export async function listWorkflowRecoveries(db: Db, input: ListWorkflowRecoveriesInput): Promise<Page<WorkflowRecovery>> {
  const parsed = parseInput(listWorkflowRecoveriesInputSchema, input, WORKFLOW_INVALID_INPUT);
  const s = scopeParams(parsed.scope);
  const [afterMicros, afterId] = parsed.cursor ? parsed.cursor.split(/:(.*)/s) : [null, null];
  const rows = await withTransaction(
    db,
    'list workflow recoveries',
    async ({ tx }) =>
      tx.$queryRaw<((RecoveryRow & { cursor_micros: string }) | { [K in keyof RecoveryRow | 'cursor_micros']: null })[]>`
      SELECT l.* FROM runledger.workflow_runs wr
        LEFT JOIN LATERAL (
          SELECT r.source_run_id, r.recovery_run_id, r.request_key, r.reason, r.mode, r.created_at, rr.status AS recovery_status,
                 (extract(epoch FROM r.created_at) * 1000000)::bigint::text AS cursor_micros
            FROM runledger.workflow_recoveries r
            JOIN runledger.workflow_runs rr ON rr.id = r.recovery_run_id
           WHERE r.source_run_id = wr.id
             AND (${afterMicros ?? null}::bigint IS NULL
                  OR (r.created_at, r.recovery_run_id) > (to_timestamp(${afterMicros ?? null}::bigint / 1000000.0), ${afterId ?? null}::uuid))
           ORDER BY r.created_at, r.recovery_run_id
           LIMIT ${parsed.limit + 1}::int
        ) l ON true
       WHERE wr.id = ${parsed.runId}::uuid AND ${inScope(s, 'wr.organization_id')}
       ORDER BY l.created_at, l.recovery_run_id`,
  );
  if (rows.length === 0) throw runNotFound(parsed.runId);
  const found = rows.filter((row): row is RecoveryRow & { cursor_micros: string } => row.recovery_run_id !== null);
  const page = found.slice(0, parsed.limit);
  const last = page.at(-1);
  return {
    items: page.map(toWorkflowRecovery),
    nextCursor: found.length > parsed.limit && last ? `${last.cursor_micros}:${last.recovery_run_id}` : null,
  };
}
