// Probe: pickup of a started durable function against a plain job's (issue 37's target: function p50 <= 1.0x
// the job's). One worker (LISTEN/NOTIFY, a poll of 60 s, so only the wake-up explains a prompt start) runs both;
// ROUNDS rounds alternate which goes first, each enqueue sent alone on an idle worker from a second client:
// enqueueJob of a plain job, and enqueueWorkflowRun of a function run. Pickup: the enqueue call's start to the
// handler's (the body's) first line, in the worker's process. Prints p50/p95/max in ms and the ratio of p50s.
// Usage: npx tsx bench/probes/function-pickup.ts (env: PROBE_SERVER_URL, ROUNDS (default 200))
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { z } from 'zod';
import { preparedStatementName } from '../../src/client/connect.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { percentile } from '../stats.js';
import { createWorker, defineFunction, defineJob, enqueueJob, enqueueWorkflowRun, migrate, silentLogger } from '../../src/index.js';

const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
const database = `fn_pickup_${process.pid}`;
const admin = new pg.Client({ connectionString: `${base}postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = `${base}${database}`;
const ROUNDS = Number(process.env.ROUNDS ?? 200);

try {
  await migrate({ connectionString: url });
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
  const sender = new pg.Pool({ connectionString: url, max: 2 });
  sender.on('error', () => undefined);
  const senderDb = new PrismaClient({ adapter: new PrismaPg(sender, { statementNameGenerator: preparedStatementName }) });
  const payload = z.object({ n: z.number() });

  let started: (() => void) | undefined;
  const job = defineJob('probe.pickup_job', payload, () => void started?.());
  const fn = defineFunction('probe.pickup_fn', payload, async (_input, ctx) => {
    started?.();
    return ctx.step('one', () => 1);
  });
  const worker = createWorker({
    db: prisma,
    listenConnectionString: url,
    handlers: [job, fn],
    concurrency: 10,
    pollIntervalMs: 60_000,
    logger: silentLogger,
    reaper: false,
  });
  let idle: (() => void) | undefined;
  worker.on('job:success', () => idle?.());
  await worker.start();

  const pickup = { job: [] as number[], fn: [] as number[] };
  /** The enqueue call alone (its start to its return): the rest of the pickup is the wake-up and the claim. */
  const call = { job: [] as number[], fn: [] as number[] };
  const once = async (kind: 'job' | 'fn', n: number) => {
    const done = new Promise<void>((resolve) => {
      idle = resolve;
    });
    const begun = new Promise<number>((resolve) => {
      started = () => resolve(performance.now());
    });
    const at = performance.now();
    if (kind === 'job') await enqueueJob(senderDb, { jobType: job.jobType, payload: { n } });
    else await enqueueWorkflowRun(senderDb, fn.run({ n }));
    call[kind].push(performance.now() - at);
    pickup[kind].push((await begun) - at);
    await done;
  };
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      await once('job', i);
      await once('fn', i);
    } else {
      await once('fn', i);
      await once('job', i);
    }
  }

  const line = (name: string, xs: number[]) =>
    console.log(
      `${name}: p50 ${percentile(xs, 50).toFixed(2)} ms, p95 ${percentile(xs, 95).toFixed(2)} ms, max ${Math.max(...xs).toFixed(1)} ms (${xs.length})`,
    );
  line('plain job enqueued -> handler started', pickup.job);
  line('function run started -> body started', pickup.fn);
  line('  of which the enqueueJob call', call.job);
  line('  of which the enqueueWorkflowRun call', call.fn);
  console.log(
    `function / job pickup p50: ${(percentile(pickup.fn, 50) / percentile(pickup.job, 50)).toFixed(2)}x, p95: ${(percentile(pickup.fn, 95) / percentile(pickup.job, 95)).toFixed(2)}x`,
  );
  await worker.stop();
  await prisma.$disconnect();
  await senderDb.$disconnect();
  await pool.end();
  await sender.end();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
}
