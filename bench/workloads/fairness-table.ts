/**
 * The fairness workload's pure parts (bench/workloads/fairness.ts; test/unit/bench-fairness.test.ts): its sizes
 * from the environment, the percentiles of B's pickups with the starved jobs counted at their wait so far, and
 * the table.
 */
import type { BenchConfig } from '../config.js';
import type { TableResult } from './types.js';

export interface FairnessSizes {
  /** Tenant A's runnable jobs, enqueued before the worker starts. */
  backlog: number;
  /** How long tenant B enqueues, with the backlog and on the empty queue. */
  seconds: number;
  emptySeconds: number;
  /** Tenant B's enqueue interval (100 ms: 10 jobs/s). */
  intervalMs: number;
  /** What every handler does: sleep this long. */
  handlerMs: number;
  /** After B's last enqueue, how long its jobs may still start before the worker is stopped. */
  graceMs: number;
  concurrency: number;
  repeats: number;
}

/** The target (issue 35): B's pickup p99 with A's backlog at most this many times its p99 on an empty queue. */
export const FAIRNESS_TARGET_RATIO = 5;

export function readFairnessSizes(config: BenchConfig): FairnessSizes {
  const int = (name: string, full: number, quick: number): number => {
    const raw = process.env[name];
    const n = raw === undefined ? (config.quick ? quick : full) : Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
    return n;
  };
  return {
    backlog: int('BENCH_FAIR_BACKLOG', 100_000, 10_000),
    seconds: int('BENCH_FAIR_SECONDS', 20, 8),
    emptySeconds: int('BENCH_FAIR_EMPTY_SECONDS', 10, 5),
    intervalMs: int('BENCH_FAIR_INTERVAL_MS', 100, 100),
    handlerMs: int('BENCH_FAIR_HANDLER_MS', 5, 5),
    graceMs: int('BENCH_FAIR_GRACE_MS', 3_000, 3_000),
    concurrency: config.concurrency,
    repeats: config.repeats,
  };
}

/** One phase: B enqueueing at its rate for `seconds`, with A's backlog (`backlog` > 0) or on an empty queue. */
export interface FairPhaseMeasure {
  backlog: number;
  seconds: number;
  /** B's jobs enqueued. */
  enqueued: number;
  /** Enqueue call start -> handler start, of B's jobs that started before the worker was stopped. */
  pickupsMs: number[];
  /** B's jobs not started when the worker was stopped: enqueue call start -> the stop, their wait so far. */
  starvedWaitsMs: number[];
  /** B's enqueue calls, start -> return: p50 and the most. */
  enqueueP50Ms: number;
  enqueueMaxMs: number;
  /** The most a B enqueue started after its slot (the producer's event loop lag). */
  scheduleLagMaxMs: number;
  /** A's handler starts during B's phase, per second; and over the whole phase, the grace included. */
  aStartsPerSecond: number;
  aStarted: number;
  /** Worker start -> stop. */
  wallMs: number;
}

/** A percentile and whether it is only a lower bound (a starved job's true pickup is its wait so far or more). */
export interface Bounded {
  ms: number;
  lowerBound: boolean;
}

/**
 * The p-th percentile (bench/stats.ts's rank) of the started pickups and the starved waits together. A starved
 * value can only grow, so the result is exact only when every starved wait is at least the value found (the
 * order below it cannot change); otherwise it is a lower bound.
 */
export function boundedPercentile(pickupsMs: readonly number[], starvedWaitsMs: readonly number[], p: number): Bounded {
  const all = [...pickupsMs, ...starvedWaitsMs].sort((a, b) => a - b);
  if (all.length === 0) return { ms: Number.NaN, lowerBound: false };
  const ms = all[Math.min(all.length - 1, Math.max(0, Math.ceil((p / 100) * all.length) - 1))]!;
  return { ms, lowerBound: starvedWaitsMs.some((w) => w <= ms) };
}

const fmtMs = (b: Bounded): string => (Number.isNaN(b.ms) ? 'n/a' : `${b.lowerBound ? '>= ' : ''}${b.ms.toFixed(b.ms < 100 ? 1 : 0)} ms`);

export interface FairnessRatio {
  /** B's p99 with the backlog over its p99 on the empty queue. */
  value: number;
  /** The p99 with the backlog is a lower bound, so the ratio is too. */
  lowerBound: boolean;
  /** The empty queue's p99 is exact (no B job starved there); else the ratio says nothing. */
  baselineExact: boolean;
}

export const p99 = (m: FairPhaseMeasure): Bounded => boundedPercentile(m.pickupsMs, m.starvedWaitsMs, 99);

export function fairnessRatio(loaded: FairPhaseMeasure, empty: FairPhaseMeasure): FairnessRatio {
  const l = p99(loaded);
  const e = p99(empty);
  return { value: l.ms / e.ms, lowerBound: l.lowerBound, baselineExact: !e.lowerBound };
}

export function verdict(r: FairnessRatio): 'met' | 'not met' | 'undetermined' {
  if (Number.isNaN(r.value) || !r.baselineExact) return 'undetermined';
  if (r.value > FAIRNESS_TARGET_RATIO) return 'not met';
  return r.lowerBound ? 'undetermined' : 'met';
}

