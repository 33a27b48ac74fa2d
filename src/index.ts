/**
 * runledger: a durable job queue and workflow (DAG) engine inside your own
 * PostgreSQL, for Prisma 7 backends. This module is the whole public API;
 * nothing is reached through deep imports.
 */
export {
  RunledgerError,
  ValidationError,
  NotFoundError,
  ConflictError,
  UnavailableError,
  InternalError,
  isRunledgerError,
  databaseErrorInfo,
  normalizeDatabaseError,
  RETRYABLE_SQLSTATES,
  type ErrorCategory,
  type RunledgerErrorOptions,
  type DatabaseErrorInfo,
} from './errors/index.js';

export type { Db, Tx, PrismaClientLike, PrismaTransactionLike } from './client/types.js';
export { isTransactionClient } from './client/types.js';
export { preparedStatementName } from './client/connect.js';
export {
  withTransaction,
  ensureReadCommitted,
  setLocalLockTimeout,
  setLocalStatementTimeout,
  type OwnedTransactionOptions,
  type TransactionContext,
} from './client/transaction.js';

export { migrate, PRISMA_MIGRATE_ADVISORY_LOCK_KEY, type MigrateOptions, type MigrateResult } from './migrate/migrate.js';
export { PACKAGED_MIGRATIONS_DIR } from './migrate/migration-files.js';
export { RUNLEDGER_SCHEMA, WORKFLOW_RUN_TERMINAL_CHANNEL, JOB_AVAILABLE_CHANNEL } from './db/constants.js';
export type { JsonValue } from './validation/primitives.js';

// ---------------------------------------------------------------------------
// Queue
// ---------------------------------------------------------------------------
export { globalScope, adminScope, organizationScope, type Scope } from './db/scope.js';
export { enqueueJob, enqueueJobs, type EnqueueJobResult } from './queue/enqueue.js';
export type { EnqueueOptions } from './queue/schemas.js';
export { claimJobs, type ClaimedJob } from './queue/claim.js';
export {
  markJobRunning,
  heartbeatJob,
  completeJobSuccess,
  completeJobsSuccess,
  failJob,
  type LeaseIdentity,
  type CompleteJobOutcome,
  type FailJobResult,
} from './queue/lifecycle.js';
export { cancelJob } from './queue/cancel.js';
export { releaseJob } from './queue/release.js';
export { reapExpiredLeases, type ReapResult } from './queue/reap.js';
export { getJob, findJob, listJobs, listJobEvents, type JobPage } from './queue/reads.js';
export { retryDelayMs, retryDelayCeilingMs, DEFAULT_RETRY_POLICY, type RetryPolicy } from './queue/retry-policy.js';
export type { Job, JobEvent, JobEventType, JobLease, JobStatus } from './queue/rows.js';
export type {
  EnqueueJobInput,
  ClaimJobsInput,
  HeartbeatOptions,
  CompleteJobOptions,
  CompleteJobsItem,
  FailJobOptions,
  CancelJobInput,
  ReapExpiredLeasesInput,
  ListJobsInput,
} from './queue/schemas.js';

// ---------------------------------------------------------------------------
// Workflows
// ---------------------------------------------------------------------------
export { workflow, WorkflowBuilder, type JobStepSettings } from './workflow/builder.js';
export {
  validateWorkflowRun,
  type WorkflowRunInput,
  type WorkflowStepInput,
  type WorkflowDependencyInput,
  type ValidatedWorkflowRun,
} from './workflow/definition.js';
export { MAX_WORKFLOW_RUN_BATCH, enqueueWorkflowRun, enqueueWorkflowRuns, type EnqueueWorkflowRunResult } from './workflow/enqueue.js';
export { completeExternalWorkflowStep, type CompleteExternalWorkflowStepInput } from './workflow/external.js';
export { cancelWorkflowRun, type CancelWorkflowRunInput } from './workflow/cancel.js';
export {
  getWorkflowRun,
  findWorkflowRun,
  listWorkflowRuns,
  countWorkflowRuns,
  listWorkflowSteps,
  listWorkflowStepDependencies,
  type WorkflowRunFilter,
  type ListWorkflowRunsInput,
  type WorkflowRunPage,
} from './workflow/reads.js';
export type {
  WorkflowRun,
  WorkflowRunStatus,
  WorkflowStep,
  WorkflowStepStatus,
  WorkflowStepExecutionKind,
  WorkflowDependencyReleaseMode,
  WorkflowStepDependency,
} from './workflow/rows.js';
export {
  workflowRunHandle,
  enqueueWorkflowRunHandle,
  DEFAULT_RESULT_TIMEOUT_MS,
  type WorkflowRunHandle,
  type WorkflowRunHandleOptions,
  type EnqueueWorkflowRunHandleOptions,
  type EnqueuedWorkflowRunHandle,
  type GetResultOptions,
} from './workflow/handle.js';
export { createWorkflowRunListener, type WorkflowRunListener } from './workflow/run-listener.js';

// ---------------------------------------------------------------------------
// Replay and recovery
// ---------------------------------------------------------------------------
export * from './replay/index.js';

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
