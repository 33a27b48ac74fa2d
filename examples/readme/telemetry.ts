import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createWorker, type AnyJobDefinition, type PrismaClientLike } from 'runledger';

// What @opentelemetry/sdk-node's NodeSDK registers for you, spelled out: a context manager (so a
// span stays active across awaits), the W3C propagator (how the enqueuer's trace is stored on the
// job row) and a tracer provider with an exporter.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new ConsoleSpanExporter())] }));

export function tracedWorker(prisma: PrismaClientLike, handlers: AnyJobDefinition[], meterProvider: MeterProvider) {
  // Spans go to the global tracer provider; metrics to this meter provider (default: the global one).
  return createWorker({ db: prisma, handlers, telemetry: { meterProvider } });
}
