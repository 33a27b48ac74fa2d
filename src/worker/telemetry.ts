/**
 * A worker's OpenTelemetry spans and metrics (when `@opentelemetry/api` is
 * installed: see otel-api.ts).
 *
 * Spans: one CONSUMER span per job execution, `process <jobType>`, started
 * when the handler's turn comes (`begin`) and ended when the outcome is
 * committed or known lost (the worker's `job:*` events), so its duration
 * covers the handler and the commit of its outcome. Its parent is the trace
 * context stored with the job at enqueue (a workflow step's job: its run's),
 * so one trace spans the producer's request and every handler it caused.
 * The handler runs inside the span's context: spans the handler opens (HTTP
 * calls, queries) are its children. Transitions are span events.
 *
 * Attributes follow the OpenTelemetry messaging conventions where they fit
 * (`messaging.system` = `runledger`, `messaging.destination.name` = the job
 * type, `messaging.message.id` = the job id, `messaging.operation.*` =
 * `process`, `error.type` = the failure code) and are namespaced
 * `runledger.*` otherwise (attempt, run number, workflow run and step, outcome, and the job's concurrency key
 * `runledger.concurrency_key` when it has one: its lease holds one of the key's slots; `runledger.rate_key`:
 * its start took one of the key's tokens; `runledger.fair_key`: the key it took turns with).
 *
 * Metrics (meter `runledger`): `messaging.client.consumed.messages` (jobs
 * claimed and started), `messaging.process.duration` (seconds, per outcome),
 * `runledger.job.queue_wait.duration` (seconds a job had been due when
 * claimed, database clock), and counters `runledger.job.succeeded` and
 * `runledger.job.failed` (`runledger.job.will_retry` says which failures
 * retry).
 */
import { createRequire } from 'node:module';
import type { Attributes, Context, Counter, Histogram, Meter, MeterProvider, Span, Tracer, TracerProvider } from '@opentelemetry/api';
import type { ClaimedJob } from '../job/claimed-job.js';
import type { JobInfo, WorkerEventEmitter } from './events.js';
import type { OpenTelemetryApi } from '../telemetry/otel-api.js';
import type { JobSpan, JobTelemetry, WorkerTelemetryOptions } from './telemetry-options.js';
import { traceCarrierOf } from '../telemetry/trace-context.js';

type Outcome = 'succeeded' | 'retry_scheduled' | 'dead_lettered' | 'lease_lost' | 'unrecorded';

const INSTRUMENTATION_NAME = 'runledger';
/** The package's own version (src/ and dist/ both sit two levels below package.json), so it never goes stale. */
const INSTRUMENTATION_VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

interface Instruments {
  consumed: Counter;
  processDuration: Histogram;
  queueWait: Histogram;
  succeeded: Counter;
  failed: Counter;
}

interface Entry {
  span: Span;
  context: Context;
  attributes: Attributes;
  startedAt: number;
}

export class WorkerTelemetry implements JobTelemetry {
  private readonly tracer: Tracer;
  private readonly instruments: Instruments;
  /** Spans of executions whose outcome is not recorded yet, by the event payloads' job identity. */
  private readonly open = new Map<JobInfo, Entry>();
  /** The same entries by job id: `worker:error` names only the job id. */
  private readonly openById = new Map<string, JobInfo>();
  private readonly attributesByType = new Map<string, Attributes>();

  constructor(
    private readonly api: OpenTelemetryApi,
    options: WorkerTelemetryOptions,
    events: WorkerEventEmitter,
  ) {
    const tracerProvider = (options.tracerProvider as TracerProvider | undefined) ?? api.trace.getTracerProvider();
    const meterProvider = (options.meterProvider as MeterProvider | undefined) ?? api.metrics.getMeterProvider();
    this.tracer = tracerProvider.getTracer(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION);
    this.instruments = createInstruments(meterProvider.getMeter(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION));
    events.on('job:success', ({ job }) => this.end(job, 'succeeded', 'runledger.job.succeeded'));
    events.on('job:failure', ({ job, code, message, status, nextRunAt, retryable }) => {
      const outcome = status === 'DEAD_LETTERED' ? 'dead_lettered' : 'retry_scheduled';
      this.end(job, outcome, 'runledger.job.failed', {
        code,
        message,
        eventAttributes: {
          'error.type': code,
          'runledger.job.retryable': retryable,
          ...(nextRunAt ? { 'runledger.job.next_run_at': nextRunAt.toISOString() } : {}),
        },
      });
    });
    events.on('job:lease_lost', ({ job, during }) =>
      this.end(job, 'lease_lost', 'runledger.job.lease_lost', { code: 'job.lease_owner_mismatch', message: `lease lost during ${during}` }),
    );
    events.on('worker:error', ({ jobId, operation }) => {
      const info = jobId === undefined ? undefined : this.openById.get(jobId);
      // The outcome could not be committed: the lease will expire and the job run again.
      if (info && (operation === 'complete' || operation === 'fail')) {
        this.end(info, 'unrecorded', 'runledger.job.unrecorded', { code: 'database.error', message: `recording the outcome failed (${operation})` });
      }
    });
  }

