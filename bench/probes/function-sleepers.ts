// Probe: 10,000 sleeping durable functions (issue 37). SLEEPERS functions are started (enqueueWorkflowRuns, 500
// per call), each `ctx.sleepUntil(its wake time)` then one step; the wake times are spread evenly over WINDOW_MS
// starting LEAD_MS after the first start. One worker of CONCURRENCY handler slots (pollIntervalMs POLL_MS) runs
// them. Once every function sleeps, it measures for up to QUIET_MS:
//   - slots: LEASED jobs (must be 0), and the pickup of PLAIN plain jobs enqueued one at a time meanwhile;
//   - polling: statements the worker's pool sent per second (counted at the driver) and the database's
//     transactions per second (pg_stat_database xact_commit + xact_rollback delta over the time between two reads
//     11 s apart from any other activity, the probe's own reads included),
//     against the same worker idle with no sleeper (IDLE_MS before the starts);
// then the wake-up lateness (the step after the sleep ran - its wake time) p50 / p95 / p99 / max.
// Usage: npx tsx bench/probes/function-sleepers.ts   (env: PROBE_SERVER_URL, SLEEPERS (10000), CONCURRENCY (4),
// POLL_MS (1000), LEAD_MS (default 20 ms per sleeper, at least 20 s), WINDOW_MS (20000), QUIET_MS (15000),
// IDLE_MS (10000), PLAIN (5))
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { z } from 'zod';
import { createPrismaClient } from '../../src/client/connect.js';
import { createWorker, defineFunction, defineJob, enqueueJob, enqueueWorkflowRuns, migrate, silentLogger } from '../../src/index.js';
import { countStatements } from '../../test/harness/counting-client.js';
import { percentile } from '../stats.js';

