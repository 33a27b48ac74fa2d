// Probe: what a deep backlog of one full concurrency key costs a claim. Tenant A enqueues N jobs under key
// `a` (limit 5, all leased), tenant B a few jobs under key `b`, all of one job type, A's first: each claim
// of B's jobs reads past A's backlog in the claim index (the snapshot test skips them one by one).
// Usage: PROBE_URL=<a migrated database> [PROBE_BACKLOG=100000] npx tsx --tsconfig tsconfig.json bench/probes/concurrency-backlog.ts
import { createPrismaClient } from '../../src/client/connect.js';
import { claimJobs, completeJobs, enqueueJobs } from '../../src/index.js';

const url = process.env.PROBE_URL;
if (!url) throw new Error('PROBE_URL: a migrated database');
const prisma = createPrismaClient(url, { max: 4 });
const N = Number(process.env.PROBE_BACKLOG ?? 100_000);
const type = `probe.backlog.${Date.now()}`;
const keyA = `${type}:a`;
for (let i = 0; i < N; i += 5000)
  await enqueueJobs(
    prisma,
    Array.from({ length: Math.min(5000, N - i) }, (_, k) => ({ jobType: type, payload: { n: i + k }, concurrency: { key: keyA, limit: 5 } })),
    { notify: false },
  );
const held = await claimJobs(prisma, { workerId: 'a', jobTypes: [type], limit: 5, leaseSeconds: 600 });
const times: number[] = [];
for (let round = 0; round < 20; round += 1) {
  await enqueueJobs(prisma, [{ jobType: type, payload: { b: round }, concurrency: { key: `${type}:b`, limit: 5 } }], { notify: false });
  const t0 = performance.now();
  const jobs = await claimJobs(prisma, { workerId: 'b', jobTypes: [type], limit: 10, leaseSeconds: 60 });
  times.push(performance.now() - t0);
  if (jobs.length !== 1) throw new Error(`expected B's one job, got ${jobs.length}`);
  await completeJobs(
    prisma,
    jobs.map((j) => ({ ...j })),
  );
}
times.sort((x, y) => x - y);
console.log(`backlog ${N} of a full key ahead (held ${held.length}): claim of B's job p50 ${times[10]!.toFixed(1)} ms, max ${times[19]!.toFixed(1)} ms`);
await prisma.$disconnect();
