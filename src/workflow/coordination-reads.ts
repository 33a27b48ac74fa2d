/**
 * What the operator CLI shows about a run's coordination rows: its active
 * key claim (if it was enqueued with one) and the appends applied to it.
 * Scoped like every read: a run outside `scope` has neither. Internal (the
 * CLI's `runs show`); the public reads stay the run, steps and edges.
 */
import { withTransaction } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import { scopeParams, type Scope } from '../db/scope.js';
import { inScope } from '../db/fragments.js';

export interface RunActiveKey {
  activeKey: string;
  /** 'global' or 'organization:<organization id>'. */
  scope: string;
  claimedAt: Date;
  /** Null while the run holds the key. */
  releasedAt: Date | null;
}

export interface RunMutation {
  mutationKey: string;
  stepCount: number;
  createdAt: Date;
}

export interface RunCoordination {
  activeKey: RunActiveKey | null;
  /** Oldest first. */
  mutations: RunMutation[];
}

/** The run's claim and appends; both empty when the run is not visible in `scope`. `workflowRunId` must be a validated uuid. */
export async function readRunCoordination(db: Db, input: { scope: Scope; workflowRunId: string }): Promise<RunCoordination> {
  const s = scopeParams(input.scope);
  const runId = input.workflowRunId;
  return withTransaction(db, 'read workflow run coordination', async ({ tx }) => {
    const keys = await tx.$queryRaw<{ active_key: string; scope: string; claimed_at: Date; released_at: Date | null }[]>`
      SELECT k.active_key, k.scope, k.claimed_at, k.released_at
        FROM runledger.workflow_active_keys k
        JOIN runledger.workflow_runs r ON r.id = k.workflow_run_id
       WHERE k.workflow_run_id = ${runId}::uuid AND ${inScope(s, 'r.organization_id')}`;
    const mutations = await tx.$queryRaw<{ mutation_key: string; step_count: number; created_at: Date }[]>`
      SELECT m.mutation_key, m.step_count, m.created_at
        FROM runledger.workflow_mutations m
        JOIN runledger.workflow_runs r ON r.id = m.workflow_run_id
       WHERE m.workflow_run_id = ${runId}::uuid AND ${inScope(s, 'r.organization_id')}
       ORDER BY m.created_at, m.mutation_key`;
    const key = keys[0];
    return {
      activeKey: key ? { activeKey: key.active_key, scope: key.scope, claimedAt: key.claimed_at, releasedAt: key.released_at } : null,
      mutations: mutations.map((m) => ({ mutationKey: m.mutation_key, stepCount: m.step_count, createdAt: m.created_at })),
    };
  });
}
