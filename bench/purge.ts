/**
 * Retention bench (opt-in: `npm run bench:purge`, not part of `npm run bench`):
 * claim latency on a table holding F finished jobs, before and after
 * `purgeFinished` deletes them, and the purge's throughput.
 *
 *   1. seed F SUCCEEDED direct jobs finished two days ago (one event each) and
 *      P pending jobs of the claimed type, set-based (INSERT ... SELECT
 *      generate_series), then VACUUM ANALYZE (the steady state autovacuum
 *      keeps);
 *   2. time S sequential claimJobs(limit L, the claimed type): "before";
 *   3. purgeFinished({ olderThan: 1 day ago, batchSize B }): rows/s;
 *   4. time S claims again at once ("after purge", dead tuples still there),
 *      then after VACUUM ("after vacuum").
 *
 * Sizes: BENCH_PURGE_FINISHED (default 1,000,000), BENCH_PURGE_SAMPLES (200),
 * BENCH_PURGE_CLAIM_LIMIT (10), BENCH_PURGE_BATCH (500). The database:
 * DATABASE_URL's server if set, else the embedded PostgreSQL (a fresh
 * database either way, dropped at the end). Prints a table and, with
 * BENCH_PURGE_JSON=1, the figures as JSON.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { claimJobs, purgeFinished } from '../src/index.js';
import { createPrismaClient } from '../src/client/connect.js';
import { createTestDatabase, stopTestServer } from '../src/testing/index.js';
import { percentile } from './stats.js';

const intEnv = (name: string, fallback: number) => {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
  return n;
};

const FINISHED = intEnv('BENCH_PURGE_FINISHED', 1_000_000);
const SAMPLES = intEnv('BENCH_PURGE_SAMPLES', 200);
const CLAIM_LIMIT = intEnv('BENCH_PURGE_CLAIM_LIMIT', 10);
const BATCH = intEnv('BENCH_PURGE_BATCH', 500);
const CLAIMED_TYPE = 'bench_purge_claim';
const WARMUP = 5;
/** Rows per seeding statement, so no single statement holds minutes of WAL. */
const CHUNK = 250_000;

interface ClaimFigures {
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

async function seed(client: pg.Client): Promise<void> {
  for (let done = 0; done < FINISHED; done += CHUNK) {
    const n = Math.min(CHUNK, FINISHED - done);
    await client.query(
      `WITH jobs AS (
         INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, created_at, next_run_at, started_at, finished_at, output)
         SELECT gen_random_uuid(), 'history_' || (g % 10), jsonb_build_object('n', g), 'SUCCEEDED', 1,
                now() - interval '2 days', now() - interval '2 days', now() - interval '2 days', now() - interval '2 days' + make_interval(secs => g % 3600), '{}'::jsonb
           FROM generate_series(1, $1::int) AS g
         RETURNING id)
       INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt)
       SELECT gen_random_uuid(), id, 'SUCCEEDED', 1, 1 FROM jobs`,
      [n],
    );
    process.stderr.write(`  seeded ${done + n}/${FINISHED} finished jobs\n`);
  }
  const pending = (WARMUP + SAMPLES) * CLAIM_LIMIT * 3;
  await client.query(`INSERT INTO runledger.job_queue (id, job_type, payload) SELECT gen_random_uuid(), $1, '{}'::jsonb FROM generate_series(1, $2::int)`, [
    CLAIMED_TYPE,
    pending,
  ]);
  await client.query('VACUUM ANALYZE runledger.job_queue');
  await client.query('VACUUM ANALYZE runledger.job_events');
}

async function timeClaims(prisma: ReturnType<typeof createPrismaClient>): Promise<ClaimFigures> {
  const timings: number[] = [];
  for (let i = 0; i < WARMUP + SAMPLES; i += 1) {
    const started = performance.now();
    const claimed = await claimJobs(prisma, { workerId: 'bench', jobTypes: [CLAIMED_TYPE], limit: CLAIM_LIMIT, leaseSeconds: 300 });
    const elapsed = performance.now() - started;
    if (claimed.length !== CLAIM_LIMIT) throw new Error(`claimed ${claimed.length}, expected ${CLAIM_LIMIT}`);
    if (i >= WARMUP) timings.push(elapsed);
  }
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return { p50Ms: round(percentile(timings, 50)), p95Ms: round(percentile(timings, 95)), maxMs: round(Math.max(...timings)) };
}

async function main(): Promise<void> {
  const database = await createTestDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const prisma = createPrismaClient(database.url, { max: 2 });
  try {
    const seedStarted = performance.now();
    await seed(client);
    const seedSeconds = (performance.now() - seedStarted) / 1000;

    const before = await timeClaims(prisma);
    const purgeStarted = performance.now();
    const purged = await purgeFinished(prisma, { olderThan: new Date(Date.now() - 86_400_000), batchSize: BATCH });
    const purgeSeconds = (performance.now() - purgeStarted) / 1000;
    if (purged.jobs !== FINISHED) throw new Error(`purged ${purged.jobs} jobs, expected ${FINISHED}`);
    const afterPurge = await timeClaims(prisma);
    await client.query('VACUUM ANALYZE runledger.job_queue');
    const afterVacuum = await timeClaims(prisma);

    const figures = {
      finished: FINISHED,
      samples: SAMPLES,
      claimLimit: CLAIM_LIMIT,
      batchSize: BATCH,
      seedSeconds: Math.round(seedSeconds * 10) / 10,
      purge: {
        jobs: purged.jobs,
        batches: purged.batches,
        seconds: Math.round(purgeSeconds * 100) / 100,
        rowsPerSecond: Math.round(purged.jobs / purgeSeconds),
      },
      claim: { before, afterPurge, afterVacuum },
    };
    const row = (name: string, f: ClaimFigures) => `| ${name} | ${f.p50Ms} | ${f.p95Ms} | ${f.maxMs} |`;
    process.stdout.write(
      [
        `Purge bench: ${FINISHED} finished jobs (1 event each), claims of ${CLAIM_LIMIT}, ${SAMPLES} samples, purge batch ${BATCH}`,
        `purge: ${purged.jobs} jobs in ${figures.purge.seconds} s over ${purged.batches} batches = ${figures.purge.rowsPerSecond} jobs/s`,
        '',
        '| claim latency (ms) | p50 | p95 | max |',
        '| --- | ---: | ---: | ---: |',
        row(`before purge (${FINISHED} finished rows)`, before),
        row('after purge (dead tuples not yet vacuumed)', afterPurge),
        row('after purge + VACUUM', afterVacuum),
        '',
      ].join('\n'),
    );
    if (process.env.BENCH_PURGE_JSON === '1') process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  } finally {
    await prisma.$disconnect();
    await client.end();
    await database.drop();
    await stopTestServer();
  }
}

await main();
