/**
 * What a claim hands the worker for one job (src/queue/claim.ts fills it in one
 * statement): the lease identity the lifecycle functions take, and everything
 * a handler's `ctx` is built from. Part of the job contract, so `ctx` and step
 * inputs are typed without importing the queue.
 */
import type { JobLease } from '../model/job-rows.js';
import type { JsonValue } from '../model/json.js';

/** A claimed job: its lease identity (pass it to the lifecycle functions) and what the handler needs. */
export interface ClaimedJob extends JobLease {
  jobType: string;
  organizationId: string | null;
  payload: JsonValue;
  checkpoint: JsonValue | null;
  progress: JsonValue | null;
  timeoutSeconds: number;
  maxAttempts: number;
  workflowManaged: boolean;
  /** The job's execution resource key (null: none); its lease holds the key. */
  resourceKey: string | null;
  /** The job's concurrency key (null: none); its lease holds one of the key's slots (issue 35). */
  concurrencyKey: string | null;
  /** The job's rate key (null: none); its lease took one of the key's tokens (issue 35). */
  rateKey: string | null;
  /** The job's fairness key (null: none): claims take turns between a type's keys (issue 35). */
  fairKey: string | null;
  /**
   * The workflow step the job backs, with its prerequisites as they ended (null: a direct job). Read by the
   * claim statement itself, so a worker starts a step's handler without another round trip.
   */
  step: ClaimedStep | null;
  /** The enqueuing code's OpenTelemetry context (a workflow job: its run's), continued by the worker's span; null: none. */
  traceContext: JsonValue | null;
  /** How long the job had been due (its `next_run_at` passed) when claimed, on the database clock. */
  queueWaitMs: number;
  /** The job's stage label (enqueue's or a previous attempt's `ctx.setStage`); null: none. */
  stage: string | null;
}

/** What a claimed workflow job's handler sees of its workflow (the worker wraps it as `ctx.prerequisites`). */
export interface ClaimedStep {
  workflowRunId: string;
  stepKey: string;
  /** Every prerequisite, in key order; `output` is null unless it SUCCEEDED. */
  prerequisites: ClaimedPrerequisite[];
}

export interface ClaimedPrerequisite {
  key: string;
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELED';
  releaseMode: 'ON_SUCCESS' | 'ON_TERMINAL';
  /** null: an external step. */
  jobType: string | null;
  output: JsonValue | null;
}
