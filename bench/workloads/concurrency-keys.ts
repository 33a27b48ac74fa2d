/**
 * concurrency_keys (issue 35's target; runledger only): the fleet's drain (bench/fleet: P worker processes,
 * createWorker defaults, concurrency 10 each) of `jobs` no-op jobs spread over `keys` concurrency keys of
 * limit `limit`, against the SAME drain without keys, in the same run, each on a fresh clone, alternating
 * which goes first. Target: keyed >= 0.8x unkeyed.
 *
 * The limit is checked from the ledger (test/harness/concurrency-ledger.ts: every attempt as an interval on
 * job_events' sequence, the most of one key at once), and sampled live: the most lease rows of one key in one
 * snapshot, every 250 ms (the sampler runs in both drains, so both pay it). After the drain every key's slot
 * count must be back to 0, its lease rows gone.
 */
import pg from 'pg';
import type { BenchConfig } from '../config.js';
import { runFleet, untilCount } from '../fleet/fleet.js';
import { spread, type Spread } from '../stats.js';
import { seedKeyedNoopJobs, seedNoopJobs } from '../systems/runledger.js';
import { BENCH_JOB_TYPE } from '../systems/types.js';
import { ledgerLeaseIntervals, maxOverlapByKey } from '../../test/harness/concurrency-ledger.js';
import type { BenchContext, TableResult, Workload } from './types.js';

export interface ConcurrencyKeySizes {
  jobs: number;
  keys: number;
  limit: number;
  processes: number;
  concurrency: number;
  repeats: number;
  /** BENCH_CK_POLL_MS: the workers' pollIntervalMs (a diagnostic); undefined: createWorker's default. */
  pollMs?: number;
}

const SAMPLE_MS = 250;

export function readConcurrencyKeySizes(config: BenchConfig): ConcurrencyKeySizes {
  const int = (name: string, full: number, quick: number): number => {
    const raw = process.env[name];
    const n = raw === undefined ? (config.quick ? quick : full) : Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
    return n;
  };
  return {
    jobs: int('BENCH_CK_JOBS', 20_000, 2_000),
    keys: int('BENCH_CK_KEYS', 1_000, 100),
    limit: int('BENCH_CK_LIMIT', 3, 3),
    processes: int('BENCH_CK_PROCESSES', 8, 8),
    concurrency: config.concurrency,
    repeats: config.repeats,
    ...(process.env.BENCH_CK_POLL_MS ? { pollMs: int('BENCH_CK_POLL_MS', 1_000, 1_000) } : {}),
  };
}

export interface KeyedDrainMeasure {
  keyed: boolean;
  wallMs: number;
  rate: number;
  /** Statements per job the fleet's counting clients saw (not the worker's own pool: in the data, not the table). */
  statementsPerJob: number;
  /** Keyed drain: the most attempts of one key at once, from the ledger; violations: keys above the limit. */
  ledgerMax: number | null;
  ledgerViolations: number | null;
  /** Archived attempts whose end event the ledger lacks (the reconstruction could not place them). */
  unplaced: number | null;
  /** The most lease rows of one key in one sampled snapshot. */
  sampledMax: number;
  /** After the drain: keys whose slot count is not 0 or not their lease rows. */
  countsWrong: number | null;
}

/** The live sampler: the most lease rows of one key in one snapshot, every SAMPLE_MS. */
function startSampler(url: string): { stop(): Promise<number> } {
  const client = new pg.Client({ connectionString: url, application_name: 'bench-ck-sampler' });
  let max = 0;
  let stopped = false;
  const loop = (async () => {
    await client.connect();
    while (!stopped) {
      const { rows } = await client.query<{ n: number }>(`
        SELECT COALESCE(max(n), 0)::int AS n FROM (
          SELECT count(*) AS n FROM runledger.job_leases WHERE concurrency_key IS NOT NULL GROUP BY concurrency_key) x`);
      max = Math.max(max, rows[0]!.n);
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
    await client.end();
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return max;
    },
  };
}

async function checkLedger(url: string, limit: number): Promise<Pick<KeyedDrainMeasure, 'ledgerMax' | 'ledgerViolations' | 'unplaced' | 'countsWrong'>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { intervals, missing } = await ledgerLeaseIntervals(client);
    const overlaps = [...maxOverlapByKey(intervals).values()];
    const { rows } = await client.query<{ n: number }>(`
      SELECT count(*)::int AS n FROM runledger.concurrency_slots k
       WHERE k.leased <> 0 OR EXISTS (SELECT 1 FROM runledger.job_leases l WHERE l.concurrency_key = k.key)`);
    return {
      ledgerMax: Math.max(0, ...overlaps.map((o) => o.max)),
      ledgerViolations: overlaps.filter((o) => o.max > limit).length,
      unplaced: missing.length,
      countsWrong: rows[0]!.n,
    };
  } finally {
    await client.end();
  }
}

