/**
 * Carrying a trace from the code that enqueues work to the worker that runs
 * it: the active context, injected by the host's registered propagator (W3C
 * `traceparent` / `tracestate` as a rule) into a small JSON object stored on
 * the job row (or the workflow run row, whose step jobs share it), and
 * extracted by the worker as the parent of the job's span.
 */
import type { JsonValue } from '../model/json.js';
import { loadOpenTelemetry } from './otel-api.js';

/** A propagator's carrier: header-like string fields, nothing else is stored. */
export type TraceCarrier = Record<string, string>;

/** Largest carrier stored; a propagator writing more (unusual baggage) is not carried rather than bloating rows. */
const MAX_CARRIER_BYTES = 2048;

/**
 * The caller's active trace context as a carrier, or null when there is none
 * to carry (no OpenTelemetry API, no propagator, no active span).
 */
export async function captureTraceContext(): Promise<JsonValue | null> {
  const api = await loadOpenTelemetry();
  if (!api) return null;
  const active = api.context.active();
  if (!api.trace.getSpanContext(active)) return null;
  const carrier: TraceCarrier = {};
  api.propagation.inject(active, carrier);
  const keys = Object.keys(carrier);
  if (keys.length === 0) return null;
  return Buffer.byteLength(JSON.stringify(carrier)) > MAX_CARRIER_BYTES ? null : carrier;
}

/** A stored carrier read back: only string fields survive (the column is the host's data, not trusted). */
export function traceCarrierOf(value: unknown): TraceCarrier | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const carrier: TraceCarrier = {};
  for (const [key, field] of Object.entries(value)) if (typeof field === 'string') carrier[key] = field;
  return Object.keys(carrier).length === 0 ? null : carrier;
}
