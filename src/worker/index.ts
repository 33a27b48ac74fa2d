/** The worker runtime's public API (re-exported by src/index.ts). */
export { createWorker, runWorker, DEFAULT_DRAIN_MS, type Worker, type WorkerState, type StopOptions } from './worker.js';
export {
  WORKER_INVALID_OPTIONS,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_SECONDS,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_REAPER_INTERVAL_MS,
  DEFAULT_REAPER_LIMIT,
  DEFAULT_SCHEDULER_INTERVAL_MS,
  DEFAULT_SCHEDULER_LIMIT,
  DEFAULT_RETENTION_INTERVAL_MS,
  DEFAULT_HEARTBEAT_FRACTION,
  DEFAULT_COMPLETION_BATCH_MS,
  type WorkerOptions,
} from './options.js';
export {
  defineJob,
  WORKER_INVALID_JOB_DEFINITION,
  type JobDefinition,
  type AnyJobDefinition,
  type JobHandler,
} from './define-job.js';
export type { JobContext } from './job-context.js';
export {
  RetryableError,
  TerminalError,
  JobAbortedError,
  JOB_HANDLER_ERROR,
  JOB_RETRY_REQUESTED,
  JOB_TERMINAL_ERROR,
  JOB_PAYLOAD_INVALID,
  JOB_OUTPUT_INVALID,
  JOB_TIMEOUT,
  JOB_WORKER_SHUTDOWN,
  JOB_BUFFER_EXPIRED,
  type RetryableErrorOptions,
  type TerminalErrorOptions,
  type JobAbortReason,
} from './job-errors.js';
export { createConsoleLogger, silentLogger, type WorkerLogger, type LogFields, type LogLevel } from './logger.js';
export type { WorkerEvents, WorkerEventName, WorkerEventListener, WorkerStats, WorkerOperation, JobInfo } from './events.js';
export { LISTENER_APPLICATION_NAME } from './listener.js';
