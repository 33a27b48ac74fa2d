/**
 * runledger: a durable job queue and workflow (DAG) engine inside your own
 * PostgreSQL, for Prisma 7 backends. This module is the whole public API;
 * nothing is reached through deep imports, and test/unit/public-api.test.ts
 * pins its runtime exports.
 *
 * Conventions (docs/guide/typed-api.md, "API conventions"): every operation is
 * `fn(db, input)` with one input object (a batch form takes an array of
 * them); `get*` throws NotFoundError, `find*` returns null, `list*` returns a
 * Page `{ items, nextCursor }`; the compare-and-* functions report their
 * outcomes as a `kind` instead of throwing.
 */
export {
  RunledgerError,
  ValidationError,
  NotFoundError,
  ConflictError,
  UnavailableError,
  InternalError,
  isRunledgerError,
  type ErrorCategory,
} from './errors/runledger-error.js';
export { ERROR_CODES, JOB_OUTCOME_CODES, type ErrorCode, type JobOutcomeCode } from './errors/codes.js';

export type { Db, Tx, PrismaClientLike, PrismaTransactionLike } from './client/types.js';
export { preparedStatementName } from './client/connect.js';
export { poolDb, type PoolDbOptions } from './client/from-pool.js';
export { migrate, type MigrateOptions, type MigrateResult } from './migrate/migrate.js';
export type { JsonValue } from './model/json.js';
export type { Jsonified } from './validation/jsonified.js';
export type { StandardSchemaV1 } from './validation/standard-schema.js';
/** Channels runledger NOTIFYs on, for a host that LISTENs itself (payloads: docs/guide/workflows.md). */
export { WORKFLOW_RUN_TERMINAL_CHANNEL, WORKFLOW_STEP_CHANGED_CHANNEL, JOB_AVAILABLE_CHANNEL } from './model/constants.js';
export { noOrganizationScope, adminScope, organizationScope, type Scope } from './db/scope.js';
export type { Page } from './queue/inputs.js';

// ---------------------------------------------------------------------------
// Queue
// ---------------------------------------------------------------------------
export { enqueueJob, enqueueJobs } from './queue/enqueue.js';
export type { EnqueueJobResult } from './queue/insert-jobs.js';
export type { EnqueueJobSettings } from './queue/inputs.js';
export { claimJobs } from './queue/claim.js';
export { setConcurrencyLimit, listConcurrencyLimits, type ConcurrencyLimit } from './queue/concurrency.js';
export { setRateLimit, listRateLimits, type RateLimit } from './queue/rate-limits.js';
export type { ClaimedJob, ClaimedStep, ClaimedPrerequisite } from './job/claimed-job.js';
export { markJobRunning, heartbeatJob } from './queue/lifecycle.js';
export { completeJob, completeJobs } from './queue/complete.js';
export { failJob } from './queue/fail.js';
export type { LeaseIdentity, CompleteJobOutcome, FailJobResult } from './queue/lease.js';
export { releaseJob } from './queue/release-lease.js';
export { completeJobSuccess, completeJobsSuccess, enqueueOrGetActiveWorkflow } from './deprecated.js';
export { setJobStage, recordJobProgress, type JobProgress } from './queue/stage.js';
export { continueJob } from './queue/continue.js';
export type { SetJobStageInput, RecordJobProgressInput, ContinueJobInput } from './queue/inputs.js';
export { cancelJob } from './queue/cancel.js';
export { reapExpiredLeases, type ReapResult } from './queue/reap.js';
export { getJob, findJob, listJobs, listJobEvents } from './queue/reads.js';
export { jobHandle, type JobHandle, type JobHandleOptions, type GetJobResultOptions } from './queue/job-handle.js';
export {
  syncJobDefinitions,
  listJobDefinitions,
  setJobDefinitionEnabled,
  type JobDefinitionRecord,
  type SyncJobDefinitionsResult,
  type ListJobDefinitionsInput,
  type SetJobDefinitionEnabledInput,
} from './queue/catalog.js';
export {
  recordJobEnqueueIntent,
  type RecordJobEnqueueIntentInput,
  type RecordJobEnqueueIntentSettings,
  type RecordedEnqueueIntent,
} from './queue/intent-record.js';
export { promoteEnqueueIntents, type PromoteEnqueueIntentsInput, type PromoteEnqueueIntentsResult, type PromotedIntent } from './queue/intent-promote.js';
export { getEnqueueIntentStats, type EnqueueIntentStats } from './queue/intent-stats.js';
export { listJobAttempts, type JobAttempt, type JobAttemptOutcome, type RetryDelaySource, type ListJobAttemptsInput } from './queue/attempts.js';
export type { RetryPolicy } from './job/retry-policy.js';
export type { BackoffPolicy } from './job/defaults.js';
export { DEFAULT_BACKOFF } from './job/defaults.js';
export type { Job, JobEnqueueWindow, JobEvent, JobEventType, JobLease, JobState, JobStatus } from './model/job-rows.js';
export type {
  EnqueueJobInput,
  EnqueueOptions,
  ClaimJobsInput,
  HeartbeatJobInput,
  CompleteJobInput,
  FailJobInput,
  ReleaseJobInput,
  CancelJobInput,
  ReapExpiredLeasesInput,
  JobRef,
  ListJobsInput,
  ListJobEventsInput,
} from './queue/inputs.js';

