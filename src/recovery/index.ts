/** Workflow recovery: the public surface (docs/guide/replay-recovery.md). */
export { recoverWorkflowRun, type RecoverWorkflowRunResult } from './recover.js';
export { listWorkflowRecoveries } from './lineage.js';
export type { WorkflowRecovery, WorkflowRunLineage } from '../workflow/run-lineage.js';
export type { ListWorkflowRecoveriesInput, RecoverWorkflowRunInput } from './inputs.js';
export type { WorkflowRecoveryMode } from '../model/workflow-rows.js';
