/**
 * rate_limit (issue 35's target; runledger only): the fleet (bench/fleet: P worker processes, createWorker
 * defaults, concurrency 10 each) drains `jobs` no-op jobs of ONE rate key, `limit` starts per `periodMs` with
 * a bucket of `burst`, far below what the fleet could start. Target: the observed start rate within 5% of the
 * limit, and never more than limit + burst starts in any window of one period.
 *
 * Both are read from the ledger after the drain (test/harness/rate-ledger.ts): every attempt's start, the
 * claim's now(). The rate leaves the first burst out: (starts - burst) / (last start - first start); the
 * middle 60% of the run is a cross-check. The window count is given on the recorded starts and on the
 * bucket's own clock (the running maximum in sequence order: a claim that queued on the key's row spends the
 * row's later tokens), which is the one the bucket guarantees.
 */
import pg from 'pg';
import type { BenchConfig } from '../config.js';
import { runFleet, untilCount } from '../fleet/fleet.js';
import { spread } from '../stats.js';
import { seedRateLimitedNoopJobs } from '../systems/runledger.js';
import { BENCH_JOB_TYPE } from '../systems/types.js';
import { ledgerRateStarts, maxInWindow, replayBucket, steadyRate } from '../../test/harness/rate-ledger.js';
import type { BenchContext, TableResult, Workload } from './types.js';

export interface RateLimitSizes {
  jobs: number;
  limit: number;
  periodMs: number;
  burst: number;
  processes: number;
  concurrency: number;
  repeats: number;
}

export const BENCH_RATE_KEY = 'bench-rate';

export function readRateLimitSizes(config: BenchConfig): RateLimitSizes {
  const int = (name: string, full: number, quick: number): number => {
    const raw = process.env[name];
    const n = raw === undefined ? (config.quick ? quick : full) : Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
    return n;
  };
  return {
    jobs: int('BENCH_RL_JOBS', 1_500, 400),
    limit: int('BENCH_RL_LIMIT', 100, 100),
    periodMs: int('BENCH_RL_PERIOD_MS', 1_000, 1_000),
    burst: int('BENCH_RL_BURST', 10, 10),
    processes: int('BENCH_RL_PROCESSES', 8, 8),
    concurrency: config.concurrency,
    repeats: config.repeats,
  };
}

export interface RateDrainMeasure {
  wallMs: number;
  /** Starts of the key in the ledger (attempts: a no-op job starts once). */
  starts: number;
  /** Starts per second, first burst left out: (starts - burst) / (last - first). */
  rate: number;
  /** Starts per second in the middle 60% of the run. */
  middleRate: number;
  spanMs: number;
  /** The most starts in a closed window of one period, on the recorded starts and on the bucket's clock. */
  windowMax: number;
  bucketWindowMax: number;
  /** Windows (opening at a start) holding more than limit + burst, on each clock. */
  windowsOver: number;
  bucketWindowsOver: number;
  /** Jobs not SUCCEEDED after the drain. */
  notDone: number;
  /** The bucket replayed on its clock (test/harness/rate-ledger.ts): refill lost while full, the longest gap between claims, starts without a token. */
  lostTokens: number;
  longestGapMs: number;
  withoutToken: number;
}

