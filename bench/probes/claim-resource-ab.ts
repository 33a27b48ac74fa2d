// Probe: the claim statement with and without the execution-resource condition, interleaved on one
// connection, on a table with no resource jobs: what the condition costs a claim that never uses it.
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { migrate, claimJobs, enqueueJobs } from '../../src/index.js';

// Usage: npx tsx bench/probes/claim-resource-ab.ts   (env: PROBE_SERVER_URL, ROUNDS, GENERIC=1 forces reused plans, EXPLAIN=1)
const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
const admin = new pg.Client({ connectionString: `${base}postgres` });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS perf3 WITH (FORCE)');
await admin.query('CREATE DATABASE perf3');
const url = `${base}perf3`;
await migrate({ connectionString: url });
const pool = new pg.Pool({ connectionString: url, max: 1 });
let captured: { text: string; values: unknown[] } | undefined;
pool.on('connect', (client) => {
  // biome-ignore lint/suspicious/noExplicitAny: pg's query() is overloaded; the wrapper passes any form through
  const query = client.query.bind(client) as (...args: any[]) => any;
  // biome-ignore lint/suspicious/noExplicitAny: the probe wraps pg's overloaded query() whatever its arguments
  (client as any).query = (...args: any[]) => {
    const cfg = args[0];
    if (typeof cfg === 'object' && cfg?.text?.includes('WITH fair_groups AS')) captured ??= { text: cfg.text, values: cfg.values };
    return query(...args);
  };
});
const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
for (let i = 0; i < 20; i++)
  await enqueueJobs(prisma as never, Array.from({ length: 1000 }, (_, k) => ({ jobType: 'ab', payload: { k } })) as never, { notify: false });
const c = new pg.Client({ connectionString: url });
await c.connect();
await c.query('ANALYZE runledger.job_queue');
if (process.env.GENERIC) await c.query('SET plan_cache_mode = force_generic_plan');
await prisma
  .$transaction(async (tx) => {
    await claimJobs(tx as never, { workerId: 'w', jobTypes: ['ab'], limit: 10, leaseSeconds: 60, markRunning: true });
    throw new Error('rollback');
  })
  .catch(() => undefined);
const withCond = captured!.text;
const condition = 'AND (jq.resource_key IS NULL OR runledger.resource_claimable(jq.resource_key, jq.id))';
if (!withCond.includes(condition)) throw new Error('condition not found');
const without = withCond.replace(condition, '');
const times: Record<string, number[]> = { with: [], without: [] };
for (let round = 0; round < Number(process.env.ROUNDS ?? 300); round++) {
  for (const [name, text] of round % 2
    ? ([
        ['with', withCond],
        ['without', without],
      ] as const)
    : ([
        ['without', without],
        ['with', withCond],
      ] as const)) {
    await c.query('BEGIN');
    const t = performance.now();
    const r = await c.query({ name: `claim_${name}`, text, values: captured!.values });
    times[name]!.push(performance.now() - t);
    if (r.rowCount !== 10) throw new Error(`claimed ${r.rowCount}`);
    await c.query('ROLLBACK');
  }
}
if (process.env.EXPLAIN)
  for (const text of [withCond, without]) {
    await c.query('BEGIN');
    const r = await c.query({ text: `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, values: captured!.values });
    // biome-ignore lint/suspicious/noExplicitAny: an EXPLAIN row, printed as PostgreSQL returns it
    console.log(r.rows.map((x: any) => x['QUERY PLAN']).join('\n'));
    await c.query('ROLLBACK');
  }
console.log((await c.query('SELECT name, generic_plans, custom_plans FROM pg_prepared_statements')).rows);
const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!.toFixed(3);
for (const [name, xs] of Object.entries(times)) console.log(`${name}: p50 ${p(xs, 0.5)} ms, p95 ${p(xs, 0.95)} ms (n=${xs.length})`);
await c.end();
await prisma.$disconnect();
await pool.end();
await admin.end();
