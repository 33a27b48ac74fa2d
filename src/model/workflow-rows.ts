/**
 * Workflow row types (snake_case, as selected) and domain types (camelCase),
 * one mapper each. Every SELECT of a whole run or step lists the same columns
 * as the row type here.
 */
import type { JsonValue } from './json.js';

export type WorkflowRunStatus = 'RUNNING' | 'WAITING_FOR_EXTERNAL' | 'SUCCEEDED' | 'COMPLETED_WITH_ERRORS' | 'CANCELED';
export type WorkflowStepStatus = 'BLOCKED' | 'ENQUEUED' | 'RUNNING' | 'WAITING_FOR_EXTERNAL' | 'SUCCEEDED' | 'FAILED' | 'CANCELED';
/** FUNCTION: a durable function's finished step (src/workflow/function-*.ts), recorded by its body's attempt. */
export type WorkflowStepExecutionKind = 'JOB' | 'EXTERNAL' | 'FUNCTION';
export type WorkflowDependencyReleaseMode = 'ON_SUCCESS' | 'ON_TERMINAL';

export const TERMINAL_RUN_STATUSES: readonly WorkflowRunStatus[] = ['SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'];
export const TERMINAL_STEP_STATUSES: readonly WorkflowStepStatus[] = ['SUCCEEDED', 'FAILED', 'CANCELED'];

