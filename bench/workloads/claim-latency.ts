/**
 * Claim latency against history and other types' backlog (runledger only):
 * sequential claimJobs(limit, one job type) timed on two databases, one
 * holding only that type's pending jobs ("empty") and one that also holds
 * F finished rows and P pending jobs of other types due earlier (so they sit
 * ahead of the claimed type in the claim index), in interleaved rounds. The full run builds the
 * issue's 10M finished + 1M other pending (BENCH_SKIP_BIG_CLAIM=1 leaves the
 * workload out; BENCH_CLAIM_FINISHED / BENCH_CLAIM_OTHER_PENDING set other
 * sizes); the claimed type's jobs go through enqueueJobs. The target: p50 on
 * the big table <= 1.5x the empty one.
 *
 * Building 11M rows is most of this workload's time, so it is set-based and
 * index-last: the job table's secondary indexes (every index that no
 * constraint uses, read from the catalog, so the build follows whatever the
 * migrations define) are dropped, the rows are written by INSERT ... SELECT
 * generate_series in chunks on two connections, then the indexes are rebuilt
 * from their own definitions (two at a time, a large maintenance_work_mem)
 * and the table VACUUMed and ANALYZEd (once, before the claims: the visibility
 * map a live table's autovacuum keeps, which the index-only live counts of
 * getQueueMetrics and the dashboard overview read). The ids are UUIDv7-shaped and ordered by creation
 * time, as runledger's own ids are, so the primary key grows at its right
 * edge as in production. The bulk rows belong to no workflow step, so the
 * deferred foreign-key check the step link would queue per row (11M queued
 * trigger events) is skipped with session_replication_role = replica on the
 * loading connections only. Autovacuum is off for the job table on both
 * databases: the freshly loaded table would otherwise be vacuumed (minutes of
 * I/O) while the claims are timed, and the bulk rows are never updated, so
 * there is nothing for it to clean.
 *
 * Unlike the other workloads, these two databases run with
 * synchronous_commit off: the question is the claim statement's cost as the
 * table grows, and a WAL flush per claim (several ms on a slow disk, the same
 * on both tables) would hide it and pull the ratio towards 1.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { runledger } from '../runledger-package.js';
import type { ClaimLatencySizes } from '../config.js';
import { withClient } from '../db.js';
import { runInFlight } from '../done.js';
import { percentile } from '../stats.js';
import { withCountingPrisma, type CountingPrisma } from '../systems/runledger-client.js';
import type { BenchContext, TableResult, Workload } from './types.js';
import { bigHistoryChecks } from '../big-history/checks.js';

const { claimJobs, enqueueJobs } = runledger;

const CLAIMED_TYPE = 'bench_claim';
/** Untimed claims first, so both tables are measured with prepared, planned statements. */
const WARMUP_CLAIMS = 5;
/** Timed claims on one table before switching to the other. */
const ROUND = 10;
/** Rows per INSERT ... SELECT, so progress shows and no single statement holds minutes of WAL. */
const INSERT_CHUNK = 500_000;
/** Connections loading rows and building indexes at once (the bench machine has 2 cores). */
const LOADERS = 2;
/** Pending rows of other types get ids after every finished row's. */
const PENDING_OFFSET = 100_000_000;
/** Finished rows purged under load on the big table (at most a tenth of its history). */
const BIG_HISTORY_PURGE = 1_000_000;

interface TableMeasure {
  table: 'empty' | 'big';
  setupSeconds: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  samples: number;
  /** How PostgreSQL planned the claim statement on the measuring session (pg_prepared_statements), when it could be read. */
  plans: ClaimPlans | null;
}

/**
 * A UUIDv7-shaped id from the row number `g`: 48 bits of milliseconds (base + g,
 * so ids follow creation order), version 7, variant 8, and g itself as the
 * "random" part (unique without a generator call per row).
 */
const V7_ID = `(lpad(to_hex(base.ms + g), 12, '0') || '7' || lpad(to_hex(g % 4096), 3, '0') || '8' || lpad(to_hex(g), 15, '0'))::uuid`;
const BASE_MS = `(SELECT (extract(epoch FROM now() - interval '3 days') * 1000)::bigint AS ms) AS base`;

