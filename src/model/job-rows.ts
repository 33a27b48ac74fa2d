/**
 * Job rows as selected from `runledger.job_queue` / `runledger.job_events`
 * (snake_case, exactly what `$queryRaw` returns) and the domain types callers
 * see (camelCase), with one mapper each.
 *
 * Tagged templates cannot share a SQL fragment, so every statement that
 * returns a whole job repeats the same column list by hand (reads.ts and
 * cancel.ts). Keep them identical to `JobRow`; `enqueue_request` is internal
 * and never selected.
 *
 * Job state machine (every arrow records the named event in the job's trail,
 * runledger.job_trail: ENQUEUED, LEASED, RUNNING and SUCCEEDED are read from
 * the job row's attempt columns, the others are job_events rows; see
 * src/queue/attempt-row.ts):
 *   (new)   -> PENDING        ENQUEUED
 *   PENDING -> LEASED         LEASED (+ RUNNING when claimed with markRunning)
 *   LEASED  -> LEASED         RUNNING (markJobRunning; heartbeats append nothing)
 *   LEASED  -> SUCCEEDED      SUCCEEDED
 *   LEASED  -> PENDING        RETRY_SCHEDULED (retryable failure, attempts left)
 *   LEASED  -> DEAD_LETTERED  DEAD_LETTERED (terminal failure or attempts exhausted)
 *   LEASED  -> PENDING        RELEASED (releaseJob: attempt given back)
 *   LEASED  -> PENDING        LEASE_EXPIRED (reaped, attempts left; or never started: attempt given back)
 *   LEASED  -> DEAD_LETTERED  LEASE_EXPIRED + DEAD_LETTERED (reaped, exhausted)
 *   PENDING | LEASED -> CANCELED  CANCELED (a leased job keeps lease_expires_at)
 */
import { sqltag } from '@prisma/client/runtime/client';
import type { JsonValue } from './json.js';

export type JobStatus = 'PENDING' | 'LEASED' | 'SUCCEEDED' | 'DEAD_LETTERED' | 'CANCELED';

/**
 * What a job is doing, for people: its stored `status`, except that a LEASED
 * job whose handler has started reads RUNNING. Derived on read (`toJob`), not
 * stored: the status enum and the lease fences stay as they are. "Started" is
 * the lease's own attempt marked running (`attempt_running_at` on the job row,
 * src/queue/attempt-row.ts): the worker marks each job running at its claim, a
 * hand loop with `markJobRunning` (or `claimJobs({ markRunning: true })`).
 * A row read without that column (a statement of its own) falls back to
 * `started_at`, the first start of the run.
 */
export type JobState = 'PENDING' | 'LEASED' | 'RUNNING' | 'SUCCEEDED' | 'DEAD_LETTERED' | 'CANCELED';

export function jobState(status: JobStatus, started: boolean): JobState {
  return status === 'LEASED' && started ? 'RUNNING' : status;
}

export type JobEventType =
  | 'ENQUEUED'
  | 'LEASED'
  | 'RUNNING'
  | 'RETRY_SCHEDULED'
  | 'RELEASED'
  | 'SUCCEEDED'
  | 'DEAD_LETTERED'
  | 'CANCELED'
  | 'REQUEUED'
  | 'LEASE_EXPIRED'
  | 'STAGE_CHANGED'
  | 'PROGRESS';

export interface JobRow {
  id: string;
  job_type: string;
  organization_id: string | null;
  payload: JsonValue;
  status: JobStatus;
  priority: number;
  attempt: number;
  max_attempts: number;
  run_number: number;
  timeout_seconds: number;
  next_run_at: Date;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  heartbeat_at: Date | null;
  idempotency_key: string | null;
  progress: JsonValue | null;
  checkpoint: JsonValue | null;
  output: JsonValue | null;
  last_error_code: string | null;
  last_error_message: string | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  resource_key: string | null;
  stage?: string | null;
  concurrency_key?: string | null;
  rate_key?: string | null;
  fair_key?: string | null;
  /** The lease's attempt was marked running (JOB_ROW_COLUMNS selects it); absent: read from started_at. */
  running?: boolean | null;
  /** The debounce or throttle window whose job this is (JOB_ROW_COLUMNS selects it); null or absent: none. */
  enqueue_window?: { kind: 'DEBOUNCE' | 'THROTTLE'; key: string; closesAtMs: number | null } | null;
}

/** The debounce or throttle window a job is the current job of (enqueueJob's `debounce` / `throttle`). */
export interface JobEnqueueWindow {
  kind: 'debounce' | 'throttle';
  key: string;
  /**
   * Debounce: the latest the job can be pushed to (the window's first request + maxWaitMs; null: no cap).
   * Throttle: the end of the window (requests before it return this job).
   */
  closesAt: Date | null;
}

