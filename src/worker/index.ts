/** The worker runtime's public API (re-exported by src/index.ts). */
export { createWorker, runWorker, type Worker, type WorkerState, type StopOptions } from './worker.js';
export type { WorkerOptions } from './options.js';
export type { WorkerTelemetryOptions } from './telemetry-options.js';
export { defineJob } from '../job/define-job.js';
export type {
  JobDefinition,
  AnyJobDefinition,
  JobHandler,
  JobSettings,
  TransactionalJobSettings,
  TransactionClientOf,
  JobPayload,
  JobParsedPayload,
  JobOutput,
} from '../job/contract.js';
export type { JobContext, TransactionalJobContext } from '../job/contract.js';
export { continueNow, continueAfter, type Continuation, type ContinuationOptions } from '../job/continuation.js';
export {
  RetryableError,
  TerminalError,
  JobAbortedError,
  type RetryableErrorOptions,
  type TerminalErrorOptions,
  type JobAbortReason,
} from '../job/errors.js';
export { createConsoleLogger, silentLogger, type WorkerLogger, type LogFields, type LogLevel } from '../job/logger.js';
export type { WorkerEvents, WorkerEventName, WorkerEventListener, WorkerStats, WorkerOperation, JobInfo } from './events.js';
export type { ClaimSizeReason } from './claim-size.js';
