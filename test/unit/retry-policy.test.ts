import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF } from '../../src/job/defaults.js';
import { retryDelayCeilingMs, retryDelayMs } from '../../src/job/retry-policy.js';

const low = () => 0;
const high = () => 1;

describe('retry policy', () => {
  it('starts at the base delay after the first failed attempt', () => {
    expect(retryDelayCeilingMs(1)).toBe(1_000);
    expect(retryDelayMs(1, DEFAULT_BACKOFF, high)).toBe(1_000);
    expect(retryDelayMs(1, DEFAULT_BACKOFF, low)).toBe(500);
  });

  it('doubles the ceiling with every failed attempt', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelayCeilingMs(attempt))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
  });

  it('never exceeds the cap, however many attempts failed', () => {
    expect(retryDelayCeilingMs(13)).toBe(3_600_000);
    expect(retryDelayCeilingMs(1_000)).toBe(3_600_000);
    expect(retryDelayMs(1_000_000, DEFAULT_BACKOFF, high)).toBe(3_600_000);
    expect(Number.isFinite(retryDelayMs(Number.MAX_SAFE_INTEGER))).toBe(true);
  });

  it('keeps half of the delay fixed and jitters the other half', () => {
    for (let attempt = 1; attempt <= 20; attempt += 1) {
      const ceiling = retryDelayCeilingMs(attempt);
      for (let i = 0; i < 50; i += 1) {
        const delay = retryDelayMs(attempt);
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
        expect(Number.isInteger(delay)).toBe(true);
      }
    }
    expect(retryDelayMs(3, DEFAULT_BACKOFF, () => 0.5)).toBe(3_000);
  });

  it('spreads simultaneous failures over the jitter window', () => {
    const delays = new Set(Array.from({ length: 100 }, () => retryDelayMs(10)));
    expect(delays.size).toBeGreaterThan(50);
  });

  it('treats an attempt below 1 as the first and clamps a misbehaving random source', () => {
    expect(retryDelayCeilingMs(0)).toBe(1_000);
    expect(retryDelayCeilingMs(-5)).toBe(1_000);
    expect(retryDelayMs(1, DEFAULT_BACKOFF, () => 7)).toBe(1_000);
    expect(retryDelayMs(1, DEFAULT_BACKOFF, () => -7)).toBe(500);
  });

  it('follows a custom policy', () => {
    const policy = { baseDelayMs: 100, maxDelayMs: 250 };
    expect([1, 2, 3, 4].map((attempt) => retryDelayCeilingMs(attempt, policy))).toEqual([100, 200, 250, 250]);
  });
});