const fmtRatio = (r: FairnessRatio): string =>
  `${r.lowerBound ? '>= ' : ''}${r.value >= 100 ? Math.round(r.value).toLocaleString('en-US') : r.value.toFixed(1)}x${r.baselineExact ? '' : ' (baseline starved)'}`;

/** The workload's table: one row per phase per run; runs pair an empty-queue phase with a backlog one. */
export function fairnessTable(sizes: FairnessSizes, runs: readonly { empty: FairPhaseMeasure; loaded: FairPhaseMeasure }[]): TableResult {
  const perSecond = 1_000 / sizes.intervalMs;
  const rows: (string | number)[][] = [];
  const ratios: FairnessRatio[] = [];
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  runs.forEach(({ empty, loaded }, i) => {
    for (const m of [empty, loaded]) {
      const pct = (p: number) => fmtMs(boundedPercentile(m.pickupsMs, m.starvedWaitsMs, p));
      const starved = m.starvedWaitsMs.length;
      rows.push([
        `${i + 1}, ${m.backlog === 0 ? 'empty queue' : `A's backlog of ${m.backlog.toLocaleString('en-US')}`}`,
        `${m.enqueued} in ${m.seconds} s`,
        pct(50),
        pct(95),
        pct(99),
        starved === 0 ? '0' : `${starved} (waited ${seconds(Math.min(...m.starvedWaitsMs))}-${seconds(Math.max(...m.starvedWaitsMs))} so far)`,
        m.backlog === 0 ? '-' : `${Math.round(m.aStartsPerSecond).toLocaleString('en-US')} (${m.aStarted.toLocaleString('en-US')} started)`,
        `${m.enqueueP50Ms.toFixed(1)} / ${m.enqueueMaxMs.toFixed(0)} ms, lag <= ${m.scheduleLagMaxMs.toFixed(0)} ms`,
        m === empty ? '' : fmtRatio(fairnessRatio(loaded, empty)),
      ]);
    }
    ratios.push(fairnessRatio(loaded, empty));
  });
  // Median run by ratio (the lower middle one, as bench/stats.ts's spread).
  const median = [...ratios].sort((a, b) => a.value - b.value)[Math.floor((ratios.length - 1) / 2)];
  const medianRun = median === undefined ? undefined : runs[ratios.indexOf(median)];
  const starved = runs.reduce((a, r) => a + r.loaded.starvedWaitsMs.length, 0);
  const enqueued = runs.reduce((a, r) => a + r.loaded.enqueued, 0);
  const headline =
    median === undefined || medianRun === undefined
      ? 'not run'
      : `B's pickup p99 ${fmtMs(p99(medianRun.loaded))} with A's backlog vs ${fmtMs(p99(medianRun.empty))} on an empty queue: ${fmtRatio(median)} (target <= ${FAIRNESS_TARGET_RATIO}x: ${verdict(median)}), ${starved} of ${enqueued} B jobs starved`;
  return {
    kind: 'table',
    key: 'fairness',
    title: `fairness: tenant A's backlog vs tenant B at ${perSecond} jobs/s, one createWorker, concurrency ${sizes.concurrency}, ${sizes.handlerMs} ms handlers`,
    size: `A: ${sizes.backlog.toLocaleString('en-US')} runnable jobs; B: ${sizes.seconds} s with the backlog, ${sizes.emptySeconds} s on an empty queue, grace ${sizes.graceMs} ms; ${sizes.repeats} run(s)`,
    headers: [
      'run, queue',
      "B's jobs",
      'B pickup p50',
      'p95',
      'p99',
      "B's jobs not started at the stop (starved)",
      "A's starts/s during B's phase",
      "B's enqueue call p50 / max, producer lag",
      'p99 vs empty queue',
    ],
    rows,
    data: { sizes, runs, ratios },
    headlineBySystem: { runledger: headline },
    headlineSummary: 'runledger only',
    notes: [
      `each phase on a fresh clone, after one untimed warm-up phase: A's backlog (organizationId and fairness key 'tenant-a', the bench job type, default priority) enqueued in bulk before the worker starts; one createWorker in the bench process (concurrency ${sizes.concurrency}, defaults otherwise, reaper off), every handler a ${sizes.handlerMs} ms setTimeout; B (organizationId and fairness key 'tenant-b', the same type) enqueues one job every ${sizes.intervalMs} ms from its own client, not waiting for the previous call`,
      'pickup = B enqueue call start -> its handler start, on one monotonic clock (as pickup_latency); the worker is stopped when B has enqueued for its phase and then all its jobs started or the grace ran out, not when A is drained',
      "a B job not started at the stop is starved: it counts in the percentiles at its wait so far, so a percentile that lands on or above one is a lower bound ('>='), and so is the ratio",
      "runledger only: every job names its tenant as its fairness key, so claims take A's and B's jobs in turn (docs/guide/flow-control.md, 'Fair claiming'); without keys the claim is oldest-first across all organizations and B waits behind A's whole backlog (>= 794x before fair claiming)",
      `target (issue 35): B's pickup p99 with the backlog <= ${FAIRNESS_TARGET_RATIO}x its p99 on an empty queue`,
      headline,
    ],
  };
}
