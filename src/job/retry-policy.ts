/**
 * Backoff between attempts of a retryable failure: exponential from a base,
 * doubling per failed attempt, capped, with "equal jitter" (half the delay
 * fixed, the other half random). The fixed half guarantees a minimum spacing
 * between attempts; the random half spreads a burst of failures (a downstream
 * outage failing many jobs at once) so their retries do not arrive together.
 * Pure: the random source is a parameter so tests can pin it.
 *
 * A job type's policy comes from its definition (`defineJob(..., { retry })`,
 * see src/job/define-job.ts); the defaults live in defaults.ts.
 */
import { z } from 'zod';
import { DEFAULT_BACKOFF, type BackoffPolicy } from './defaults.js';
import { positiveInt } from '../validation/primitives.js';

/** A job type's retry policy: how many attempts, and how long between them. */
export interface RetryPolicy {
  /** Attempts per run, the first included. Default 5. */
  maxAttempts?: number;
  /** Default `{ baseDelayMs: 1000, maxDelayMs: 3600000 }`; either may be given alone. */
  backoff?: Partial<BackoffPolicy>;
}

/** Both bounds feed a Date offset, so both stay within a Node timer's range. */
const delayMs = positiveInt.max(2_147_483_647);
export const backoffPolicySchema = z
  .strictObject({ baseDelayMs: delayMs.optional(), maxDelayMs: delayMs.optional() })
  .refine((b) => (b.baseDelayMs ?? DEFAULT_BACKOFF.baseDelayMs) <= (b.maxDelayMs ?? DEFAULT_BACKOFF.maxDelayMs), {
    path: ['maxDelayMs'],
    message: 'must be at least baseDelayMs',
  });
export const retryPolicySchema = z.strictObject({ maxAttempts: positiveInt.optional(), backoff: backoffPolicySchema.optional() });

/** `backoff` with the defaults filled in. */
export function resolveBackoff(backoff: Partial<BackoffPolicy> | undefined): BackoffPolicy {
  return { baseDelayMs: backoff?.baseDelayMs ?? DEFAULT_BACKOFF.baseDelayMs, maxDelayMs: backoff?.maxDelayMs ?? DEFAULT_BACKOFF.maxDelayMs };
}

/** Beyond this exponent the ceiling is the cap anyway; stopping here keeps the arithmetic finite. */
const MAX_EXPONENT = 52;

/** The delay ceiling for `attempt` (1-based: the attempt that just failed), before jitter. */
export function retryDelayCeilingMs(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const exponent = Math.min(Math.max(0, Math.floor(attempt) - 1), MAX_EXPONENT);
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
}

/**
 * The delay before the next attempt after `attempt` failed: a whole number of
 * ms in [ceiling / 2, ceiling].
 *
 * @example retryDelayMs(3) // between 2000 and 4000
 */
export function retryDelayMs(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const ceiling = retryDelayCeilingMs(attempt, policy);
  const half = ceiling / 2;
  const unit = Math.min(Math.max(random(), 0), 1);
  return Math.round(half + unit * half);
}
