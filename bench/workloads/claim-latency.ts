/**
 * Claim latency against history and other types' backlog (runledger only):
 * sequential claimJobs(limit, one job type) timed on two databases, one
 * holding only that type's pending jobs ("empty") and one that also holds
 * F finished rows and P pending jobs of other types due earlier (so they sit
 * ahead of the claimed type in the claim index). The bulk rows are written
 * with INSERT ... SELECT generate_series straight into runledger's table,
 * then ANALYZEd, which takes minutes at the 10M/1M size (BENCH_BIG=1); the
 * claimed type's jobs go through enqueueJobs. The target: p50 on the big
 * table <= 1.5x the empty one.
 *
 * Unlike the other workloads, these two databases run with
 * synchronous_commit off: the question is the claim statement's cost as the
 * table grows, and a WAL flush per claim (several ms on a slow disk, the same
 * on both tables) would hide it and pull the ratio towards 1.
 */
import { performance } from 'node:perf_hooks';
import { claimJobs, enqueueJobs } from '../../src/index.js';
import type { ClaimLatencySizes } from '../config.js';
import { withClient } from '../db.js';
import { percentile } from '../stats.js';
import { withCountingPrisma } from '../systems/runledger-client.js';
import type { BenchContext, TableResult, Workload } from './types.js';

const CLAIMED_TYPE = 'bench_claim';
/** Untimed claims first, so both tables are measured with prepared, planned statements. */
const WARMUP_CLAIMS = 5;
/** Rows per INSERT ... SELECT, so progress shows and no single statement holds minutes of WAL. */
const INSERT_CHUNK = 1_000_000;

interface TableMeasure {
  table: 'empty' | 'big';
  setupSeconds: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  samples: number;
}

async function insertBulk(context: BenchContext, url: string, sizes: ClaimLatencySizes): Promise<void> {
  await withClient(url, async (client) => {
    for (let done = 0; done < sizes.finished; done += INSERT_CHUNK) {
      const n = Math.min(INSERT_CHUNK, sizes.finished - done);
      context.log(`  finished rows ${done + n}/${sizes.finished}`);
      await client.query(
        `INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, max_attempts, next_run_at, created_at, updated_at, started_at, finished_at, output)
         SELECT gen_random_uuid(), 'history_' || (g % 10), jsonb_build_object('n', g), 'SUCCEEDED', 1, 5,
                now() - interval '2 days', now() - interval '2 days', now() - interval '1 day', now() - interval '1 day', now() - interval '1 day', '{}'::jsonb
           FROM generate_series(1, $1::int) AS g`,
        [n],
      );
    }
    for (let done = 0; done < sizes.otherPending; done += INSERT_CHUNK) {
      const n = Math.min(INSERT_CHUNK, sizes.otherPending - done);
      context.log(`  other pending rows ${done + n}/${sizes.otherPending}`);
      await client.query(
        `INSERT INTO runledger.job_queue (id, job_type, payload, status, next_run_at)
         SELECT gen_random_uuid(), 'other_' || (g % 5), jsonb_build_object('n', g), 'PENDING', now() - interval '1 hour'
           FROM generate_series(1, $1::int) AS g`,
        [n],
      );
    }
  });
}

async function measureTable(context: BenchContext, url: string, table: 'empty' | 'big', sizes: ClaimLatencySizes): Promise<TableMeasure> {
  const setupStarted = performance.now();
  if (table === 'big') await insertBulk(context, url, sizes);
  const claimed = (sizes.samples + WARMUP_CLAIMS) * sizes.limit;
  return withCountingPrisma(url, 2, async ({ prisma }) => {
    for (let done = 0; done < claimed; done += 1_000) {
      const n = Math.min(1_000, claimed - done);
      await enqueueJobs(prisma, Array.from({ length: n }, (_, i) => ({ jobType: CLAIMED_TYPE, payload: { n: done + i } })));
    }
    await withClient(url, (client) => client.query('ANALYZE runledger.job_queue'));
    const setupSeconds = (performance.now() - setupStarted) / 1000;
    const claim = () => claimJobs(prisma, { workerId: 'bench-claim', jobTypes: [CLAIMED_TYPE], limit: sizes.limit, leaseSeconds: 600 });
    for (let i = 0; i < WARMUP_CLAIMS; i += 1) await claim();
    const times: number[] = [];
    for (let i = 0; i < sizes.samples; i += 1) {
      const started = performance.now();
      const jobs = await claim();
      times.push(performance.now() - started);
      if (jobs.length !== sizes.limit) throw new Error(`claim latency: claimed ${jobs.length}, expected ${sizes.limit}`);
    }
    return { table, setupSeconds, p50Ms: percentile(times, 50), p95Ms: percentile(times, 95), maxMs: Math.max(...times), samples: times.length };
  });
}

export function claimLatencyWorkload(sizes: ClaimLatencySizes): Workload {
  return {
    key: 'claim_latency',
    async run(context, systems): Promise<TableResult> {
      const system = systems.find((s) => s.key === 'runledger');
      const measures: TableMeasure[] = [];
      if (system) {
        for (const table of ['empty', 'big'] as const) {
          context.log(`claim_latency: ${table} table`);
          const measure = await context.withDatabase(system, async (url, database) => {
            await context.admin.query(`ALTER DATABASE "${database}" SET synchronous_commit = off`);
            return measureTable(context, url, table, sizes);
          });
          context.log(`  p50 ${measure.p50Ms.toFixed(2)} ms, p95 ${measure.p95Ms.toFixed(2)} ms (setup ${measure.setupSeconds.toFixed(0)} s)`);
          measures.push(measure);
        }
      }
      const empty = measures.find((m) => m.table === 'empty');
      const big = measures.find((m) => m.table === 'big');
      const ratio = empty && big ? big.p50Ms / empty.p50Ms : null;
      const fmtN = (n: number) => n.toLocaleString('en-US');
      return {
        kind: 'table',
        key: 'claim_latency',
        title: `claim latency: claimJobs(limit ${sizes.limit}, one type) with ${fmtN(sizes.finished)} finished rows + ${fmtN(sizes.otherPending)} pending of other types vs an empty table`,
        size: `${fmtN(sizes.finished)} finished, ${fmtN(sizes.otherPending)} other pending, ${sizes.samples} timed claims per table${sizes.finished < 10_000_000 ? ' (the 10M/1M size needs BENCH_BIG=1)' : ''}`,
        notes: [
          'both databases run with synchronous_commit off, so the figure is the claim statement, not the WAL flush of its commit',
          ...(ratio === null ? [] : [`p50 big / empty = ${ratio.toFixed(2)}x (target <= 1.5x: ${ratio <= 1.5 ? 'met' : 'missed'})`]),
        ],
        headers: ['table', 'p50 ms', 'p95 ms', 'max ms', 'claims', 'setup s'],
        rows: measures.map((m) => [m.table, m.p50Ms.toFixed(2), m.p95Ms.toFixed(2), m.maxMs.toFixed(2), m.samples, m.setupSeconds.toFixed(1)]),
        data: { sizes, measures, ratioP50: ratio },
      };
    },
  };
}
