/**
 * Backoff between attempts of a retryable failure: exponential from a base,
 * doubling per failed attempt, capped, with "equal jitter" (half the delay
 * fixed, the other half random). The fixed half guarantees a minimum spacing
 * between attempts; the random half spreads a burst of failures (a downstream
 * outage failing many jobs at once) so their retries do not arrive together.
 * Pure: the random source is a parameter so tests can pin it.
 */

export interface RetryPolicy {
  /** Delay ceiling after the first failed attempt, in ms. */
  baseDelayMs: number;
  /** No delay ever exceeds this, in ms. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  baseDelayMs: 1_000,
  maxDelayMs: 60 * 60 * 1_000,
});

/** Beyond this exponent the ceiling is the cap anyway; stopping here keeps the arithmetic finite. */
const MAX_EXPONENT = 52;

/** The delay ceiling for `attempt` (1-based: the attempt that just failed), before jitter. */
export function retryDelayCeilingMs(attempt: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): number {
  const exponent = Math.min(Math.max(0, Math.floor(attempt) - 1), MAX_EXPONENT);
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
}

/**
 * The delay before the next attempt after `attempt` failed: a whole number of
 * ms in [ceiling / 2, ceiling].
 *
 * @example retryDelayMs(3) // between 2000 and 4000
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY, random: () => number = Math.random): number {
  const ceiling = retryDelayCeilingMs(attempt, policy);
  const half = ceiling / 2;
  const unit = Math.min(Math.max(random(), 0), 1);
  return Math.round(half + unit * half);
}
