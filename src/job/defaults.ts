/**
 * Every default of a job's execution settings, in one place: what applies
 * when neither the enqueue nor the job's definition (`defineJob(..., {
 * retry, timeoutSeconds })`) says otherwise. Precedence, most specific
 * first: the enqueue's own option, then the definition's (when enqueued
 * through the definition), then these. The backoff follows the same order,
 * but only an enqueue's (or workflow step's) own is stored on the row
 * (backoff_base_ms/backoff_max_ms); the definition's is applied by the worker.
 *
 * The init migration's column defaults (max_attempts 5, timeout_seconds 300)
 * repeat the first two for rows inserted by hand; runledger itself always
 * writes both columns explicitly.
 */

/** Claim order: higher runs first. */
export const DEFAULT_PRIORITY = 0;
/** Attempts per run, the first included. */
export const DEFAULT_MAX_ATTEMPTS = 5;
/** How long one attempt may run before its signal aborts and it fails as `job.timeout` (retryable). */
export const DEFAULT_TIMEOUT_SECONDS = 300;
/** A worker's lease length, renewed by heartbeats. */
export const DEFAULT_LEASE_SECONDS = 60;

/** Backoff between attempts after a retryable failure (see retry-policy.ts). */
export interface BackoffPolicy {
  /** Delay ceiling after the first failed attempt, in ms; doubled per failed attempt. */
  baseDelayMs: number;
  /** No delay ever exceeds this, in ms. */
  maxDelayMs: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = Object.freeze({
  baseDelayMs: 1_000,
  maxDelayMs: 60 * 60 * 1_000,
});

/** Longer failure messages are cut rather than refused: a worker must always be able to record a failure. */
export const MAX_ERROR_MESSAGE_LENGTH = 4_000;
/** The longest stack a failed attempt keeps (job_attempts.error_stack's CHECK); a longer one is cut. */
export const MAX_ERROR_STACK_LENGTH = 8_000;
