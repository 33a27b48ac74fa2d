// Probe: createWorker draining PROBE_JOBS (40,000) no-op jobs, its statements through the Prisma client or,
// with PROBE_POOL=1, through the pg Pool under it (`db: pool`); prints jobs/s and the worker's Node CPU per job.
// PROBE_PROFILE=1 writes a CPU profile of the drain alone to /tmp/worker-drain.cpuprofile; PROBE_HEAP=1 a sampling
// heap profile (what the drain allocated, by function) to /tmp/worker-drain.heapprofile. Measures dist/
// (`npm run build` first), as the bench does. Also prints the share of job_queue's updates that were HOT
// (pg_stat_user_tables, read once the worker's backends have exited and so flushed their counters).
// Usage: PROBE_URL=<a migrated database> [PROBE_POOL=1] [PROBE_CONCURRENCY=10] npx tsx bench/probes/worker-drain.ts
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { z } from 'zod';
import { PrismaClient, runledger } from '../runledger-package.js';

const { createWorker, defineJob, enqueueJobs, preparedStatementName, silentLogger } = runledger;
const url = process.env.PROBE_URL;
if (!url) throw new Error('PROBE_URL: a migrated database');
const jobs = Number(process.env.PROBE_JOBS ?? 40_000);
const concurrency = Number(process.env.PROBE_CONCURRENCY ?? 10);
const pool = new pg.Pool({ connectionString: url, max: concurrency + 4 });
const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });

await prisma.$executeRawUnsafe('TRUNCATE runledger.job_queue CASCADE');
await prisma.$executeRawUnsafe('VACUUM ANALYZE runledger.job_queue');
for (let i = 0; i < jobs; i += 1000) {
  await enqueueJobs(
    prisma,
    Array.from({ length: Math.min(1000, jobs - i) }, (_, k) => ({ jobType: 'probe.drain', payload: { n: i + k } })),
  );
}
// A fresh session's view of the counters; the enqueue above wrote inserts only, so no update is unflushed.
async function updates(): Promise<{ upd: number; hot: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ upd: string; hot: string }>(
    `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relid = 'runledger.job_queue'::regclass`,
  );
  await client.end();
  return { upd: Number(rows[0]!.upd), hot: Number(rows[0]!.hot) };
}
const before = await updates();
const session = new Session();
session.connect();
if (process.env.PROBE_PROFILE === '1') {
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
if (process.env.PROBE_HEAP === '1') {
  await session.post('HeapProfiler.enable');
  // Every 4 KiB allocated on average, objects collected since kept in the counts (allocation, not retention).
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
}
let done = 0;
let finish!: () => void;
const finished = new Promise<void>((resolve) => (finish = resolve));
const worker = createWorker({
  db: process.env.PROBE_POOL === '1' ? pool : prisma,
  listenConnectionString: url,
  handlers: [defineJob('probe.drain', z.unknown(), async () => undefined)],
  concurrency,
  logger: silentLogger,
  reaper: false,
});
worker.on('job:success', () => {
  done += 1;
  if (done === jobs) finish();
});
const started = performance.now();
const cpu = process.cpuUsage();
await worker.start();
await finished;
const wallMs = performance.now() - started;
const used = process.cpuUsage(cpu);
if (process.env.PROBE_PROFILE === '1') {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync('/tmp/worker-drain.cpuprofile', JSON.stringify(profile));
}
if (process.env.PROBE_HEAP === '1') {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  writeFileSync('/tmp/worker-drain.heapprofile', JSON.stringify(profile));
}
console.log(
  `${process.env.PROBE_POOL === '1' ? 'db: pg Pool' : 'db: prisma'}, c${concurrency}: ${Math.round((jobs / wallMs) * 1000)} jobs/s, ` +
    `Node CPU ${((used.user + used.system) / jobs).toFixed(1)} us/job`,
);
await worker.stop({ drainMs: 1_000 });
await prisma.$disconnect();
await pool.end().catch(() => undefined);
await new Promise((resolve) => setTimeout(resolve, 1_500));
const after = await updates();
const upd = after.upd - before.upd;
const hot = after.hot - before.hot;
console.log(`job_queue: ${upd} updates, ${hot} HOT (${((100 * hot) / Math.max(upd, 1)).toFixed(1)}%; ${((100 * hot) / jobs).toFixed(1)}% of completions)`);