export function concurrencyKeysWorkload(sizes: ConcurrencyKeySizes): Workload {
  return {
    key: 'concurrency_keys',
    async run(context: BenchContext, systems): Promise<TableResult> {
      const system = systems.find((s) => s.key === 'runledger');
      const measures: KeyedDrainMeasure[] = [];
      if (system) {
        for (let rep = 0; rep < sizes.repeats; rep += 1) {
          // Alternate which drain goes first, so a drift of the machine weighs on both.
          for (const keyed of rep % 2 === 0 ? [false, true] : [true, false]) {
            context.log(`concurrency_keys: ${keyed ? `${sizes.keys} keys of limit ${sizes.limit}` : 'no keys'}, ${sizes.processes} processes, run ${rep + 1}`);
            const measure = await context.withDatabase(
              system,
              async (url): Promise<KeyedDrainMeasure> => {
                if (keyed) await seedKeyedNoopJobs(url, sizes.jobs, sizes.keys, sizes.limit);
                else await seedNoopJobs(url, sizes.jobs);
                const sampler = startSampler(url);
                const env = {
                  FLEET_TYPES: BENCH_JOB_TYPE,
                  FLEET_COUNT_TYPE: '',
                  FLEET_CONCURRENCY: String(sizes.concurrency),
                  ...(sizes.pollMs === undefined ? {} : { FLEET_POLL_INTERVAL_MS: String(sizes.pollMs) }),
                };
                let run: { wallMs: number; statements: number };
                try {
                  run = await runFleet(url, sizes.processes, env, (count) => untilCount(count, sizes.jobs));
                } finally {
                  await sampler.stop().catch(() => 0);
                }
                const sampledMax = await sampler.stop();
                const checks = keyed ? await checkLedger(url, sizes.limit) : { ledgerMax: null, ledgerViolations: null, unplaced: null, countsWrong: null };
                return {
                  keyed,
                  wallMs: run.wallMs,
                  rate: sizes.jobs / (run.wallMs / 1000),
                  statementsPerJob: run.statements / sizes.jobs,
                  sampledMax,
                  ...checks,
                };
              },
              'concurrency_keys',
            );
            context.log(
              `  ${Math.round(measure.rate)} jobs/s${keyed ? `; ledger: at most ${measure.ledgerMax} of a key at once (${measure.ledgerViolations} keys over ${sizes.limit}), sampled ${measure.sampledMax}` : ''}`,
            );
            measures.push(measure);
          }
        }
      }
      return concurrencyKeysTable(sizes, measures);
    },
  };
}

/** The workload's table from its measures (pure: test/unit/bench-concurrency-keys.test.ts). */
export function concurrencyKeysTable(sizes: ConcurrencyKeySizes, measures: readonly KeyedDrainMeasure[]): TableResult {
  const plain = measures.filter((m) => !m.keyed);
  const keyedRuns = measures.filter((m) => m.keyed);
  const plainRate = spread(plain.map((m) => m.rate));
  const keyedRate = spread(keyedRuns.map((m) => m.rate));
  const ratio = keyedRate.median / plainRate.median;
  const sum = (values: (number | null)[]) => values.reduce<number>((a, b) => a + (b ?? 0), 0);
  const ledgerMax = Math.max(0, ...keyedRuns.map((m) => m.ledgerMax ?? 0));
  const violations = sum(keyedRuns.map((m) => m.ledgerViolations));
  const fmt = (s: Spread) =>
    `${Math.round(s.median).toLocaleString('en-US')} jobs/s (${Math.round(s.min).toLocaleString('en-US')}-${Math.round(s.max).toLocaleString('en-US')})`;
  const headline = `${ratio.toFixed(2)}x the unkeyed drain, at most ${ledgerMax} leased per key (limit ${sizes.limit}), ${violations} violations`;
  return {
    kind: 'table',
    key: 'concurrency_keys',
    title: `concurrency keys: ${sizes.keys.toLocaleString('en-US')} keys of limit ${sizes.limit}, ${sizes.processes} worker processes x concurrency ${sizes.concurrency}${sizes.pollMs === undefined ? '' : `, pollIntervalMs ${sizes.pollMs}`}`,
    size: `${sizes.jobs.toLocaleString('en-US')} no-op jobs per drain, ${sizes.repeats} run(s) of each drain`,
    headers: [
      'drain',
      'rate (median, min-max)',
      'vs no keys',
      'most leased of one key at once: ledger / sampled',
      'keys over the limit',
      'slot counts wrong after',
    ],
    rows: [
      ['no keys', fmt(plainRate), '1.00x', `- / ${Math.max(0, ...plain.map((m) => m.sampledMax))}`, '', ''],
      [
        `${sizes.keys.toLocaleString('en-US')} keys, limit ${sizes.limit}`,
        fmt(keyedRate),
        `${ratio.toFixed(2)}x`,
        `${ledgerMax} / ${Math.max(0, ...keyedRuns.map((m) => m.sampledMax))}`,
        violations,
        sum(keyedRuns.map((m) => m.countsWrong)),
      ],
    ],
    data: { sizes, measures, ratio },
    headlineBySystem: { runledger: headline },
    notes: [
      'each drain on a fresh clone; the same fleet (bench/fleet: createWorker defaults, its own pool, LISTEN connection and maintenance loops per process) and the same no-op handlers; keyed jobs each name one key drawn by a fixed pseudo-random sequence',
      `the ledger figure reconstructs every attempt's lease from job_events' sequence (test/harness/concurrency-ledger.ts); the sampled one is the most lease rows of one key in one snapshot, every ${SAMPLE_MS} ms`,
      `target (issue 35): >= 0.8x the drain without keys, 0 keys over the limit; ${sum(keyedRuns.map((m) => m.unplaced))} attempts the ledger could not place`,
      headline,
    ],
  };
}