export interface Job {
  id: string;
  jobType: string;
  /** null: a job without an organization. */
  organizationId: string | null;
  payload: JsonValue;
  /** The stored status (what filters, fences and compare-and-set calls use). */
  status: JobStatus;
  /** What to show: `status`, except RUNNING for a LEASED job whose handler has started (see JobState). */
  state: JobState;
  /** Higher runs first. */
  priority: number;
  /** Attempts started in the current run (0 until first claimed). */
  attempt: number;
  maxAttempts: number;
  runNumber: number;
  timeoutSeconds: number;
  /** Not claimable before this instant. */
  nextRunAt: Date;
  leaseOwner: string | null;
  /** On a CANCELED job: the quiescence marker (the canceled handler's lease ran until then). */
  leaseExpiresAt: Date | null;
  heartbeatAt: Date | null;
  idempotencyKey: string | null;
  progress: JsonValue | null;
  checkpoint: JsonValue | null;
  output: JsonValue | null;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Execution resource: at most one LEASED job per key at any time (null: none). */
  resourceKey: string | null;
  /** The phase the job is in: its enqueue's label, then the handler's `ctx.setStage` (null: none). */
  stage: string | null;
  /** Concurrency key: at most the key's limit of its jobs LEASED at once (null: none; listConcurrencyLimits). */
  concurrencyKey: string | null;
  /** Rate key: each start of the job takes a token of the key's bucket (null: none; listRateLimits). */
  rateKey: string | null;
  /** The job's fairness key (claims take turns between a type's keys); null: none. */
  fairKey: string | null;
  /**
   * Present only on the job a debounce or throttle key's window currently names: why a PENDING job waits
   * (each request of the key in the window moves a debounced job; docs/guide/flow-control.md). A key's
   * earlier jobs no longer carry it.
   */
  enqueueWindow?: JobEnqueueWindow;
}

/**
 * The columns `toJob` reads (a JobRow), qualified by the alias `jq`: one list
 * for every statement that selects a whole job (`FROM runledger.job_queue jq`).
 */
export const JOB_ROW_COLUMNS = sqltag`jq.id, jq.job_type, jq.organization_id, jq.payload, jq.status, jq.priority, jq.attempt, jq.max_attempts,
       jq.run_number, jq.timeout_seconds, jq.next_run_at, jq.lease_owner, jq.lease_expires_at, jq.heartbeat_at, jq.idempotency_key,
       jq.progress, jq.checkpoint, jq.output, jq.last_error_code, jq.last_error_message, jq.created_at, jq.updated_at, jq.started_at,
       jq.finished_at, jq.resource_key, jq.stage, jq.concurrency_key, jq.rate_key, jq.fair_key, jq.attempt_running_at IS NOT NULL AS running,
       (SELECT jsonb_build_object('kind', w.kind, 'key', w.window_key, 'closesAtMs', floor(extract(epoch FROM w.closes_at) * 1000))
          FROM runledger.enqueue_windows w WHERE w.job_id = jq.id LIMIT 1) AS enqueue_window`;

export function toJob(row: JobRow): Job {
  return {
    id: row.id,
    jobType: row.job_type,
    organizationId: row.organization_id,
    payload: row.payload,
    status: row.status,
    state: jobState(row.status, row.running ?? row.started_at !== null),
    priority: row.priority,
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    runNumber: row.run_number,
    timeoutSeconds: row.timeout_seconds,
    nextRunAt: row.next_run_at,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    heartbeatAt: row.heartbeat_at,
    idempotencyKey: row.idempotency_key,
    progress: row.progress,
    checkpoint: row.checkpoint,
    output: row.output,
    lastErrorCode: row.last_error_code,
    lastErrorMessage: row.last_error_message,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    resourceKey: row.resource_key,
    stage: row.stage ?? null,
    concurrencyKey: row.concurrency_key ?? null,
    rateKey: row.rate_key ?? null,
    fairKey: row.fair_key ?? null,
    ...(row.enqueue_window ? { enqueueWindow: toEnqueueWindow(row.enqueue_window) } : {}),
  };
}

function toEnqueueWindow(w: NonNullable<JobRow['enqueue_window']>): JobEnqueueWindow {
  return { kind: w.kind === 'DEBOUNCE' ? 'debounce' : 'throttle', key: w.key, closesAt: w.closesAtMs === null ? null : new Date(w.closesAtMs) };
}

/**
 * The identity of one lease: every lifecycle write is fenced to all four
 * fields (plus `status = 'LEASED'` and an unexpired lease) in its WHERE clause.
 */
export interface JobLease {
  jobId: string;
  runNumber: number;
  attempt: number;
  workerId: string;
  leaseExpiresAt: Date;
}

export interface JobEventRow {
  id: string;
  job_id: string;
  event_type: JobEventType;
  run_number: number;
  attempt: number;
  payload: JsonValue | null;
  created_at: Date;
}

export interface JobEvent {
  id: string;
  jobId: string;
  eventType: JobEventType;
  runNumber: number;
  attempt: number;
  payload: JsonValue | null;
  createdAt: Date;
}

export function toJobEvent(row: JobEventRow): JobEvent {
  return {
    id: row.id,
    jobId: row.job_id,
    eventType: row.event_type,
    runNumber: row.run_number,
    attempt: row.attempt,
    payload: row.payload,
    createdAt: row.created_at,
  };
}

/** jsonb parameters travel as JSON text; SQL NULL stays NULL. */
export function jsonParam(value: JsonValue | null | undefined): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}
