/** Row and domain types of `runledger.job_schedules`, and the one mapper between them. */
import type { JsonValue } from '../model/json.js';
import type { WorkflowRunInput } from '../workflow/run-definition.js';

/** A workflow schedule's target: the run input each slot enqueues (organization and idempotency key come from the schedule and the slot). */
export interface ScheduledWorkflow {
  workflowType: string;
  run: Omit<WorkflowRunInput, 'organizationId' | 'idempotencyKey'>;
}

export interface ScheduleRow {
  id: string;
  schedule_key: string;
  cron: string;
  timezone: string;
  job_type: string | null;
  organization_id: string | null;
  payload: JsonValue | null;
  workflow_type: string | null;
  workflow_run: JsonValue | null;
  priority: number;
  max_attempts: number;
  timeout_seconds: number;
  resource_key: string | null;
  enabled: boolean;
  catch_up_max_slots: number;
  next_run_at: Date;
  last_slot_at: Date | null;
  last_job_id: string | null;
  last_workflow_run_id: string | null;
  last_error_code: string | null;
  last_error_message: string | null;
  last_error_at: Date | null;
  declared_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface Schedule {
  id: string;
  key: string;
  cron: string;
  timezone: string;
  /** The job each slot enqueues; null for a workflow schedule. */
  jobType: string | null;
  organizationId: string | null;
  /** The job's payload; null for a workflow schedule. */
  payload: JsonValue | null;
  /** The workflow run each slot enqueues; null for a job schedule. */
  workflow: ScheduledWorkflow | null;
  priority: number;
  maxAttempts: number;
  timeoutSeconds: number;
  resource: string | null;
  enabled: boolean;
  catchUp: { maxSlots: number };
  /** The next slot not yet materialised (kept while paused; recomputed on resume). */
  nextRunAt: Date;
  /** The latest slot materialised, and the job it made. */
  lastSlotAt: Date | null;
  lastJobId: string | null;
  /** The workflow run the latest slot made (workflow schedules). */
  lastWorkflowRunId: string | null;
  /** Why the latest failed slot could not be materialised; cleared by the next slot that succeeds. */
  lastError: { code: string; message: string; at: Date } | null;
  /** The owner tag of a schedule declared in worker options (`createWorker({ declareSchedules })`); null otherwise. */
  declaredBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export function toSchedule(row: ScheduleRow): Schedule {
  return {
    id: row.id,
    key: row.schedule_key,
    cron: row.cron,
    timezone: row.timezone,
    jobType: row.job_type,
    organizationId: row.organization_id,
    payload: row.payload,
    workflow: row.workflow_type === null ? null : { workflowType: row.workflow_type, run: row.workflow_run as ScheduledWorkflow['run'] },
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutSeconds: row.timeout_seconds,
    resource: row.resource_key,
    enabled: row.enabled,
    catchUp: { maxSlots: row.catch_up_max_slots },
    nextRunAt: row.next_run_at,
    lastSlotAt: row.last_slot_at,
    lastJobId: row.last_job_id,
    lastWorkflowRunId: row.last_workflow_run_id,
    lastError:
      row.last_error_code === null ? null : { code: row.last_error_code, message: row.last_error_message ?? '', at: row.last_error_at ?? row.updated_at },
    declaredBy: row.declared_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
