/**
 * What else the claim-latency workload's big database (10M finished rows and
 * 1M pending of other types in a full run) is used for once its claims are
 * timed:
 *
 * - the dashboard pages' API reads and `getQueueMetrics`, timed (median of
 *   READ_SAMPLES calls after one untimed) with the plan of every statement
 *   each sends (recorded in the client, EXPLAIN ANALYZEd on the same
 *   database): which index each scan of a runledger table uses, and whether
 *   any reads job_queue sequentially. The plan tests
 *   (test/integration/dashboard-plans.test.ts, metrics-plans.test.ts) pin the
 *   same on 200k rows; this is the same question at the issue's size;
 * - the claim statement's plan on both tables (planning and execution time,
 *   buffers), the "why" behind the claim ratio;
 * - purge of 1M finished rows (`purgeFinished`, batches of 500) while a
 *   `createWorker` (defaults, 8 handlers) serves a producer at 200 jobs/s and
 *   a sequential claimJobs(limit 10) loop samples the claim: pickup and claim
 *   latency before, during and after the purge.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { runledger } from '../runledger-package.js';
import { jobDetail, jobsPage, overview, runsPage } from '../../src/dashboard/api.js';
import { readOverview } from '../../src/dashboard/queries.js';
import { sleep, withClient } from '../db.js';
import { now, STEADY_ADAPTERS, type SteadyRun } from '../held/adapters.js';
import { percentile } from '../stats.js';
import type { BenchContext, TableResult } from '../workloads/types.js';
import { createRecordingPrisma, explainRecorded, type RecordedStatement, type RecordingPrisma, type StatementPlan } from './recording-client.js';

// The built package (bench/runledger-package.ts), as the other runledger variants.
const { adminScope, claimJobs, enqueueJobs, getQueueMetrics, purgeFinished } = runledger;

const READ_SAMPLES = 5;
const PURGE_RATE = 200;
const PURGE_WORKERS = 8;
const PURGE_BATCH = 500;
const BEFORE_SECONDS = 15;
const AFTER_SECONDS = 10;
const CLAIM_PAUSE_MS = 50;

export interface BigHistorySizes {
  /** Finished rows purged under load. */
  purge: number;
  /** Claimed type of the claim-latency workload (its jobs are what the sampled claims take). */
  claimedType: string;
  limit: number;
}

interface ReadMeasure {
  read: string;
  medianMs: number;
  statements: number;
  plans: StatementPlan[];
  seqScanOfJobQueue: boolean;
}

/** Reads whose plan may scan job_queue whole: none since the overview counts finished jobs over a window (src/dashboard/queries.ts). */
const WHOLE_TABLE_BY_DESIGN = new Set<string>();

