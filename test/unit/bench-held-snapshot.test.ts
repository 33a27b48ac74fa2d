/**
 * The held-snapshot workload's recovery rule (bench/workloads/held-snapshot.ts):
 * the first 5-second window after the release whose pickup p95 is within
 * 1.5x the clean phase's and whose queue depth stays within the clean maximum.
 * No timings are asserted: the inputs are synthetic samples.
 */
import { describe, expect, it } from 'vitest';
import { recoveredAfter } from '../../bench/workloads/held-snapshot.js';

/** One pickup every 100 ms from `fromMs` to `toMs`, with latency `ms(at)`. */
const pickups = (fromMs: number, toMs: number, ms: (at: number) => number) =>
  Array.from({ length: Math.floor((toMs - fromMs) / 100) }, (_, i) => fromMs + i * 100).map((at) => ({ at, ms: ms(at) }));
/** One depth sample a second. */
const depth = (fromMs: number, toMs: number, n: (at: number) => number) =>
  Array.from({ length: Math.floor((toMs - fromMs) / 1000) }, (_, i) => fromMs + i * 1000).map((at) => ({ at, n: n(at) }));

const clean = { cleanPickups: Array.from({ length: 100 }, () => 10), cleanDepth: [3, 5, 4] };
const release = 100_000;

describe('held snapshot recovery', () => {
  it('is 0 s when the first window after the release already has clean figures', () => {
    expect(
      recoveredAfter({
        ...clean,
        release,
        recoverySeconds: 30,
        pickups: pickups(release, release + 30_000, () => 12),
        depth: depth(release, release + 30_000, () => 2),
      }),
    ).toBe(0);
  });

  it('is the first second from which a whole window is back within 1.5x the clean p95', () => {
    const slowUntil = release + 8_000;
    const result = recoveredAfter({
      ...clean,
      release,
      recoverySeconds: 30,
      pickups: pickups(release, release + 30_000, (at) => (at < slowUntil ? 80 : 12)),
      depth: depth(release, release + 30_000, () => 2),
    });
    expect(result).toBe(8);
  });

  it('waits for the queue depth to come back within the clean maximum', () => {
    const deepUntil = release + 12_000;
    const result = recoveredAfter({
      ...clean,
      release,
      recoverySeconds: 30,
      pickups: pickups(release, release + 30_000, () => 12),
      depth: depth(release, release + 30_000, (at) => (at < deepUntil ? 50 : 2)),
    });
    expect(result).toBe(12);
  });

  it('is null when no window inside the recovery phase recovers', () => {
    expect(
      recoveredAfter({
        ...clean,
        release,
        recoverySeconds: 10,
        pickups: pickups(release, release + 10_000, () => 40),
        depth: depth(release, release + 10_000, () => 2),
      }),
    ).toBeNull();
  });
});
