// Probe: one hand loop draining 20,000 direct jobs by claimJobs(limit) + completeJobs, sequentially, with
// the wall time split between claim and completion and the Node CPU per job: which side of a drain is slow.
// Add auto_explain through the URL's options to see the plans, e.g.
//   PROBE_URL='postgresql://postgres@127.0.0.1:5432/probe?options=-c%20session_preload_libraries%3Dauto_explain%20-c%20auto_explain.log_min_duration%3D8%20-c%20auto_explain.log_analyze%3Don'
// Usage: PROBE_URL=<a migrated database> [PROBE_LIMIT=250] npx tsx --tsconfig tsconfig.json bench/probes/drain-split.ts
import { createPrismaClient } from '../../src/client/connect.js';
import { claimJobs, completeJobs, enqueueJobs } from '../../src/index.js';

const url = process.env.PROBE_URL;
if (!url) throw new Error('PROBE_URL: a migrated database');
const prisma = createPrismaClient(url, { max: 4 });
const N = 20_000;
const LIMIT = Number(process.env.PROBE_LIMIT ?? 250);
let claimMs = 0;
let completeMs = 0;

// PROBE_ANALYZE=1: fresh statistics after each seed, as autovacuum gives a live database (the machine's
// PostgreSQL 15 runs without it, and a never-analyzed job_queue can get another claim plan).
async function seedAndAnalyze(): Promise<void> {
  await seed();
  if (process.env.PROBE_ANALYZE === '1') await prisma.$executeRawUnsafe('ANALYZE runledger.job_queue');
}

async function seed(): Promise<void> {
  for (let i = 0; i < N; i += 1000)
    await enqueueJobs(
      prisma,
      Array.from({ length: 1000 }, (_, k) => ({ jobType: 'probe.drain', payload: { n: i + k } })),
    );
}

async function drain(): Promise<number> {
  let n = 0;
  for (;;) {
    const a = performance.now();
    const jobs = await claimJobs(prisma, { workerId: 'probe', jobTypes: ['probe.drain'], limit: LIMIT, leaseSeconds: 60, markRunning: true });
    const b = performance.now();
    claimMs += b - a;
    if (jobs.length === 0) return n;
    await completeJobs(
      prisma,
      jobs.map((job) => ({ ...job, output: null })),
    );
    completeMs += performance.now() - b;
    n += jobs.length;
  }
}

await seedAndAnalyze();
await drain(); // warm-up
for (let round = 0; round < 2; round += 1) {
  await seedAndAnalyze();
  claimMs = 0;
  completeMs = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const n = await drain();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const us = (ms: number) => ((ms * 1000) / n).toFixed(1);
  console.log(
    `drained ${n} (limit ${LIMIT}): ${Math.round((n / wall) * 1000)} jobs/s; per job: wall ${us(wall)} us ` +
      `(claim ${us(claimMs)}, completion ${us(completeMs)}), Node CPU ${((cpu.user + cpu.system) / n).toFixed(1)} us`,
  );
}
await prisma.$disconnect();