async function measureReads(context: BenchContext, url: string): Promise<ReadMeasure[]> {
  const client = createRecordingPrisma(url, 4);
  const explainer = new pg.Client({ connectionString: url });
  await explainer.connect();
  try {
    const db = client.prisma;
    const scope = adminScope();
    const { rows } = await explainer.query<{ id: string; job_type: string }>(`SELECT id, job_type FROM runledger.job_queue WHERE status = 'SUCCEEDED' LIMIT 1`);
    const finished = rows[0];
    const reads: [string, () => Promise<unknown>][] = [
      ['getQueueMetrics (admin scope)', () => getQueueMetrics(db, { scope })],
      ['dashboard overview counts (readOverview)', () => readOverview(db, scope)],
      ['overview page (counts + metrics + throughput)', () => overview(db, scope)],
      ['jobs page (first page, no filter)', () => jobsPage(db, scope, new URLSearchParams())],
      ['jobs page (SUCCEEDED, one type)', () => jobsPage(db, scope, new URLSearchParams({ status: 'SUCCEEDED', type: finished?.job_type ?? 'history_3' }))],
      ['jobs page (PENDING)', () => jobsPage(db, scope, new URLSearchParams({ status: 'PENDING' }))],
      ['jobs page (search: id prefix)', () => jobsPage(db, scope, new URLSearchParams({ q: (finished?.id ?? '0').slice(0, 8) }))],
      ['job detail (a finished job)', () => (finished ? jobDetail(db, scope, finished.id) : Promise.resolve(null))],
      ['runs page (first page)', () => runsPage(db, scope, new URLSearchParams())],
    ];
    const measures: ReadMeasure[] = [];
    for (const [read, fn] of reads) {
      const { statements } = await client.record(fn);
      const times: number[] = [];
      for (let i = 0; i < READ_SAMPLES; i += 1) {
        const started = performance.now();
        await fn();
        times.push(performance.now() - started);
      }
      const plans: StatementPlan[] = [];
      for (const statement of dedupe(statements)) plans.push(await explainRecorded(explainer, statement));
      const seqScanOfJobQueue = plans.some((p) => p.scans.includes('job_queue: Seq Scan'));
      const measure = { read, medianMs: percentile(times, 50), statements: statements.length, plans, seqScanOfJobQueue };
      context.log(`  ${read}: ${measure.medianMs.toFixed(1)} ms, ${statements.length} statements; ${[...new Set(plans.flatMap((p) => p.scans))].join(', ')}`);
      measures.push(measure);
    }
    return measures;
  } finally {
    await explainer.end();
    await client.close();
  }
}

const dedupe = (statements: RecordedStatement[]): RecordedStatement[] => [
  ...new Map(statements.map((s) => [`${s.text}\u0000${JSON.stringify(s.values)}`, s])).values(),
];

/** The claim statement as claimJobs sends it, EXPLAIN ANALYZEd (rolled back) on one table. */
async function claimPlan(url: string, sizes: BigHistorySizes): Promise<StatementPlan | null> {
  const client = createRecordingPrisma(url, 1);
  const explainer = new pg.Client({ connectionString: url });
  await explainer.connect();
  try {
    const { statements } = await client.record(() =>
      claimJobs(client.prisma, { workerId: 'bench-explain', jobTypes: [sizes.claimedType], limit: sizes.limit, leaseSeconds: 600 }),
    );
    const claim =
      statements.find((s) => /UPDATE/i.test(s.text) && s.text.includes('LEASED')) ?? [...statements].sort((a, b) => b.text.length - a.text.length)[0];
    return claim ? await explainRecorded(explainer, claim) : null;
  } finally {
    await explainer.end();
    await client.close();
  }
}

/** Pending jobs of the claimed type for the claim sampler, 1,000 per call. */
async function enqueueClaimable(client: RecordingPrisma, jobType: string, jobs: number): Promise<void> {
  for (let done = 0; done < jobs; done += 1_000) {
    await enqueueJobs(
      client.prisma,
      Array.from({ length: 1_000 }, (_, i) => ({ jobType, payload: { n: done + i } })),
    );
  }
}

interface PurgePhase {
  phase: 'before' | 'during' | 'after';
  seconds: number;
  claims: number;
  claimP50Ms: number;
  claimP95Ms: number;
  pickups: number;
  pickupP50Ms: number;
  pickupP95Ms: number;
}

interface PurgeMeasure {
  purged: number;
  purgeSeconds: number;
  phases: PurgePhase[];
}

