/**
 * The rate_limit workload's pure parts (bench/workloads/rate-limit.ts): its sizes from the environment, and its
 * table: the observed rate against the limit, the most starts in one period, the windows over limit + burst
 * and the headline. No timings are asserted.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readConfig } from '../../bench/config.js';
import { rateLimitTable, readRateLimitSizes, type RateDrainMeasure } from '../../bench/workloads/rate-limit.js';

const sizes = { jobs: 1_500, limit: 100, periodMs: 1_000, burst: 10, processes: 8, concurrency: 10, repeats: 2 };

const measure = (rate: number, over: Partial<RateDrainMeasure> = {}): RateDrainMeasure => ({
  wallMs: 15_000,
  starts: 1_500,
  rate,
  middleRate: rate,
  spanMs: 14_900,
  windowMax: 108,
  bucketWindowMax: 108,
  windowsOver: 0,
  bucketWindowsOver: 0,
  notDone: 0,
  lostTokens: 240,
  longestGapMs: 130,
  withoutToken: 0,
  ...over,
});

describe('rate_limit table', () => {
  it('gives the rate as a ratio of the limit, with the most starts in one period', () => {
    const table = rateLimitTable(sizes, [measure(99), measure(97.5)]);
    expect(table.rows[0]![2]).toBe('0.990x');
    // Median of two: the lower middle (bench/stats.ts).
    expect(table.headlineBySystem?.runledger).toBe(
      '0.975x the limit (97.5 starts/s vs 100.0), at most 108 starts in one period (limit + burst 110), 0 violations',
    );
    expect(table.title).toContain('one key, 100 per 1000 ms, burst 10, 8 worker processes x concurrency 10');
    expect(table.headlineSummary).toMatch(/runledger only/);
    expect(table.notes.join('\n')).toContain('95.0-105.0 starts/s');
  });

  it('counts the windows over limit + burst on both clocks, across runs', () => {
    const table = rateLimitTable(sizes, [
      measure(100, { windowMax: 112, windowsOver: 3, bucketWindowMax: 110 }),
      measure(100, { windowMax: 111, windowsOver: 1, bucketWindowMax: 111, bucketWindowsOver: 1, notDone: 2 }),
    ]);
    expect(table.rows[0]![4]).toBe('112 / 110');
    expect(table.rows[1]![5]).toBe('1 / 1');
    expect(table.rows[1]![6]).toBe('240 / 130 ms');
    expect(table.rows[1]![8]).toBe(2);
    expect(table.headlineBySystem?.runledger).toMatch(/at most 112 starts in one period \(limit \+ burst 110\), 4 violations$/);
    expect(table.notes.join('\n')).toContain('bucket clock: 1 over, at most 111');
  });
});

describe('rate_limit sizes', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('are 1,500 jobs of one key at 100 per second, burst 10, 8 processes at full size, fewer jobs when quick', () => {
    vi.stubEnv('BENCH_QUICK', '');
    expect(readRateLimitSizes(readConfig())).toMatchObject({ jobs: 1_500, limit: 100, periodMs: 1_000, burst: 10, processes: 8, concurrency: 10 });
    vi.stubEnv('BENCH_QUICK', '1');
    expect(readRateLimitSizes(readConfig())).toMatchObject({ jobs: 400, limit: 100, periodMs: 1_000, burst: 10, processes: 8 });
  });

  it('take the environment, and refuse what is not a positive integer', () => {
    vi.stubEnv('BENCH_RL_JOBS', '600');
    vi.stubEnv('BENCH_RL_PERIOD_MS', '500');
    vi.stubEnv('BENCH_RL_BURST', '3');
    expect(readRateLimitSizes(readConfig())).toMatchObject({ jobs: 600, periodMs: 500, burst: 3 });
    vi.stubEnv('BENCH_RL_LIMIT', '0');
    expect(() => readRateLimitSizes(readConfig())).toThrow(/BENCH_RL_LIMIT/);
  });
});
