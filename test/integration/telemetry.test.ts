/**
 * OpenTelemetry: a worker's span per job execution continues the trace of
 * the code that enqueued the job (through the job row, or a workflow run's
 * row for its steps), the handler runs inside it, outcomes set its status and
 * attributes, and the job metrics count what happened. Recorded with the
 * SDK's in-memory exporter and a collecting metric reader.
 */
import { context, propagation, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { MeterProvider, MetricReader, type DataPoint, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJob, enqueueWorkflowRun, workflow } from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { countdown, nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const db = useTestDatabase();
const startWorker = useWorkers(db);

/** A reader the test collects from on demand. */
class CollectingReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = trace.getTracer('test');

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
});
afterAll(() => {
  trace.disable();
  propagation.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

/** Runs `fn` in a new active span (the "producer's request") and returns that span's ids. */
async function inRequestSpan(fn: () => Promise<unknown>): Promise<{ traceId: string; spanId: string }> {
  return tracer.startActiveSpan('http request', async (span) => {
    try {
      await fn();
      return { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId };
    } finally {
      span.end();
    }
  });
}

function processSpans(jobType: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.name === `process ${jobType}`);
}

async function collect(reader: CollectingReader): Promise<Map<string, MetricData>> {
  const { resourceMetrics } = await reader.collect();
  return new Map(resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).map((metric) => [metric.descriptor.name, metric]));
}

function sumOf(metric: MetricData | undefined, match: Record<string, unknown> = {}): number {
  const points = (metric?.dataPoints ?? []) as DataPoint<number>[];
  return points.filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v)).reduce((total, p) => total + p.value, 0);
}