const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
const database = `fnsleep_probe_${process.pid}`;
const SLEEPERS = Number(process.env.SLEEPERS ?? 10_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
const POLL_MS = Number(process.env.POLL_MS ?? 1_000);
const LEAD_MS = Number(process.env.LEAD_MS ?? Math.max(20_000, SLEEPERS * 20));
const WINDOW_MS = Number(process.env.WINDOW_MS ?? 20_000);
const QUIET_MS = Number(process.env.QUIET_MS ?? 15_000);
const IDLE_MS = Number(process.env.IDLE_MS ?? 10_000);
const PLAIN = Number(process.env.PLAIN ?? 5);
const log = (line: string) => console.log(`[probe ${new Date().toISOString().slice(11, 19)}] ${line}`);
const SETTLE_MS = 11_000;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const admin = new pg.Client({ connectionString: `${base}postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = `${base}${database}`;
try {
  await migrate({ connectionString: url });
  const reader = new pg.Client({ connectionString: url });
  await reader.connect();
  const one = async (sql: string, params: unknown[] = []) => Number((await reader.query<{ n: string }>(sql, params)).rows[0]!.n);
  const xacts = () => one('SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()');

  const workerPool = new pg.Pool({ connectionString: url, max: CONCURRENCY + 4 });
  const sent = countStatements(workerPool);
  const { PrismaPg } = await import('@prisma/adapter-pg');
  const { PrismaClient } = await import('../../src/generated/prisma/client.js');
  const { preparedStatementName } = await import('../../src/client/connect.js');
  const workerDb = new PrismaClient({ adapter: new PrismaPg(workerPool, { statementNameGenerator: preparedStatementName }) });
  const starter = createPrismaClient(url, { max: 2 });

  const woke = new Map<number, number>();
  const sleeper = defineFunction('probe.sleeper', z.object({ n: z.number(), wakeAt: z.number() }), async ({ n, wakeAt }, ctx) => {
    await ctx.sleepUntil(new Date(wakeAt));
    await ctx.step('woke', () => void woke.set(n, Date.now()));
    return n;
  });
  const picked = new Map<number, number>();
  const plain = defineJob('probe.plain', z.object({ i: z.number() }), ({ i }) => void picked.set(i, performance.now()));
  const worker = createWorker({
    db: workerDb,
    listenConnectionString: url,
    handlers: [sleeper, plain],
    concurrency: CONCURRENCY,
    pollIntervalMs: POLL_MS,
    logger: silentLogger,
  });
  await worker.start();

  // The same worker idle, nothing to run: the baseline of its own polling.
  const rate = async (ms: number) => {
    const [s0, x0, t0] = [sent(), await xacts(), performance.now()];
    await pause(ms);
    const statements = (sent() - s0) / (ms / 1000);
    // pg_stat_database: an idle backend flushes its counts up to 10 s late (PostgreSQL 15's PGSTAT_IDLE_INTERVAL),
    // so the second read waits that long, and the rate is over the time between the two reads.
    await pause(SETTLE_MS);
    const x1 = await xacts();
    return { statements, xacts: (x1 - x0) / ((performance.now() - t0) / 1000), seconds: ms / 1000 };
  };
  await pause(SETTLE_MS); // the migration's and the start-up's counts land first
  log(`worker idle (no sleeper) for ${IDLE_MS} ms`);
  const idle = await rate(IDLE_MS);

  const t0 = Date.now();
  const wakeAt = (n: number) => t0 + LEAD_MS + Math.floor((n * WINDOW_MS) / SLEEPERS);
  for (let at = 0; at < SLEEPERS; at += 500) {
    await enqueueWorkflowRuns(
      starter,
      Array.from({ length: Math.min(500, SLEEPERS - at) }, (_, i) => sleeper.run({ n: at + i, wakeAt: wakeAt(at + i) })),
    );
  }
  const startedMs = Date.now() - t0;
  log(`${SLEEPERS} functions started in ${startedMs} ms; wake times ${LEAD_MS} to ${LEAD_MS + WINDOW_MS} ms after the first start`);
  const asleep = () => one(`SELECT count(*)::text AS n FROM runledger.workflow_steps WHERE execution_kind = 'FUNCTION' AND step_key = '$sleep'`);
  const leased = () => one(`SELECT count(*)::text AS n FROM runledger.job_queue WHERE status = 'LEASED'`);
  while ((await asleep()) < SLEEPERS || (await leased()) > 0) {
    if (Date.now() > t0 + LEAD_MS) break;
    await pause(250);
  }
  const allAsleepMs = Date.now() - t0;
  const sleeping = await asleep();
  log(`${sleeping} sleeping ${allAsleepMs} ms after the first start (${((sleeping / allAsleepMs) * 1000).toFixed(0)} functions put to sleep a second)`);

  // The counts of the transactions that put the functions to sleep are flushed up to 10 s late: let them land.
  await pause(SETTLE_MS);
  const quietMs = Math.min(QUIET_MS, t0 + LEAD_MS - Date.now() - SETTLE_MS - 2_000);
  let quiet: Awaited<ReturnType<typeof rate>> | undefined;
  const pickups: number[] = [];
  let leasedWhileAsleep = -1;
  if (quietMs > 2_000) {
    leasedWhileAsleep = await leased();
    const measuring = rate(quietMs);
    for (let i = 0; i < PLAIN; i++) {
      const sentAt = performance.now();
      await enqueueJob(starter, { jobType: 'probe.plain', payload: { i } });
      while (!picked.has(i) && performance.now() - sentAt < 10_000) await pause(2);
      pickups.push((picked.get(i) ?? Number.NaN) - sentAt);
      await pause(Math.max(0, quietMs / PLAIN - (performance.now() - sentAt)));
    }
    quiet = await measuring;
  } else {
    log('no quiet window before the first wake (raise LEAD_MS): slots and polling not measured');
  }

  const lastWake = t0 + LEAD_MS + WINDOW_MS;
  while (woke.size < SLEEPERS && Date.now() < lastWake + 300_000) await pause(250);
  const lateness = [...woke].map(([n, at]) => at - wakeAt(n));
  const finishedMs = Date.now() - t0;
  await worker.stop({ drainMs: 5_000 });

  const ms = (v: number) => v.toFixed(0);
  console.log(
    [
      `sleepers ${SLEEPERS}, worker concurrency ${CONCURRENCY}, pollIntervalMs ${POLL_MS}; started in ${(startedMs / 1000).toFixed(1)} s, all asleep after ${(allAsleepMs / 1000).toFixed(1)} s`,
      quiet
        ? `while ${sleeping} slept (${quiet.seconds.toFixed(1)} s): LEASED jobs ${leasedWhileAsleep}; plain job pickup ms ${pickups.map(ms).join(', ')}; ` +
          `worker statements/s ${quiet.statements.toFixed(2)} (idle, no sleeper: ${idle.statements.toFixed(2)}); database xacts/s ${quiet.xacts.toFixed(2)} (idle: ${idle.xacts.toFixed(2)})`
        : 'quiet window: not measured',
      `woke ${woke.size} of ${SLEEPERS}; early ${lateness.filter((v) => v < 0).length}; lateness ms p50 ${ms(percentile(lateness, 50))}, p95 ${ms(percentile(lateness, 95))}, p99 ${ms(percentile(lateness, 99))}, max ${ms(Math.max(...lateness))} (poll interval ${POLL_MS}); last woke ${((finishedMs - LEAD_MS - WINDOW_MS) / 1000).toFixed(1)} s after the last wake time`,
    ].join('\n'),
  );
  await workerDb.$disconnect();
  await workerPool.end();
  await starter.$disconnect();
  await reader.end();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
}