  /** Opens the execution's span (and counts the job as consumed); the handler runs in `run`. */
  begin(job: ClaimedJob, info: JobInfo): JobSpan {
    // Property writes, no spreads, and the per-type attributes built once: this runs for every job, and the
    // spread version cost 21 us of CPU per job (node --cpu-prof of a 20,000-job drain, no SDK registered).
    const attributes = this.typeAttributes(job.jobType);
    const spanAttributes: Attributes = {
      'messaging.system': 'runledger',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': job.jobType,
      'messaging.message.id': job.jobId,
      'runledger.job.attempt': job.attempt,
      'runledger.job.max_attempts': job.maxAttempts,
      'runledger.job.run_number': job.runNumber,
      'runledger.worker.id': job.workerId,
    };
    if (job.organizationId !== null) spanAttributes['runledger.organization.id'] = job.organizationId;
    if (job.concurrencyKey !== null) spanAttributes['runledger.concurrency_key'] = job.concurrencyKey;
    if (job.rateKey !== null) spanAttributes['runledger.rate_key'] = job.rateKey;
    if (job.fairKey !== null) spanAttributes['runledger.fair_key'] = job.fairKey;
    if (job.step) {
      spanAttributes['runledger.workflow.run_id'] = job.step.workflowRunId;
      spanAttributes['runledger.workflow.step_key'] = job.step.stepKey;
    }
    const carrier = job.traceContext === null ? null : traceCarrierOf(job.traceContext);
    const parent = carrier ? this.api.propagation.extract(this.api.ROOT_CONTEXT, carrier) : this.api.ROOT_CONTEXT;
    const span = this.tracer.startSpan(`process ${job.jobType}`, { kind: this.api.SpanKind.CONSUMER, attributes: spanAttributes }, parent);
    span.addEvent('runledger.job.started', { 'runledger.job.queue_wait_ms': job.queueWaitMs });
    const context = this.api.trace.setSpan(parent, span);
    const previous = this.openById.get(job.jobId);
    if (previous) this.open.delete(previous);
    this.open.set(info, { span, context, attributes, startedAt: performance.now() });
    this.openById.set(job.jobId, info);
    this.instruments.consumed.add(1, attributes);
    this.instruments.queueWait.record(job.queueWaitMs / 1000, attributes);
    return { run: (fn) => this.api.context.with(context, fn) };
  }

  /** The metric attributes of a job type (frozen, shared by its jobs). */
  private typeAttributes(jobType: string): Attributes {
    let attributes = this.attributesByType.get(jobType);
    if (!attributes) {
      attributes = Object.freeze({
        'messaging.system': 'runledger',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': jobType,
      });
      this.attributesByType.set(jobType, attributes);
    }
    return attributes;
  }

  private end(info: JobInfo, outcome: Outcome, eventName: string, failure?: { code: string; message: string; eventAttributes?: Attributes }): void {
    const entry = this.open.get(info);
    if (!entry) return;
    this.open.delete(info);
    if (this.openById.get(info.jobId) === info) this.openById.delete(info.jobId);
    const { span, attributes } = entry;
    span.addEvent(eventName, failure?.eventAttributes ?? (failure ? { 'error.type': failure.code } : {}));
    span.setAttribute('runledger.job.outcome', outcome);
    const outcomeAttributes: Attributes = { ...attributes, 'runledger.job.outcome': outcome };
    if (failure) {
      span.setAttribute('error.type', failure.code);
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: failure.message });
      outcomeAttributes['error.type'] = failure.code;
    }
    span.end();
    this.instruments.processDuration.record((performance.now() - entry.startedAt) / 1000, outcomeAttributes);
    if (outcome === 'succeeded') this.instruments.succeeded.add(1, attributes);
    else if (outcome === 'retry_scheduled' || outcome === 'dead_lettered') {
      this.instruments.failed.add(1, { ...attributes, 'error.type': failure?.code ?? 'unknown', 'runledger.job.will_retry': outcome === 'retry_scheduled' });
    }
  }
}

function createInstruments(meter: Meter): Instruments {
  return {
    consumed: meter.createCounter('messaging.client.consumed.messages', {
      unit: '{message}',
      description: 'Jobs a worker claimed and started.',
    }),
    processDuration: meter.createHistogram('messaging.process.duration', {
      unit: 's',
      description: 'From handler start to the committed outcome, per outcome.',
    }),
    queueWait: meter.createHistogram('runledger.job.queue_wait.duration', {
      unit: 's',
      description: 'How long a job had been due when a worker claimed it (database clock).',
    }),
    succeeded: meter.createCounter('runledger.job.succeeded', { unit: '{job}', description: 'Job successes committed.' }),
    failed: meter.createCounter('runledger.job.failed', {
      unit: '{job}',
      description: 'Job failures committed; runledger.job.will_retry says whether a retry is scheduled.',
    }),
  };
}
