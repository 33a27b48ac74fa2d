/**
 * The rate-limit ledger check (test/harness/rate-ledger.ts) over hand-made start times: the most starts in a
 * window of one period, its edges, the bucket time of claims that queued on the key's row, and the steady
 * rate. The chaos run and the rate_limit bench pass on these figures, so they must see an excess where there
 * is one.
 */
import { describe, expect, it } from 'vitest';
import { maxInWindow, replayBucket, steadyRate, withBucketTimes } from '../harness/rate-ledger.js';

describe('maxInWindow', () => {
  it('is 0 with no start and 1 with one', () => {
    expect(maxInWindow([], 1_000)).toEqual({ max: 0, at: Number.NaN, over: 0 });
    expect(maxInWindow([5], 1_000)).toMatchObject({ max: 1, at: 5 });
  });

  it('counts both ends of the window: starts exactly one period apart share it', () => {
    expect(maxInWindow([0, 1_000], 1_000).max).toBe(2);
    expect(maxInWindow([0, 1_000.001], 1_000).max).toBe(1);
  });

  it('finds the densest window wherever it opens, and counts equal times', () => {
    // A burst of 3 at 0, then 2 at 900, 3 at 1_500 (one of them twice at the same instant).
    const times = [1_500, 0, 0, 0, 900, 950, 1_500, 1_600];
    // [0, 1000]: 5; [900, 1900]: 5; [950, 1950]: 4.
    expect(maxInWindow(times, 1_000)).toMatchObject({ max: 5, at: 0 });
    expect(maxInWindow(times, 500)).toMatchObject({ max: 3, at: 0 });
  });

  it('counts the windows holding more than allowed, one per start that opens one', () => {
    const times = [0, 10, 20, 30, 2_000, 2_010];
    expect(maxInWindow(times, 100, 3)).toEqual({ max: 4, at: 0, over: 1 });
    expect(maxInWindow(times, 100, 2)).toMatchObject({ max: 4, over: 2 });
    expect(maxInWindow(times, 100, 4).over).toBe(0);
  });

  it('sees a bucket-shaped run as within limit + burst, and one start more as over', () => {
    // burst 10 at t = 0, then limit 100 per 1000 ms: one every 10 ms from 10 ms on.
    const times = [...Array.from({ length: 10 }, () => 0), ...Array.from({ length: 300 }, (_, i) => 10 * (i + 1))];
    expect(maxInWindow(times, 1_000, 110)).toMatchObject({ max: 110, over: 0 });
    expect(maxInWindow([...times, 500], 1_000, 110)).toMatchObject({ max: 111, over: 1 });
  });
});

describe('withBucketTimes', () => {
  it('orders a key by sequence and carries the latest start forward to a claim that queued behind it', () => {
    const starts = withBucketTimes([
      { key: 'k', id: 'c', seq: 3n, at: 105 },
      { key: 'k', id: 'a', seq: 1n, at: 100 },
      // Its statement began at 90 but locked the row after the claim of 100: its tokens were the row's at 100.
      { key: 'k', id: 'b', seq: 2n, at: 90 },
    ]);
    expect(starts.map((s) => [s.id, s.at, s.bucketAt])).toEqual([
      ['a', 100, 100],
      ['b', 90, 100],
      ['c', 105, 105],
    ]);
  });
});

describe('steadyRate', () => {
  it('leaves the first burst out and gives starts per second', () => {
    // 10 at once, then one every 10 ms for 3 s: 100 per second.
    const times = [...Array.from({ length: 10 }, () => 0), ...Array.from({ length: 300 }, (_, i) => 10 * (i + 1))];
    const rate = steadyRate(times, 10);
    expect(rate.afterBurst).toBeCloseTo(100, 6);
    expect(rate.middle).toBeCloseTo(100, 0);
    expect(rate.spanMs).toBe(3_000);
  });

  it('is NaN without a span', () => {
    expect(steadyRate([], 5).afterBurst).toBeNaN();
    expect(steadyRate([7, 7], 1).middle).toBeNaN();
  });
});

describe('replayBucket', () => {
  const setting = { limit: 100, periodMs: 1_000, burst: 10 };
  const at = (times: number[]) => withBucketTimes(times.map((t, i) => ({ key: 'k', id: `s${i}`, seq: BigInt(i + 1), at: t })));

  it('loses nothing when every token is taken as it comes', () => {
    const replay = replayBucket(at([...Array.from({ length: 10 }, () => 0), ...Array.from({ length: 100 }, (_, i) => 10 * (i + 1))]), setting);
    expect(replay).toMatchObject({ withoutToken: 0, longestGapMs: 10 });
    expect(replay.lostTokens).toBeCloseTo(0, 6);
  });

  it('counts the refill lost while the bucket sat full, and the longest gap', () => {
    // 10 at 0 (empty), 10 at 100 (full just then), then nothing until 300: full from 200 on, 10 tokens lost.
    const replay = replayBucket(at([...Array.from({ length: 10 }, () => 0), ...Array.from({ length: 10 }, () => 100), 300]), setting);
    expect(replay.fullMs).toBeCloseTo(100, 6);
    expect(replay.lostTokens).toBeCloseTo(10, 6);
    expect(replay.longestGapMs).toBe(200);
    expect(replay.withoutToken).toBe(0);
  });

  it('finds a start without a token', () => {
    // 10 at 0 empty the bucket; 2 more at 15 ms find 1.5 tokens: the second has none.
    expect(replayBucket(at([...Array.from({ length: 10 }, () => 0), 15, 15]), setting).withoutToken).toBe(1);
  });
});
