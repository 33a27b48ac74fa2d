/**
 * The fairness workload's pure parts (bench/workloads/fairness-table.ts): its sizes from the environment, the
 * percentiles of B's pickups with starved jobs counted at their wait so far (a lower bound), and the table
 * with its headline against the target. No timings are asserted.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readConfig } from '../../bench/config.js';
import { boundedPercentile, type FairPhaseMeasure, fairnessTable, readFairnessSizes, verdict } from '../../bench/workloads/fairness-table.js';

const sizes = { backlog: 100_000, seconds: 20, emptySeconds: 10, intervalMs: 100, handlerMs: 5, graceMs: 3_000, concurrency: 10, repeats: 1 };

const range = (n: number, from: number, step: number) => Array.from({ length: n }, (_, i) => from + i * step);

const phase = (over: Partial<FairPhaseMeasure> = {}): FairPhaseMeasure => ({
  backlog: 0,
  seconds: 10,
  enqueued: 100,
  // 1..100 ms: p50 50, p95 95, p99 99.
  pickupsMs: range(100, 1, 1),
  starvedWaitsMs: [],
  enqueueP50Ms: 2.4,
  enqueueMaxMs: 18,
  scheduleLagMaxMs: 3,
  aStartsPerSecond: 0,
  aStarted: 0,
  wallMs: 10_200,
  ...over,
});

describe('boundedPercentile', () => {
  it('is exact without starved jobs, and when every starved wait lies above it', () => {
    expect(boundedPercentile(range(100, 1, 1), [], 99)).toEqual({ ms: 99, lowerBound: false });
    expect(boundedPercentile(range(99, 1, 1), [5_000], 50)).toEqual({ ms: 50, lowerBound: false });
  });

  it('is a lower bound when a starved wait is at or below it', () => {
    // 150 started at 10 s or more, 50 starved after 3-8 s: p99 lands on a started job, but the starved ones may outgrow it.
    const started = range(150, 10_000, 10);
    const starved = range(50, 3_000, 100);
    expect(boundedPercentile(started, starved, 99)).toEqual({ ms: 11_470, lowerBound: true });
    expect(boundedPercentile([], [3_100, 3_000], 50)).toEqual({ ms: 3_000, lowerBound: true });
    expect(boundedPercentile([], [], 99).ms).toBeNaN();
  });
});

describe('fairness table', () => {
  it('meets the target when the backlog p99 is within 5x the empty queue one', () => {
    const loaded = phase({ backlog: 100_000, seconds: 20, enqueued: 200, pickupsMs: range(200, 1, 1), aStartsPerSecond: 1_234.4, aStarted: 28_000 });
    const table = fairnessTable(sizes, [{ empty: phase(), loaded }]);
    expect(table.rows[0]).toEqual(['1, empty queue', '100 in 10 s', '50.0 ms', '95.0 ms', '99.0 ms', '0', '-', '2.4 / 18 ms, lag <= 3 ms', '']);
    expect(table.rows[1]![0]).toBe("1, A's backlog of 100,000");
    expect(table.rows[1]![6]).toBe('1,234 (28,000 started)');
    expect(table.rows[1]![8]).toBe('2.0x');
    expect(table.headlineBySystem?.runledger).toBe(
      "B's pickup p99 198 ms with A's backlog vs 99.0 ms on an empty queue: 2.0x (target <= 5x: met), 0 of 200 B jobs starved",
    );
    expect(table.headlineSummary).toBe('runledger only');
    expect(table.title).toBe("fairness: tenant A's backlog vs tenant B at 10 jobs/s, one createWorker, concurrency 10, 5 ms handlers");
  });

  it('reports starved jobs with their wait so far, and the ratio as a lower bound', () => {
    const loaded = phase({ backlog: 100_000, seconds: 20, enqueued: 200, pickupsMs: [], starvedWaitsMs: range(200, 3_000, 100) });
    const table = fairnessTable(sizes, [{ empty: phase(), loaded }]);
    expect(table.rows[1]![4]).toBe('>= 22700 ms');
    expect(table.rows[1]![5]).toBe('200 (waited 3.0 s-22.9 s so far)');
    expect(table.rows[1]![8]).toBe('>= 229x');
    expect(table.headlineBySystem?.runledger).toBe(
      "B's pickup p99 >= 22700 ms with A's backlog vs 99.0 ms on an empty queue: >= 229x (target <= 5x: not met), 200 of 200 B jobs starved",
    );
    expect(table.notes.join('\n')).toContain('every job names its tenant as its fairness key');
  });

  it('leaves the verdict open when the bound is under the target, or the baseline starved', () => {
    expect(verdict({ value: 3, lowerBound: true, baselineExact: true })).toBe('undetermined');
    expect(verdict({ value: 30, lowerBound: false, baselineExact: false })).toBe('undetermined');
    expect(verdict({ value: 5, lowerBound: false, baselineExact: true })).toBe('met');
    expect(verdict({ value: 5.01, lowerBound: true, baselineExact: true })).toBe('not met');
  });
});

describe('fairness sizes', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('are a backlog of 100,000 and 20 s of B at full size, 10,000 and 8 s when quick', () => {
    vi.stubEnv('BENCH_QUICK', '');
    expect(readFairnessSizes(readConfig())).toMatchObject({ backlog: 100_000, seconds: 20, emptySeconds: 10, intervalMs: 100, handlerMs: 5, concurrency: 10 });
    vi.stubEnv('BENCH_QUICK', '1');
    expect(readFairnessSizes(readConfig())).toMatchObject({ backlog: 10_000, seconds: 8, emptySeconds: 5, intervalMs: 100, handlerMs: 5 });
  });

  it('take the environment, and refuse what is not a positive integer', () => {
    vi.stubEnv('BENCH_FAIR_BACKLOG', '5000');
    vi.stubEnv('BENCH_FAIR_SECONDS', '4');
    vi.stubEnv('BENCH_FAIR_GRACE_MS', '500');
    expect(readFairnessSizes(readConfig())).toMatchObject({ backlog: 5_000, seconds: 4, graceMs: 500 });
    vi.stubEnv('BENCH_FAIR_HANDLER_MS', '2.5');
    expect(() => readFairnessSizes(readConfig())).toThrow(/BENCH_FAIR_HANDLER_MS/);
  });
});