function chunkStatements(sizes: ClaimLatencySizes): { label: string; sql: string; params: number[] }[] {
  const chunks: { label: string; sql: string; params: number[] }[] = [];
  for (let from = 1; from <= sizes.finished; from += INSERT_CHUNK) {
    const to = Math.min(sizes.finished, from + INSERT_CHUNK - 1);
    chunks.push({
      label: `finished rows ${to}/${sizes.finished}`,
      sql: `INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, max_attempts, next_run_at, created_at, updated_at, started_at, finished_at, output)
            SELECT ${V7_ID}, 'history_' || (g % 10), jsonb_build_object('n', g), 'SUCCEEDED', 1, 5,
                   to_timestamp((base.ms + g) / 1000.0), to_timestamp((base.ms + g) / 1000.0), to_timestamp((base.ms + g) / 1000.0) + interval '1 second',
                   to_timestamp((base.ms + g) / 1000.0), to_timestamp((base.ms + g) / 1000.0) + interval '1 second', '{}'::jsonb
              FROM ${BASE_MS}, generate_series($1::bigint, $2::bigint) AS g`,
      params: [from, to],
    });
  }
  for (let from = 1; from <= sizes.otherPending; from += INSERT_CHUNK) {
    const to = Math.min(sizes.otherPending, from + INSERT_CHUNK - 1);
    chunks.push({
      label: `other pending rows ${to}/${sizes.otherPending}`,
      sql: `INSERT INTO runledger.job_queue (id, job_type, payload, status, next_run_at, created_at, updated_at)
            SELECT ${V7_ID}, 'other_' || (g % 5), jsonb_build_object('n', g), 'PENDING', now() - interval '1 hour',
                   to_timestamp((base.ms + g) / 1000.0), to_timestamp((base.ms + g) / 1000.0)
              FROM ${BASE_MS}, generate_series($1::bigint, $2::bigint) AS g`,
      params: [PENDING_OFFSET + from, PENDING_OFFSET + to],
    });
  }
  return chunks;
}