// ---------------------------------------------------------------------------
// Workflows
// ---------------------------------------------------------------------------
export { workflow, type WorkflowBuilder, type JobStepSettings, type TypedWorkflowRunInput } from './workflow/builder.js';
export type { WorkflowRunInput, WorkflowStepInput, WorkflowDependencyInput } from './workflow/run-definition.js';
export { enqueueWorkflowRun, enqueueWorkflowRuns, type EnqueueWorkflowOptions, type EnqueueWorkflowRunResult } from './workflow/enqueue.js';
export { completeExternalWorkflowStep, type CompleteExternalWorkflowStepInput } from './workflow/external.js';
export { cancelWorkflowRun, type CancelWorkflowRunInput } from './workflow/cancel.js';
export {
  enqueueOrGetActiveWorkflowRun,
  releaseQuiescedActiveKeys,
  type EnqueueActiveWorkflowInput,
  type ActiveWorkflowOutcome,
} from './workflow/active-keys.js';
export { appendWorkflowSteps, type AppendWorkflowStepsResult, type AppendedStep } from './workflow/append.js';
export {
  defineFunction,
  type FunctionDefinition,
  type FunctionSettings,
  type FunctionRunOptions,
  type FunctionResult,
} from './workflow/function-define.js';
export type {
  FunctionContext,
  TransactionalFunctionContext,
  FunctionStepInfo,
  FunctionStepSettings,
  FunctionStepResult,
  SignalWaitOptions,
  SignalWaitResult,
} from './workflow/function-context.js';
export { signal, type SignalOptions, type SignalReceipt } from './workflow/function-signal.js';
export type { AppendWorkflowStepsInput } from './workflow/append-request.js';
export {
  getWorkflowRun,
  findWorkflowRun,
  listWorkflowRuns,
  countWorkflowRuns,
  listWorkflowSteps,
  listWorkflowStepDependencies,
  type WorkflowRunRef,
  type WorkflowRunFilter,
  type ListWorkflowRunsInput,
  type ListWorkflowStepsInput,
  type WorkflowRunWithLineage,
} from './workflow/reads.js';
export type {
  WorkflowRun,
  WorkflowRunStatus,
  WorkflowStep,
  WorkflowStepStatus,
  WorkflowStepExecutionKind,
  WorkflowDependencyReleaseMode,
  WorkflowStepDependency,
} from './model/workflow-rows.js';
export {
  workflowRunHandle,
  enqueueWorkflowRunHandle,
  type WorkflowRunHandle,
  type WorkflowRunHandleOptions,
  type EnqueueWorkflowRunHandleOptions,
  type EnqueuedWorkflowRunHandle,
  type GetResultOptions,
} from './workflow/handle.js';
export { createWorkflowRunListener, type WorkflowRunListener, type WorkflowRunListenerOptions } from './workflow/run-listener.js';
export type { StepPrerequisite, StepPrerequisites } from './job/contract.js';

// ---------------------------------------------------------------------------
// Replay and recovery
// ---------------------------------------------------------------------------
export * from './replay/index.js';
export * from './recovery/index.js';

// ---------------------------------------------------------------------------
// Integrity
// ---------------------------------------------------------------------------
export { verifyIntegrity, type VerifyIntegrityOptions, type IntegrityReport } from './integrity/verify.js';
export type { IntegrityViolation, IntegrityViolationKind } from './integrity/violations.js';

// ---------------------------------------------------------------------------
// Worker runtime
// ---------------------------------------------------------------------------
export * from './worker/index.js';

// ---------------------------------------------------------------------------
// Cron schedules
// ---------------------------------------------------------------------------
export * from './schedules/index.js';

// ---------------------------------------------------------------------------
// Retention
// ---------------------------------------------------------------------------
export * from './retention/index.js';

// ---------------------------------------------------------------------------
// Queue metrics
// ---------------------------------------------------------------------------
export * from './metrics/index.js';

// ---------------------------------------------------------------------------
// Web dashboard
// ---------------------------------------------------------------------------
export * from './dashboard/index.js';
