/**
 * The OpenTelemetry API, when the host has installed it.
 *
 * `@opentelemetry/api` is an optional peer dependency: runledger never
 * requires it, and imports it once, lazily, the first time something asks.
 * Without it (or with it but no SDK registered) tracing and metrics cost one
 * resolved promise per enqueue and per job, and nothing is recorded. The API
 * package is the only one runledger touches: the host picks and registers the
 * SDK, exporters and propagators, as OpenTelemetry intends for libraries.
 */
import type * as OtelApi from '@opentelemetry/api';

export type OpenTelemetryApi = typeof OtelApi;

let loaded: Promise<OpenTelemetryApi | undefined> | undefined;

/** The API module, or undefined when it is not installed. Imported once per process. */
export function loadOpenTelemetry(): Promise<OpenTelemetryApi | undefined> {
  loaded ??= import('@opentelemetry/api').then(
    (api) => api,
    () => undefined,
  );
  return loaded;
}
