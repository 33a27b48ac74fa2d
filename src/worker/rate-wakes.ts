/**
 * A worker's wake-up for rate-limited work: jobs waiting for a token are PENDING and due, so no NOTIFY
 * announces them when the token comes. After a claim that came back short, the worker asks when the rate
 * keys it has leased jobs of will have tokens again for waiting jobs of its types, and claims then (instead
 * of at its next poll, which caps the rate at one claim per poll interval).
 */
import type { PrismaClientLike } from '../client/types.js';
import { rateWaitMs } from '../queue/rate-limits.js';

/** Keys seen in claims within this long are asked about. */
const KEY_MEMORY_MS = 10 * 60_000;
/** At most this many keys are remembered (the most recent). */
const MAX_KEYS = 256;

export class RateWakes {
  private readonly keys = new Map<string, number>();

  constructor(
    private readonly db: PrismaClientLike,
    private readonly jobTypes: readonly string[],
  ) {}

  /** The rate keys of jobs a claim leased. */
  saw(rateKeys: readonly (string | null)[]): void {
    const now = Date.now();
    for (const key of rateKeys) {
      if (key === null) continue;
      this.keys.delete(key);
      this.keys.set(key, now);
      if (this.keys.size > MAX_KEYS) this.keys.delete(this.keys.keys().next().value!);
    }
  }

  /**
   * Milliseconds until a remembered key has `want` tokens for waiting jobs of this worker's types, or
   * undefined (no remembered key, or none waits for tokens).
   */
  async waitMs(want: number): Promise<number | undefined> {
    const now = Date.now();
    for (const [key, at] of this.keys) if (now - at > KEY_MEMORY_MS) this.keys.delete(key);
    if (this.keys.size === 0) return undefined;
    return rateWaitMs(this.db, [...this.keys.keys()], this.jobTypes, Math.max(1, want));
  }
}
