/** Row and domain types of `runledger.job_schedules`, and the one mapper between them. */
import type { JsonValue } from '../validation/primitives.js';

export interface ScheduleRow {
  id: string;
  schedule_key: string;
  cron: string;
  timezone: string;
  job_type: string;
  organization_id: string | null;
  payload: JsonValue;
  priority: number;
  max_attempts: number;
  timeout_seconds: number;
  resource_key: string | null;
  enabled: boolean;
  catch_up_max_slots: number;
  next_run_at: Date;
  last_slot_at: Date | null;
  last_job_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface Schedule {
  id: string;
  key: string;
  cron: string;
  timezone: string;
  jobType: string;
  organizationId: string | null;
  payload: JsonValue;
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
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutSeconds: row.timeout_seconds,
    resource: row.resource_key,
    enabled: row.enabled,
    catchUp: { maxSlots: row.catch_up_max_slots },
    nextRunAt: row.next_run_at,
    lastSlotAt: row.last_slot_at,
    lastJobId: row.last_job_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
