/**
 * Probe (issue 35): one claim's server time with and without concurrency keys, on one database, one client,
 * no contention: 20,000 due jobs of one type spread over 1,000 keys of limit 3, beside 20,000 unkeyed jobs of
 * another type; timed claims of `limit` jobs of each, completed at once, and EXPLAIN (ANALYZE, BUFFERS) of one
 * claim of each. `DATABASE_URL` names the server; a scratch database is created and dropped.
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npx tsx bench/probes/concurrency-claim.ts
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { claimJobs, completeJobs, enqueueJobs, migrate } from '../../src/index.js';
import { createPrismaClient } from '../../src/client/connect.js';
import { claimJobsStatement } from '../../src/queue/statements/claim-jobs.js';

const server = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const JOBS = Number(process.env.PROBE_JOBS ?? 20_000);
const KEYS = Number(process.env.PROBE_KEYS ?? 1_000);
const LIMIT = Number(process.env.PROBE_LIMIT ?? 10);
const CLAIMS = Number(process.env.PROBE_CLAIMS ?? 200);
const name = `ck_probe_${process.pid}`;

const admin = new pg.Client({ connectionString: server });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const u = new URL(server);
u.pathname = `/${name}`;
const url = u.toString();
try {
  await migrate({ connectionString: url });
  const prisma = createPrismaClient(url, { max: 2 });
  for (let start = 0; start < JOBS; start += 1_000) {
    await enqueueJobs(
      prisma,
      Array.from({ length: 1_000 }, (_, i) => ({ jobType: 'plain', payload: { n: start + i } })),
      { notify: false },
    );
    await enqueueJobs(
      prisma,
      Array.from({ length: 1_000 }, (_, i) => ({ jobType: 'keyed', payload: { n: start + i }, concurrency: { key: `k-${(start + i) % KEYS}`, limit: 3 } })),
      { notify: false },
    );
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('VACUUM ANALYZE');
  for (const type of ['plain', 'keyed']) {
    const times: number[] = [];
    let got = 0;
    for (let i = 0; i < CLAIMS; i += 1) {
      const t = performance.now();
      const jobs = await claimJobs(prisma, { workerId: 'probe', jobTypes: [type], limit: LIMIT, leaseSeconds: 60, markRunning: true });
      times.push(performance.now() - t);
      got += jobs.length;
      await completeJobs(
        prisma,
        jobs.map((j) => ({ ...j })),
      );
    }
    times.sort((a, b) => a - b);
    console.log(
      `${type}: ${CLAIMS} claims of ${LIMIT}: ${got} jobs; claim p50 ${times[Math.floor(CLAIMS / 2)]!.toFixed(2)} ms, p90 ${times[Math.floor(CLAIMS * 0.9)]!.toFixed(2)} ms`,
    );
    const statement = claimJobsStatement({ workerId: 'probe', jobTypes: [type], limit: LIMIT, leaseSeconds: 60, markRunning: true, fairAfter: '' });
    await c.query('BEGIN');
    const { rows } = await c.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${statement.text}`, statement.values as unknown[]);
    await c.query('ROLLBACK');
    console.log(rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n'));
  }
  await c.end();
  await prisma.$disconnect();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
