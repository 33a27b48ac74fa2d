/**
 * The telemetry types the rest of runledger (and its declarations) refer to,
 * free of `@opentelemetry/api` types so that a host without that optional
 * package still type-checks against runledger's declarations.
 */
import type { ClaimedJob } from '../job/claimed-job.js';
import type { JobInfo } from './events.js';

/** The `telemetry` worker option: providers default to the globally registered ones. */
export interface WorkerTelemetryOptions {
  /** An OpenTelemetry `TracerProvider`; default: the global one (`trace.getTracerProvider()`). */
  tracerProvider?: object;
  /** An OpenTelemetry `MeterProvider`; default: the global one (`metrics.getMeterProvider()`). */
  meterProvider?: object;
}

/** What a job execution holds while it runs: its span's context, to run the handler in. */
export interface JobSpan {
  run<T>(fn: () => T): T;
}

/** What a job execution asks of the worker's telemetry (absent: none). */
export interface JobTelemetry {
  begin(job: ClaimedJob, info: JobInfo): JobSpan;
}