/** Runs `tasks` on `LOADERS` connections to `url`, each set up for bulk work. */
async function onLoaders<T>(url: string, tasks: T[], run: (client: pg.Client, task: T) => Promise<void>): Promise<void> {
  const clients = await Promise.all(
    Array.from({ length: Math.min(LOADERS, tasks.length) }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      // Sizes the index builds: one build per connection, each with its memory for the sort.
      await client.query(`SET maintenance_work_mem = '512MB'; SET max_parallel_maintenance_workers = 0`);
      // No triggers (the step link's deferred FK check queued per row; see the header). Needs a superuser:
      // on a server where the bench is not one, the load queues the checks and is slower, nothing else.
      await client.query('SET session_replication_role = replica').catch(() => undefined);
      return client;
    }),
  );
  try {
    const free = [...clients];
    await runInFlight(tasks.length, clients.length, async (index) => {
      const client = free.pop()!;
      try {
        await run(client, tasks[index]!);
      } finally {
        free.push(client);
      }
    });
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

/** Drops job_queue's secondary indexes, loads the bulk rows, rebuilds the indexes; returns the index count rebuilt. */
async function insertBulk(context: BenchContext, url: string, sizes: ClaimLatencySizes): Promise<number> {
  const indexes = await withClient(url, async (client) => {
    // Indexes no constraint uses (not the primary key, not the unique index the step link's foreign key references).
    const { rows } = await client.query<{ name: string; def: string }>(
      `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
         FROM pg_index i
        WHERE i.indrelid = 'runledger.job_queue'::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
        ORDER BY 1`,
    );
    for (const { name } of rows) await client.query(`DROP INDEX ${name}`);
    return rows;
  });
  let started = performance.now();
  await onLoaders(url, chunkStatements(sizes), async (client, chunk) => {
    await client.query(chunk.sql, chunk.params);
    context.log(`  ${chunk.label}`);
  });
  context.log(
    `  ${(sizes.finished + sizes.otherPending).toLocaleString('en-US')} rows in ${((performance.now() - started) / 1000).toFixed(0)} s; rebuilding ${indexes.length} indexes`,
  );
  started = performance.now();
  await onLoaders(url, indexes, async (client, index) => {
    await client.query(index.def);
  });
  context.log(`  indexes rebuilt in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return indexes.length;
}

/** Autovacuum off, the bulk rows (big table only), the claimed type's jobs, VACUUM ANALYZE, CHECKPOINT; returns the seconds it took. */
async function setupTable(context: BenchContext, url: string, table: 'empty' | 'big', sizes: ClaimLatencySizes): Promise<number> {
  const setupStarted = performance.now();
  await withClient(url, (client) => client.query('ALTER TABLE runledger.job_queue SET (autovacuum_enabled = false)'));
  if (table === 'big') await insertBulk(context, url, sizes);
  const claimed = (sizes.samples + WARMUP_CLAIMS) * sizes.limit;
  await withCountingPrisma(url, 2, async ({ prisma }) => {
    for (let done = 0; done < claimed; done += 1_000) {
      const n = Math.min(1_000, claimed - done);
      await enqueueJobs(
        prisma,
        Array.from({ length: n }, (_, i) => ({ jobType: CLAIMED_TYPE, payload: { n: done + i } })),
      );
    }
  });
  await withClient(url, async (client) => {
    await client.query('VACUUM (ANALYZE) runledger.job_queue');
    // Write the load's dirty pages now, not in a spread checkpoint under the timed claims (needs
    // superuser or pg_checkpoint; without it the claims share the disk with that checkpoint).
    await client.query('CHECKPOINT').catch(() => undefined);
  });
  return (performance.now() - setupStarted) / 1000;
}

interface ClaimPlans {
  generic: number;
  custom: number;
}

/**
 * The claim statement's plan counts on the session that ran it: a statement
 * the plan cache keeps re-planning (custom plans) pays its planning on every
 * call, which a bigger table can tip (the generic plan's estimate grows with
 * the statistics), so the table reports it beside the times.
 */
async function claimPlans(prisma: CountingPrisma['prisma']): Promise<ClaimPlans | null> {
  try {
    const rows = await prisma.$queryRawUnsafe<{ generic: bigint | number; custom: bigint | number }[]>(
      `SELECT coalesce(sum(generic_plans), 0) AS generic, coalesce(sum(custom_plans), 0) AS custom
         FROM pg_prepared_statements WHERE statement LIKE '%UPDATE%' AND statement LIKE '%LEASED%'`,
    );
    return { generic: Number(rows[0]?.generic ?? 0), custom: Number(rows[0]?.custom ?? 0) };
  } catch {
    return null; // generic_plans / custom_plans need PostgreSQL 14+
  }
}

/**
 * Times the claims on both tables in interleaved rounds of ROUND claims (the
 * table that goes first alternates), so a change in machine load during the
 * run weighs on both alike: on a shared machine the load moves more between
 * two back-to-back measurements than the table size moves the claim.
 */
async function measureInterleaved(
  urls: Record<'empty' | 'big', string>,
  sizes: ClaimLatencySizes,
): Promise<{ times: Record<'empty' | 'big', number[]>; plans: Record<'empty' | 'big', ClaimPlans | null> }> {
  // One connection each: the claims are sequential, and the plan counts are per session.
  return withCountingPrisma(urls.empty, 1, async (empty) =>
    withCountingPrisma(urls.big, 1, async (big) => {
      const clients = { empty: empty.prisma, big: big.prisma };
      const times: Record<'empty' | 'big', number[]> = { empty: [], big: [] };
      const claim = async (table: 'empty' | 'big', timed: boolean): Promise<void> => {
        const started = performance.now();
        const jobs = await claimJobs(clients[table], { workerId: 'bench-claim', jobTypes: [CLAIMED_TYPE], limit: sizes.limit, leaseSeconds: 600 });
        if (timed) times[table].push(performance.now() - started);
        if (jobs.length !== sizes.limit) throw new Error(`claim latency (${table} table): claimed ${jobs.length}, expected ${sizes.limit}`);
      };
      for (let i = 0; i < WARMUP_CLAIMS; i += 1) for (const table of ['empty', 'big'] as const) await claim(table, false);
      for (let done = 0, round = 0; done < sizes.samples; done += ROUND, round += 1) {
        const order = round % 2 === 0 ? (['empty', 'big'] as const) : (['big', 'empty'] as const);
        for (const table of order) for (let i = 0; i < Math.min(ROUND, sizes.samples - done); i += 1) await claim(table, true);
      }
      return { times, plans: { empty: await claimPlans(empty.prisma), big: await claimPlans(big.prisma) } };
    }),
  );
}

export function claimLatencyWorkload(sizes: ClaimLatencySizes, skip = false): Workload {
  return {
    key: 'claim_latency',
    async run(context, systems): Promise<TableResult[]> {
      const system = systems.find((s) => s.key === 'runledger');
      const measures: TableMeasure[] = [];
      // The big database's further checks (dashboard reads, metrics, claim plans, purge under load): bench/big-history/checks.ts.
      const extra: TableResult[] = [];
      const skipBigHistory = ['1', 'true', 'yes'].includes(process.env.BENCH_SKIP_BIG_HISTORY ?? '');
      const fmtN = (n: number) => n.toLocaleString('en-US');
      if (skip) context.log('claim_latency: skipped (BENCH_SKIP_BIG_CLAIM=1)');
      if (system && !skip) {
        // Both databases at once (the empty one under a suffixed name), so their claims can interleave.
        const measured = await context.withDatabase(
          system,
          async (emptyUrl, emptyDatabase) =>
            context.withDatabase(
              system,
              async (bigUrl, bigDatabase) => {
                for (const database of [emptyDatabase, bigDatabase]) await context.admin.query(`ALTER DATABASE "${database}" SET synchronous_commit = off`);
                context.log('claim_latency: empty table');
                const emptySetup = await setupTable(context, emptyUrl, 'empty', sizes);
                context.log('claim_latency: big table');
                const bigSetup = await setupTable(context, bigUrl, 'big', sizes);
                context.log(`claim_latency: ${sizes.samples} claims per table, interleaved in rounds of ${ROUND}`);
                const { times, plans } = await measureInterleaved({ empty: emptyUrl, big: bigUrl }, sizes);
                if (!skipBigHistory) {
                  const label = `${fmtN(sizes.finished)} finished + ${fmtN(sizes.otherPending)} other pending`;
                  const purge = Math.min(BIG_HISTORY_PURGE, Math.floor(sizes.finished / 10));
                  extra.push(
                    ...(await bigHistoryChecks(context, { empty: emptyUrl, big: bigUrl }, { purge, claimedType: CLAIMED_TYPE, limit: sizes.limit }, label)),
                  );
                }
                return [
                  { table: 'empty' as const, setupSeconds: emptySetup, times: times.empty, plans: plans.empty },
                  { table: 'big' as const, setupSeconds: bigSetup, times: times.big, plans: plans.big },
                ];
              },
              'big',
            ),
          'empty',
        );
        for (const { table, setupSeconds, times, plans } of measured) {
          const measure: TableMeasure = {
            table,
            setupSeconds,
            p50Ms: percentile(times, 50),
            p95Ms: percentile(times, 95),
            maxMs: Math.max(...times),
            samples: times.length,
            plans,
          };
          const planText = plans ? `, claim plans ${plans.generic} generic / ${plans.custom} custom` : '';
          context.log(`  ${table}: p50 ${measure.p50Ms.toFixed(2)} ms, p95 ${measure.p95Ms.toFixed(2)} ms (setup ${setupSeconds.toFixed(0)} s${planText})`);
          measures.push(measure);
        }
      }
      const empty = measures.find((m) => m.table === 'empty');
      const big = measures.find((m) => m.table === 'big');
      const ratio = empty && big ? big.p50Ms / empty.p50Ms : null;
      const ratioP95 = empty && big ? big.p95Ms / empty.p95Ms : null;
      const result: TableResult = {
        kind: 'table',
        key: 'claim_latency',
        title: `claim latency: claimJobs(limit ${sizes.limit}, one type) with ${fmtN(sizes.finished)} finished rows + ${fmtN(sizes.otherPending)} pending of other types vs an empty table`,
        size: `${fmtN(sizes.finished)} finished, ${fmtN(sizes.otherPending)} other pending, ${sizes.samples} timed claims per table`,
        notes: [
          'both databases run with synchronous_commit off, so the figure is the claim statement, not the WAL flush of its commit',
          `the two tables' claims are interleaved in rounds of ${ROUND}, so load changes on a shared machine weigh on both alike`,
          "the big table's setup time is the bulk load (set-based, indexes rebuilt after) plus the claimed type's enqueue and VACUUM ANALYZE",
          // The last note is the headline's cell for this workload.
          ...(skip
            ? ['skipped (BENCH_SKIP_BIG_CLAIM=1)']
            : ratio === null || ratioP95 === null
              ? []
              : [`p50 big / empty = ${ratio.toFixed(2)}x (target <= 1.5x: ${ratio <= 1.5 ? 'met' : 'missed'}); p95 ${ratioP95.toFixed(2)}x`]),
        ],
        headers: ['table', 'p50 ms', 'p95 ms', 'max ms', 'claims', 'claim plans generic / custom', 'setup s'],
        rows: measures.map((m) => [
          m.table,
          m.p50Ms.toFixed(2),
          m.p95Ms.toFixed(2),
          m.maxMs.toFixed(2),
          m.samples,
          m.plans ? `${m.plans.generic} / ${m.plans.custom}` : 'n/a',
          m.setupSeconds.toFixed(1),
        ]),
        data: { sizes, skipped: skip, measures, ratioP50: ratio, ratioP95 },
      };
      return [result, ...extra];
    },
  };
}
