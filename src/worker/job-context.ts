/**
 * `ctx`, the second argument of every handler: who this attempt is, the
 * signal that tells it to stop, and the two writes it may make while it runs.
 * Both writes are heartbeats fenced to this attempt's lease: once the lease is
 * gone they throw `job.lease_owner_mismatch` and change nothing.
 */
import { jobInfo } from './events.js';
import type { ClaimedJob } from '../queue/claim.js';
import type { JsonValue } from '../validation/primitives.js';
import type { WorkerLogger } from './logger.js';
import { NO_PREREQUISITES, type StepInputs, type StepPrerequisites } from '../workflow/step-inputs.js';

export interface JobContext {
  readonly jobId: string;
  readonly jobType: string;
  /** 1 for the original run; a replay or requeue starts the next run. */
  readonly runNumber: number;
  /** 1-based attempt within the run (this one included). */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** null: a job without an organization. */
  readonly organizationId: string | null;
  /** The worker holding the lease. */
  readonly workerId: string;
  /** True when the job backs a workflow step. */
  readonly workflowManaged: boolean;
  /** The workflow run of the step this job backs; null for a direct job. The run's organization is `organizationId`. */
  readonly workflowRunId: string | null;
  /** The key of the step this job backs; null for a direct job. */
  readonly stepKey: string | null;
  /**
   * The step's prerequisites with their terminal status and output
   * (`ctx.prerequisites.get('crawl')?.output`; typed with
   * `ctx.prerequisites.get('crawl', crawl)`). Empty for a direct job.
   */
  readonly prerequisites: StepPrerequisites;
  /** The checkpoint a previous attempt saved (or this one, after `saveCheckpoint`). */
  readonly checkpoint: JsonValue | null;
  /** The last saved progress. */
  readonly progress: JsonValue | null;
  /**
   * Aborted when the job times out (`timeoutSeconds`), the lease is lost, or
   * the worker shuts down past its drain deadline. `signal.reason` is a
   * JobAbortedError whose `reason` says which. Pass it to fetch, pg, timers.
   */
  readonly signal: AbortSignal;
  /** The worker's logger, with jobId and jobType bound. */
  readonly logger: WorkerLogger;
  /** Saves progress (JSON; null clears) and extends the lease. */
  saveProgress(progress: JsonValue | null): Promise<void>;
  /** Saves a checkpoint a later attempt will start from (JSON; null clears) and extends the lease. */
  saveCheckpoint(checkpoint: JsonValue | null): Promise<void>;
}

export type SaveFields = { progress: JsonValue | null } | { checkpoint: JsonValue | null };

export function createJobContext(
  job: ClaimedJob,
  signal: AbortSignal,
  logger: WorkerLogger,
  save: (fields: SaveFields) => Promise<void>,
  step: StepInputs | undefined,
): JobContext {
  let progress = job.progress;
  let checkpoint = job.checkpoint;
  return Object.freeze({
    ...jobInfo(job),
    workflowManaged: job.workflowManaged,
    workflowRunId: step?.workflowRunId ?? null,
    stepKey: step?.stepKey ?? null,
    prerequisites: step?.prerequisites ?? NO_PREREQUISITES,
    get progress() {
      return progress;
    },
    get checkpoint() {
      return checkpoint;
    },
    signal,
    logger,
    async saveProgress(value: JsonValue | null) {
      await save({ progress: value });
      progress = value;
    },
    async saveCheckpoint(value: JsonValue | null) {
      await save({ checkpoint: value });
      checkpoint = value;
    },
  });
}