async function readLedger(url: string, sizes: RateLimitSizes): Promise<Omit<RateDrainMeasure, 'wallMs'>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const starts = (await ledgerRateStarts(client, [BENCH_RATE_KEY])).get(BENCH_RATE_KEY) ?? [];
    const allowed = sizes.limit + sizes.burst;
    const recorded = maxInWindow(
      starts.map((s) => s.at),
      sizes.periodMs,
      allowed,
    );
    const bucket = maxInWindow(
      starts.map((s) => s.bucketAt),
      sizes.periodMs,
      allowed,
    );
    const rate = steadyRate(
      starts.map((s) => s.at),
      sizes.burst,
    );
    const replay = replayBucket(starts, sizes);
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM runledger.job_queue WHERE status <> 'SUCCEEDED'`);
    return {
      starts: starts.length,
      rate: rate.afterBurst,
      middleRate: rate.middle,
      spanMs: rate.spanMs,
      windowMax: recorded.max,
      bucketWindowMax: bucket.max,
      windowsOver: recorded.over,
      bucketWindowsOver: bucket.over,
      notDone: rows[0]!.n,
      lostTokens: replay.lostTokens,
      longestGapMs: replay.longestGapMs,
      withoutToken: replay.withoutToken,
    };
  } finally {
    await client.end();
  }
}

export function rateLimitWorkload(sizes: RateLimitSizes): Workload {
  return {
    key: 'rate_limit',
    async run(context: BenchContext, systems): Promise<TableResult> {
      const system = systems.find((s) => s.key === 'runledger');
      const measures: RateDrainMeasure[] = [];
      if (system) {
        for (let rep = 0; rep < sizes.repeats; rep += 1) {
          context.log(
            `rate_limit: ${sizes.jobs} jobs, ${sizes.limit} per ${sizes.periodMs} ms, burst ${sizes.burst}, ${sizes.processes} processes, run ${rep + 1}`,
          );
          const measure = await context.withDatabase(system, async (url): Promise<RateDrainMeasure> => {
            await seedRateLimitedNoopJobs(url, sizes.jobs, { key: BENCH_RATE_KEY, limit: sizes.limit, periodMs: sizes.periodMs, burst: sizes.burst });
            const env = { FLEET_TYPES: BENCH_JOB_TYPE, FLEET_COUNT_TYPE: '', FLEET_CONCURRENCY: String(sizes.concurrency) };
            const run = await runFleet(url, sizes.processes, env, (count) => untilCount(count, sizes.jobs));
            return { wallMs: run.wallMs, ...(await readLedger(url, sizes)) };
          });
          context.log(
            `  ${measure.rate.toFixed(1)} starts/s after the burst (middle ${measure.middleRate.toFixed(1)}); at most ${measure.windowMax} in a period (bucket clock ${measure.bucketWindowMax}), ${measure.windowsOver} / ${measure.bucketWindowsOver} windows over ${sizes.limit + sizes.burst}; ${measure.lostTokens.toFixed(0)} tokens lost at a full bucket, longest gap between claims ${measure.longestGapMs.toFixed(0)} ms, ${measure.withoutToken} starts without a token`,
          );
          measures.push(measure);
        }
      }
      return rateLimitTable(sizes, measures);
    },
  };
}

/** The workload's table from its measures (pure: test/unit/bench-rate-limit.test.ts). */
export function rateLimitTable(sizes: RateLimitSizes, measures: readonly RateDrainMeasure[]): TableResult {
  const perSecond = (sizes.limit * 1_000) / sizes.periodMs;
  const allowed = sizes.limit + sizes.burst;
  const rate = spread(measures.map((m) => m.rate));
  const ratio = rate.median / perSecond;
  const windowMax = Math.max(0, ...measures.map((m) => m.windowMax));
  const bucketWindowMax = Math.max(0, ...measures.map((m) => m.bucketWindowMax));
  const sum = (pick: (m: RateDrainMeasure) => number) => measures.reduce((a, m) => a + pick(m), 0);
  const violations = sum((m) => m.windowsOver);
  const bucketViolations = sum((m) => m.bucketWindowsOver);
  const r1 = (n: number) => n.toFixed(1);
  const headline = `${ratio.toFixed(3)}x the limit (${r1(rate.median)} starts/s vs ${r1(perSecond)}), at most ${windowMax} starts in one period (limit + burst ${allowed}), ${violations} violations`;
  return {
    kind: 'table',
    key: 'rate_limit',
    title: `rate limit: one key, ${sizes.limit} per ${sizes.periodMs} ms, burst ${sizes.burst}, ${sizes.processes} worker processes x concurrency ${sizes.concurrency}`,
    size: `${sizes.jobs.toLocaleString('en-US')} no-op jobs per drain, ${sizes.repeats} run(s)`,
    headers: [
      'run',
      'starts/s after the first burst',
      'vs the limit',
      'starts/s, middle 60%',
      `most starts in one period (recorded / bucket clock; allowed ${allowed})`,
      'windows over (recorded / bucket clock)',
      'refill lost at a full bucket (tokens) / longest gap between claims',
      'starts without a token (replayed bucket)',
      'jobs not done',
      'wall',
    ],
    rows: measures.map((m, i) => [
      `${i + 1}`,
      r1(m.rate),
      `${(m.rate / perSecond).toFixed(3)}x`,
      r1(m.middleRate),
      `${m.windowMax} / ${m.bucketWindowMax}`,
      `${m.windowsOver} / ${m.bucketWindowsOver}`,
      `${Math.round(m.lostTokens)} / ${Math.round(m.longestGapMs)} ms`,
      m.withoutToken,
      m.notDone,
      `${(m.wallMs / 1000).toFixed(1)} s`,
    ]),
    data: { sizes, measures, ratio, windowMax, bucketWindowMax, violations, bucketViolations },
    headlineBySystem: { runledger: headline },
    headlineSummary: 'runledger only (no peer has a shared per-key start rate in this form)',
    notes: [
      'each drain on a fresh clone, the bucket full when the fleet starts; the same fleet as concurrency_keys (bench/fleet: createWorker defaults, its own pool, LISTEN connection and maintenance loops per process) and no-op handlers; every job names the one key',
      `read from the ledger after the drain (test/harness/rate-ledger.ts): a start is an attempt's claim time (now() of the claim); the rate is (starts - burst) / (last start - first start), the first burst left out; the window count is the most starts in any closed window of ${sizes.periodMs} ms, on the recorded starts and on the bucket's clock (the running maximum in job_events' sequence order, which a claim draws after locking the key's row)`,
      'the bucket is replayed on its clock from full at the first start: the refill that came while it was full is what a saturated key lost to claims that came late (the rate falls short of the limit by exactly that, over the run); a start the replay finds without a whole token would break the bucket',
      "no peer runs this shape in the same form: neither pg-boss nor graphile-worker has a built-in start rate shared per key across workers (pg-boss's singletonSeconds throttles sends, not starts), so the table is runledger only",
      `target (issue 35): the rate within 5% of the limit (${r1(perSecond * 0.95)}-${r1(perSecond * 1.05)} starts/s), 0 windows over limit + burst (bucket clock: ${bucketViolations} over, at most ${bucketWindowMax})`,
      headline,
    ],
  };
}