async function purgeUnderLoad(context: BenchContext, url: string, sizes: BigHistorySizes): Promise<PurgeMeasure> {
  // The oldest `purge` finished rows: everything that finished before the (purge + 1)-th.
  const cutoff = await withClient(url, async (client) => {
    const { rows } = await client.query<{ at: Date }>(
      `SELECT finished_at AS at FROM runledger.job_queue WHERE status = 'SUCCEEDED' ORDER BY finished_at OFFSET $1 LIMIT 1`,
      [sizes.purge],
    );
    return rows[0]?.at ?? new Date();
  });
  const runner = createRecordingPrisma(url, 4);
  const pickups: { at: number; ms: number }[] = [];
  const claims: { at: number; ms: number }[] = [];
  let run: SteadyRun | undefined;
  let sampling = true;
  let claimLoop: Promise<void> = Promise.resolve();
  try {
    await enqueueClaimable(runner, sizes.claimedType, 40_000);
    const adapter = STEADY_ADAPTERS.find((a) => a.system === 'runledger_worker')!;
    run = await adapter.start(url, {
      concurrency: PURGE_WORKERS,
      workMs: 1,
      pgBossBatch: 1,
      picked: (enqueuedAt) => {
        const at = now();
        pickups.push({ at, ms: at - enqueuedAt });
      },
      finished: () => undefined,
    });
    const steady = run;
    const producer = setInterval(() => {
      for (let i = 0; i < PURGE_RATE / 20; i += 1) void steady.enqueue(now()).catch((error: unknown) => console.error('[bench] purge producer:', error));
    }, 50);
    claimLoop = (async () => {
      while (sampling) {
        const started = now();
        const claimed = await claimJobs(runner.prisma, {
          workerId: 'bench-purge-claims',
          jobTypes: [sizes.claimedType],
          limit: sizes.limit,
          leaseSeconds: 600,
        });
        // A short claim found the type's backlog empty: not comparable with a full one, so not a sample; refill (untimed).
        if (claimed.length === sizes.limit) claims.push({ at: started, ms: now() - started });
        else await enqueueClaimable(runner, sizes.claimedType, 10_000);
        await sleep(CLAIM_PAUSE_MS);
      }
    })();
    const marks: Record<PurgePhase['phase'], { from: number; to: number }> = {} as never;
    let from = now();
    await sleep(BEFORE_SECONDS * 1_000);
    marks.before = { from, to: now() };
    from = now();
    context.log(`  purging ${sizes.purge.toLocaleString('en-US')} finished rows (batches of ${PURGE_BATCH}) under load`);
    const result = await purgeFinished(runner.prisma, { olderThan: cutoff, statuses: ['SUCCEEDED'], batchSize: PURGE_BATCH });
    marks.during = { from, to: now() };
    from = now();
    await sleep(AFTER_SECONDS * 1_000);
    marks.after = { from, to: now() };
    clearInterval(producer);
    sampling = false;
    await claimLoop;
    const phases = (['before', 'during', 'after'] as const).map((phase): PurgePhase => {
      const { from: f, to } = marks[phase];
      const c = claims.filter((s) => s.at >= f && s.at < to).map((s) => s.ms);
      const p = pickups.filter((s) => s.at >= f && s.at < to).map((s) => s.ms);
      return {
        phase,
        seconds: (to - f) / 1000,
        claims: c.length,
        claimP50Ms: percentile(c, 50),
        claimP95Ms: percentile(c, 95),
        pickups: p.length,
        pickupP50Ms: percentile(p, 50),
        pickupP95Ms: percentile(p, 95),
      };
    });
    return { purged: result.jobs, purgeSeconds: marks.during.to / 1000 - marks.during.from / 1000, phases };
  } finally {
    sampling = false;
    await claimLoop.catch(() => undefined);
    if (run) await run.stop();
    await runner.close();
  }
}

const f1 = (v: number | null | undefined): string => (v === null || v === undefined || Number.isNaN(v) ? 'n/a' : v.toFixed(1));
const f2 = (v: number | null | undefined): string => (v === null || v === undefined || Number.isNaN(v) ? 'n/a' : v.toFixed(2));

