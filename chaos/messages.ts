/** What chaos worker processes report to the controller (over the IPC channel). */

/** A call into runledger's API and how it ended: `ok`, an outcome name, or an error code. */
export interface OperationMessage {
  t: 'op';
  kind: string;
  outcome: string;
  /** Set when an error reached the caller. */
  error?: ErrorSummary;
}

/** An idempotent enqueue's answer, to compare across processes. */
export interface DuplicateMessage {
  t: 'dup';
  kind: 'job' | 'run';
  key: string;
  id: string;
  disposition: 'inserted' | 'existing';
}

/** A worker log line at warn or error. */
export interface LogMessage {
  t: 'log';
  level: 'warn' | 'error';
  message: string;
  error?: ErrorSummary;
}

export type ChildMessage = OperationMessage | DuplicateMessage | LogMessage;

export interface ErrorSummary {
  /** A RunledgerError's code; `raw` for anything else. */
  code: string;
  category: string;
  /** The internal message (SQLSTATE included), for deadlock detection and the report. */
  detail: string;
}

export function summarizeError(error: unknown): ErrorSummary {
  if (error && typeof error === 'object' && 'code' in error && 'category' in error && typeof (error as { code: unknown }).code === 'string') {
    const e = error as { code: string; category: string; internalMessage?: string; message?: string };
    return { code: e.code, category: e.category, detail: String(e.internalMessage ?? e.message ?? '') };
  }
  return { code: 'raw', category: 'raw', detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

/**
 * The errors a caller may see under chaos, each documented: connection
 * faults, a release racing a cancellation, conflicting or late external
 * completions, a finished run's cancellation, a replay or requeue that lost
 * its race, and a worker's lease taken over after its lease expired.
 */
export const DOCUMENTED_CODES = new Set([
  'database.unavailable',
  'database.timeout',
  'workflow.release_conflict',
  'workflow.run_already_finished',
  'workflow.external_step_not_waiting',
  'workflow.external_step_conflicting_completion_retry',
  'workflow.external_step_conflicting_output_retry',
  'job.lease_owner_mismatch',
  'job.not_cancelable',
]);
