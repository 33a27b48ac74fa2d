/**
 * A run's recovery lineage as its readers see it: the mapping from the rows the
 * statements select (recovery links as jsonb) to `WorkflowRecovery`. Here, with
 * the run reads that use it (src/workflow/reads.ts); src/recovery/lineage.ts
 * pages through a run's recoveries with the same mapping.
 */
import { fromDbMode, type WorkflowRecoveryMode, type WorkflowRunStatus } from '../model/workflow-rows.js';

/** One recovery: the source run, the run that recovers it, and the request that made it. */
export interface WorkflowRecovery {
  sourceRunId: string;
  recoveryRunId: string;
  requestKey: string;
  reason: string;
  mode: WorkflowRecoveryMode;
  createdAt: Date;
  /** The recovery run's status now. */
  recoveryStatus: WorkflowRunStatus;
}

/** The lineage fields of a run read with `getWorkflowRun` / a handle's `getRun`. */
export interface WorkflowRunLineage {
  /** The recovery that created this run, or null when it was enqueued. */
  recoveredFrom: WorkflowRecovery | null;
  /** Recoveries of this run: how many, and the latest (`listWorkflowRecoveries` pages through all). */
  recoveries: { count: number; latest: WorkflowRecovery | null };
}

export interface RecoveryRow {
  source_run_id: string;
  recovery_run_id: string;
  request_key: string;
  reason: string;
  mode: 'FULL' | 'FAILED_ONLY';
  created_at: Date;
  recovery_status: WorkflowRunStatus;
}

export function toWorkflowRecovery(row: RecoveryRow): WorkflowRecovery {
  return {
    sourceRunId: row.source_run_id,
    recoveryRunId: row.recovery_run_id,
    requestKey: row.request_key,
    reason: row.reason,
    mode: fromDbMode(row.mode),
    createdAt: new Date(row.created_at),
    recoveryStatus: row.recovery_status,
  };
}

/** What `findWorkflowRun`'s statement selects for the lineage (jsonb, one column each). */
export interface LineageColumns {
  recovered_from: (Omit<RecoveryRow, 'created_at'> & { created_at: string }) | null;
  recovery_count: number;
  latest_recovery: (Omit<RecoveryRow, 'created_at'> & { created_at: string }) | null;
}

export function toWorkflowRunLineage(row: LineageColumns): WorkflowRunLineage {
  const link = (json: LineageColumns['recovered_from']) => (json ? toWorkflowRecovery({ ...json, created_at: new Date(json.created_at) }) : null);
  return { recoveredFrom: link(row.recovered_from), recoveries: { count: Number(row.recovery_count), latest: link(row.latest_recovery) } };
}