describe('OpenTelemetry', () => {
  it("processes a job in a CONSUMER span of its enqueuer's trace, with the handler's spans inside it", async () => {
    const job = defineJob('tele.ok', z.object({ n: z.number() }), async () => {
      tracer.startActiveSpan('handler work', (span) => span.end());
      return { done: true };
    });
    const reader = new CollectingReader();
    const worker = await startWorker({ handlers: [job], telemetry: { meterProvider: new MeterProvider({ readers: [reader] }) } });
    const succeeded = nextEvent(worker, 'job:success');
    let jobId = '';
    const request = await inRequestSpan(async () => {
      ({ jobId } = await enqueueJob(db.prisma, job, { n: 1 }));
    });
    await succeeded;

    const [stored] = await db.prisma.$queryRaw<{ trace_context: Record<string, string> | null }[]>`
      SELECT trace_context FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    expect(stored?.trace_context?.traceparent).toContain(request.traceId);

    const [span] = processSpans('tele.ok');
    expect(span).toBeDefined();
    expect(span!.kind).toBe(SpanKind.CONSUMER);
    expect(span!.instrumentationScope).toMatchObject({ name: 'runledger', version: packageVersion });
    expect(span!.spanContext().traceId).toBe(request.traceId);
    expect(span!.parentSpanContext?.spanId).toBe(request.spanId);
    expect(span!.attributes).toMatchObject({
      'messaging.system': 'runledger',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'tele.ok',
      'messaging.message.id': jobId,
      'runledger.job.attempt': 1,
      'runledger.job.run_number': 1,
      'runledger.job.outcome': 'succeeded',
    });
    expect(span!.attributes['runledger.concurrency_key']).toBeUndefined();
    expect(span!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(span!.events.map((e) => e.name)).toEqual(['runledger.job.started', 'runledger.job.succeeded']);
    const handlerSpan = exporter.getFinishedSpans().find((s) => s.name === 'handler work');
    expect(handlerSpan?.parentSpanContext?.spanId).toBe(span!.spanContext().spanId);

    const metrics = await collect(reader);
    const destination = { 'messaging.destination.name': 'tele.ok' };
    expect(sumOf(metrics.get('messaging.client.consumed.messages'), destination)).toBe(1);
    expect(sumOf(metrics.get('runledger.job.succeeded'), destination)).toBe(1);
    const duration = metrics.get('messaging.process.duration')!.dataPoints as DataPoint<Histogram>[];
    expect(duration.find((p) => p.attributes['runledger.job.outcome'] === 'succeeded')?.value.count).toBe(1);
    const wait = metrics.get('runledger.job.queue_wait.duration')!.dataPoints as DataPoint<Histogram>[];
    expect(wait[0]?.value.count).toBe(1);
    // The one wait recorded is the claim's, in seconds on the database clock: from the job's due time to the
    // start of its attempt (both stamped by PostgreSQL; a success keeps the attempt on the job row), so a wrong unit or a wrong pair of times fails here.
    const [due] = await db.prisma.$queryRaw<{ seconds: number }[]>`
      SELECT extract(epoch FROM attempt_started_at - next_run_at)::float8 AS seconds FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    expect(due!.seconds).toBeGreaterThan(0);
    expect(wait[0]?.value.min).toBeCloseTo(due!.seconds, 5);
    expect(wait[0]?.value.max).toBe(wait[0]?.value.min);
  });

  it("carries the job's concurrency key, the definition's or the enqueue's", async () => {
    const job = defineJob('tele.keyed', z.object({ tenant: z.string() }), async () => ({ done: true }), {
      concurrency: { key: (payload) => `tele-provider:${payload.tenant}`, limit: 2 },
    });
    const worker = await startWorker({ handlers: [job] });
    const done = countdown(2);
    worker.on('job:success', () => done.arrive());
    const fromDefinition = await enqueueJob(db.prisma, job, { tenant: 't1' });
    const fromEnqueue = await enqueueJob(db.prisma, job, { tenant: 't2' }, { concurrency: { key: 'tele-explicit', limit: 1 } });
    await done.promise;
    const byId = new Map(processSpans('tele.keyed').map((span) => [span.attributes['messaging.message.id'], span]));
    expect(byId.get(fromDefinition.jobId)?.attributes['runledger.concurrency_key']).toBe('tele-provider:t1');
    expect(byId.get(fromEnqueue.jobId)?.attributes['runledger.concurrency_key']).toBe('tele-explicit');
  });

  it('marks a failed attempt ERROR with its code and outcome, and counts it as a failure that will retry', async () => {
    const job = defineJob(
      'tele.fails',
      z.object({}),
      () => {
        throw new Error('upstream down');
      },
      { retry: { maxAttempts: 3 } },
    );
    const reader = new CollectingReader();
    const worker = await startWorker({ handlers: [job], telemetry: { meterProvider: new MeterProvider({ readers: [reader] }) } });
    const failed = nextEvent(worker, 'job:failure');
    await inRequestSpan(() => enqueueJob(db.prisma, job, {}));
    const failure = await failed;
    expect(failure.status).toBe('PENDING');

    const [span] = processSpans('tele.fails');
    expect(span!.status).toMatchObject({ code: SpanStatusCode.ERROR });
    expect(span!.attributes).toMatchObject({ 'error.type': 'job.handler_error', 'runledger.job.outcome': 'retry_scheduled' });
    const failedEvent = span!.events.find((e) => e.name === 'runledger.job.failed');
    expect(failedEvent?.attributes).toMatchObject({ 'error.type': 'job.handler_error', 'runledger.job.retryable': true });
    expect(typeof failedEvent?.attributes?.['runledger.job.next_run_at']).toBe('string');

    const metrics = await collect(reader);
    expect(sumOf(metrics.get('runledger.job.failed'), { 'error.type': 'job.handler_error', 'runledger.job.will_retry': true })).toBe(1);
    expect(sumOf(metrics.get('runledger.job.succeeded'))).toBe(0);
  });

  it("continues the trace that enqueued a workflow run in every step's span, released steps included", async () => {
    const step = defineJob('tele.step', z.object({ name: z.string() }), () => null);
    const worker = await startWorker({ handlers: [step] });
    const both = countdown(2);
    worker.on('job:success', () => both.arrive());
    let workflowRunId = '';
    const request = await inRequestSpan(async () => {
      ({ workflowRunId } = await enqueueWorkflowRun(
        db.prisma,
        workflow('tele.flow').job('first', step, { name: 'first' }).job('second', step, { name: 'second' }).afterSuccess('second', ['first']).build(),
      ));
    });
    await both.promise;

    const spans = processSpans('tele.step');
    expect(spans.map((s) => s.attributes['runledger.workflow.step_key']).sort()).toEqual(['first', 'second']);
    for (const span of spans) {
      expect(span.spanContext().traceId).toBe(request.traceId);
      expect(span.parentSpanContext?.spanId).toBe(request.spanId);
      expect(span.attributes['runledger.workflow.run_id']).toBe(workflowRunId);
    }
  });

  it('stores no context outside a span, and records no span with telemetry off', async () => {
    const job = defineJob('tele.quiet', z.object({}), () => null);
    const worker = await startWorker({ handlers: [job], telemetry: false });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, job, {});
    await succeeded;
    const [stored] = await db.prisma.$queryRaw<{ trace_context: unknown }[]>`SELECT trace_context FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    expect(stored?.trace_context).toBeNull();
    expect(processSpans('tele.quiet')).toHaveLength(0);
  });

  it('refuses a telemetry provider that is not one, naming the field', async () => {
    const job = defineJob('tele.invalid', z.object({}), () => null);
    await expect(startWorker({ handlers: [job], telemetry: { tracerProvider: {} } })).rejects.toMatchObject({
      code: 'worker.invalid_options',
      field: 'telemetry.tracerProvider',
    });
  });
});