/** Runs the three checks on the big database (the claim plan on both); returns their two tables. */
export async function bigHistoryChecks(
  context: BenchContext,
  urls: { empty: string; big: string },
  sizes: BigHistorySizes,
  label: string,
): Promise<TableResult[]> {
  context.log('big_history: claim statement plans (EXPLAIN ANALYZE, rolled back)');
  const plans = { empty: await claimPlan(urls.empty, sizes), big: await claimPlan(urls.big, sizes) };
  for (const table of ['empty', 'big'] as const) {
    const p = plans[table];
    context.log(
      `  ${table}: ${p ? `planning ${f2(p.planningMs)} ms, execution ${f2(p.executionMs)} ms, ${p.buffers} buffers; ${p.scans.join(', ')}` : 'claim statement not recorded'}`,
    );
  }
  context.log('big_history: dashboard reads and getQueueMetrics');
  const reads = await measureReads(context, urls.big);
  context.log('big_history: purge under load');
  const purge = await purgeUnderLoad(context, urls.big, sizes);
  for (const p of purge.phases)
    context.log(
      `  ${p.phase}: claim p50/p95 ${f2(p.claimP50Ms)}/${f2(p.claimP95Ms)} ms (${p.claims}), pickup p50/p95 ${f2(p.pickupP50Ms)}/${f2(p.pickupP95Ms)} ms`,
    );

  const unexpected = reads.filter((r) => r.seqScanOfJobQueue && !WHOLE_TABLE_BY_DESIGN.has(r.read));
  const readsTable: TableResult = {
    kind: 'table',
    key: 'big_history_reads',
    title: `dashboard reads, getQueueMetrics and the claim's plan on ${label}`,
    size: `${label}; median of ${READ_SAMPLES} calls after one untimed; plans by EXPLAIN (ANALYZE, BUFFERS) of the statements each call sent`,
    headers: ['read', 'median ms', 'statements', 'scans (table: index)', 'planning + execution ms (per statement)'],
    rows: [
      ...(['empty', 'big'] as const).map((table) => {
        const p = plans[table];
        return [
          `claim statement, ${table} table`,
          f2(p?.executionMs),
          1,
          p ? p.scans.join(', ') : 'n/a',
          p ? `${f2(p.planningMs)} + ${f2(p.executionMs)} (${p.buffers} buffers)` : 'n/a',
        ];
      }),
      ...reads.map((r) => [
        r.read,
        f1(r.medianMs),
        r.statements,
        [...new Set(r.plans.flatMap((p) => p.scans))].join(', '),
        r.plans.map((p) => `${f1(p.planningMs)} + ${f1(p.executionMs)}`).join('; '),
      ]),
    ],
    data: { claimPlans: plans, reads },
    notes: [
      'the claim row: its EXPLAIN ANALYZE execution time (the timed claims of the claim-latency table include planning, the round trip and the commit)',
      'the overview counts (jobs by type and status) count live jobs in full and finished ones over 24 h (src/dashboard/queries.ts): their time grows with the backlog and the window, not the history',
      unexpected.length === 0
        ? 'plans: no read scans job_queue sequentially'
        : `plans: ${unexpected.map((r) => r.read).join('; ')} scan job_queue sequentially`,
    ],
  };
  const purgeTable: TableResult = {
    kind: 'table',
    key: 'big_history_purge',
    title: `purge of ${purge.purged.toLocaleString('en-US')} finished rows under load, on ${label}`,
    size: `purgeFinished(batchSize ${PURGE_BATCH}) while createWorker (defaults, ${PURGE_WORKERS} handlers, 1 ms each) serves ${PURGE_RATE} jobs/s and one connection claims ${sizes.limit} jobs every ${CLAIM_PAUSE_MS} ms`,
    headers: ['phase', 'seconds', 'claims', 'claim p50 / p95 ms', 'pickups', 'pickup p50 / p95 ms'],
    rows: purge.phases.map((p) => [
      p.phase,
      f1(p.seconds),
      p.claims,
      `${f2(p.claimP50Ms)} / ${f2(p.claimP95Ms)}`,
      p.pickups,
      `${f2(p.pickupP50Ms)} / ${f2(p.pickupP95Ms)}`,
    ]),
    data: purge,
    notes: [
      `${purge.purged.toLocaleString('en-US')} rows purged in ${f1(purge.purgeSeconds)} s (${Math.round(purge.purged / purge.purgeSeconds).toLocaleString('en-US')} rows/s)`,
    ],
  };
  return [readsTable, purgeTable];
}