export function isTerminalStepStatus(status: WorkflowStepStatus): boolean {
  return TERMINAL_STEP_STATUSES.includes(status);
}
export function isTerminalRunStatus(status: WorkflowRunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

export interface WorkflowRunRow {
  id: string;
  workflow_type: string;
  organization_id: string | null;
  status: WorkflowRunStatus;
  metadata: JsonValue;
  idempotency_key: string | null;
  result_step_key: string | null;
  result: JsonValue | null;
  status_reason: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export interface WorkflowRun {
  id: string;
  workflowType: string;
  organizationId: string | null;
  status: WorkflowRunStatus;
  metadata: JsonValue;
  idempotencyKey: string | null;
  resultStepKey: string | null;
  /** The result step's output, once the run SUCCEEDED. */
  result: JsonValue | null;
  statusReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /**
   * A person (or another system) must act: at least one step is
   * WAITING_FOR_EXTERNAL. Always true when `status` is WAITING_FOR_EXTERNAL;
   * also true for a RUNNING run whose only live work is an external step
   * with blocked dependents (blocked steps count as active, so the run reads
   * RUNNING). False once the run is over. Filter on it with
   * `listWorkflowRuns({ waitingForExternal: true })`.
   */
  waitingForExternal: boolean;
}

/** The computed column every read of a whole run selects beside the row (db/fragments.ts `runWaitingForExternal`). */
export interface WaitingForExternalColumn {
  waiting_for_external: boolean;
}

export function toWorkflowRun(row: WorkflowRunRow & WaitingForExternalColumn): WorkflowRun {
  return {
    id: row.id,
    workflowType: row.workflow_type,
    organizationId: row.organization_id,
    status: row.status,
    metadata: row.metadata,
    idempotencyKey: row.idempotency_key,
    resultStepKey: row.result_step_key,
    result: row.result,
    statusReason: row.status_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
    waitingForExternal: row.waiting_for_external,
  };
}

export interface WorkflowStepRow {
  id: string;
  workflow_run_id: string;
  step_key: string;
  execution_kind: WorkflowStepExecutionKind;
  job_type: string | null;
  organization_id: string | null;
  payload: JsonValue | null;
  priority: number | null;
  max_attempts: number | null;
  timeout_seconds: number | null;
  status: WorkflowStepStatus;
  job_id: string | null;
  released_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  dependency_count_total: number;
  dependency_count_pending: number;
  dependency_count_unsatisfied: number;
  status_reason: string | null;
  last_error_code: string | null;
  last_error_message: string | null;
  output: JsonValue | null;
  created_at: Date;
  updated_at: Date;
  /** The step's stage label at enqueue. */
  stage?: string | null;
  allow_continuation?: boolean;
  /** The step's job's live stage and progress, where a read joins the job (listWorkflowSteps). */
  job_stage?: string | null;
  job_progress?: JsonValue | null;
  /** A durable function's step: its place in the body's calls. */
  call_index?: number | null;
}

export interface WorkflowStep {
  id: string;
  workflowRunId: string;
  stepKey: string;
  executionKind: WorkflowStepExecutionKind;
  jobType: string | null;
  organizationId: string | null;
  payload: JsonValue | null;
  priority: number | null;
  maxAttempts: number | null;
  timeoutSeconds: number | null;
  status: WorkflowStepStatus;
  /** The job executing this step (the authoritative step -> job link). */
  jobId: string | null;
  releasedAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  dependencyCountTotal: number;
  dependencyCountPending: number;
  dependencyCountUnsatisfied: number;
  statusReason: string | null;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  output: JsonValue | null;
  createdAt: Date;
  updatedAt: Date;
  /** The stage of the step's job (its handler's `ctx.setStage`), else the step's label at enqueue; null: none. */
  stage: string | null;
  /** The step's job's last saved progress (listWorkflowSteps reads it; null elsewhere or when none). */
  progress: JsonValue | null;
  /** The step's job may continue (continueNow / continueAfter) without ending the step. */
  allowContinuation: boolean;
  /** A durable function's recorded step (kind FUNCTION): its place in the body's calls, 0-based; null for other kinds. */
  callIndex: number | null;
}

export function toWorkflowStep(row: WorkflowStepRow): WorkflowStep {
  return {
    id: row.id,
    workflowRunId: row.workflow_run_id,
    stepKey: row.step_key,
    executionKind: row.execution_kind,
    jobType: row.job_type,
    organizationId: row.organization_id,
    payload: row.payload,
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutSeconds: row.timeout_seconds,
    status: row.status,
    jobId: row.job_id,
    releasedAt: row.released_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    dependencyCountTotal: row.dependency_count_total,
    dependencyCountPending: row.dependency_count_pending,
    dependencyCountUnsatisfied: row.dependency_count_unsatisfied,
    statusReason: row.status_reason,
    lastErrorCode: row.last_error_code,
    lastErrorMessage: row.last_error_message,
    output: row.output,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    stage: row.job_stage ?? row.stage ?? null,
    progress: row.job_progress ?? null,
    allowContinuation: row.allow_continuation ?? false,
    callIndex: row.call_index ?? null,
  };
}

export interface WorkflowStepDependencyRow {
  workflow_run_id: string;
  prerequisite_step_id: string;
  prerequisite_step_key: string;
  dependent_step_id: string;
  dependent_step_key: string;
  release_mode: WorkflowDependencyReleaseMode;
}

export interface WorkflowStepDependency {
  workflowRunId: string;
  prerequisiteStepId: string;
  prerequisiteStepKey: string;
  dependentStepId: string;
  dependentStepKey: string;
  releaseMode: WorkflowDependencyReleaseMode;
}

export function toWorkflowStepDependency(row: WorkflowStepDependencyRow): WorkflowStepDependency {
  return {
    workflowRunId: row.workflow_run_id,
    prerequisiteStepId: row.prerequisite_step_id,
    prerequisiteStepKey: row.prerequisite_step_key,
    dependentStepId: row.dependent_step_id,
    dependentStepKey: row.dependent_step_key,
    releaseMode: row.release_mode,
  };
}

/** How a recovery re-runs a finished run: every step, or the failed ones and what depends on them. */
export const RECOVERY_MODES = ['full', 'failed_only'] as const;
export type WorkflowRecoveryMode = (typeof RECOVERY_MODES)[number];
export const toDbMode = (mode: WorkflowRecoveryMode): 'FULL' | 'FAILED_ONLY' => (mode === 'full' ? 'FULL' : 'FAILED_ONLY');
export const fromDbMode = (mode: 'FULL' | 'FAILED_ONLY'): WorkflowRecoveryMode => (mode === 'FULL' ? 'full' : 'failed_only');
