// Probe: a durable function of 3 sequential steps against runledger's own 3-step DAG chain, same worker
// (concurrency 10, LISTEN/NOTIFY wake-ups) on the same pool, runs enqueued one by one. Rounds alternate
// function / chain so the machine's drift hits both; prints each round's runs/s (enqueue of the first run to
// the last run terminal) and the statements the worker sent per run (counted at the driver, BEGIN and COMMIT
// included). runledger only; the peers' figures are the bench's (npm run bench).
// Usage: npx tsx bench/probes/function-vs-chain.ts   (env: PROBE_SERVER_URL, RUNS per round (default 500),
// ROUNDS (default 4), CONCURRENCY (default 10))
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { z } from 'zod';
import { preparedStatementName } from '../../src/client/connect.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { countStatements } from '../../test/harness/counting-client.js';
import { createWorker, defineFunction, defineJob, enqueueWorkflowRun, migrate, silentLogger, workflow } from '../../src/index.js';

const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
const database = `fn_probe_${process.pid}`;
const admin = new pg.Client({ connectionString: `${base}postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = `${base}${database}`;
const RUNS = Number(process.env.RUNS ?? 500);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 10);

try {
  await migrate({ connectionString: url });
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY + 6 });
  pool.on('error', () => undefined); // DROP DATABASE ... WITH (FORCE) ends idle connections at the end
  const statements = countStatements(pool);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
  const payload = z.object({ n: z.number() });
  const threeSteps = defineFunction('probe.fn3', payload, async (input, ctx) => {
    const a = await ctx.step('a', () => input.n + 1);
    const b = await ctx.step('b', () => a + 1);
    return ctx.step('c', () => b + 1);
  });
  const step = (name: string) => defineJob(name, payload, (input) => input.n + 1);
  const [a, b, c] = [step('probe.a'), step('probe.b'), step('probe.c')];
  const chain = (n: number) =>
    workflow('probe.chain3').job('a', a, { n }).job('b', b, { n }).afterSuccess('b', ['a']).job('c', c, { n }).afterSuccess('c', ['b']).resultStep('c').build();
  // The worker runs on its own client: the enqueues' statements are not the worker's.
  const enqueuer = new pg.Pool({ connectionString: url, max: 2 });
  enqueuer.on('error', () => undefined);
  const enqueueDb = new PrismaClient({ adapter: new PrismaPg(enqueuer, { statementNameGenerator: preparedStatementName }) });
  const worker = createWorker({
    db: prisma,
    listenConnectionString: url,
    handlers: [threeSteps, a, b, c],
    concurrency: CONCURRENCY,
    logger: silentLogger,
    reaper: false,
  });
  await worker.start();

  const terminal = async (type: string): Promise<number> => {
    const [row] = await enqueueDb.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.workflow_runs WHERE workflow_type = ${type} AND status = 'SUCCEEDED'`;
    return row!.n;
  };
  const kinds = {
    function: { type: 'probe.fn3', start: (n: number) => enqueueWorkflowRun(enqueueDb, threeSteps.run({ n })) },
    chain: { type: 'probe.chain3', start: (n: number) => enqueueWorkflowRun(enqueueDb, chain(n)) },
  } as const;
  const rates: Record<keyof typeof kinds, number[]> = { function: [], chain: [] };
  const perRun: Record<keyof typeof kinds, number[]> = { function: [], chain: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of round % 2 ? (['chain', 'function'] as const) : (['function', 'chain'] as const)) {
      const done = await terminal(kinds[kind].type);
      const before = statements();
      const t = performance.now();
      for (let i = 0; i < RUNS; i++) await kinds[kind].start(i);
      while ((await terminal(kinds[kind].type)) < done + RUNS) await new Promise((resolve) => setTimeout(resolve, 5));
      rates[kind].push(RUNS / ((performance.now() - t) / 1000));
      perRun[kind].push((statements() - before) / RUNS);
    }
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)]!;
  for (const kind of ['function', 'chain'] as const) {
    console.log(
      `${kind}: runs/s per round ${rates[kind].map((r) => r.toFixed(0)).join(', ')} (median ${median(rates[kind]).toFixed(0)}); ` +
        `worker statements per run ${median(perRun[kind]).toFixed(1)}`,
    );
  }
  console.log(`ratio function / chain (medians): ${(median(rates.function) / median(rates.chain)).toFixed(2)}`);
  await worker.stop();
  await prisma.$disconnect();
  await enqueueDb.$disconnect();
  await pool.end();
  await enqueuer.end();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
}
