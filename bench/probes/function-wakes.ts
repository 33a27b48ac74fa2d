// Probe: how soon a durable function resumes after what it waits for. RUNS functions each wait for a
// signal (timeout 10 minutes); once all are suspended, a signal is sent to each, one by one, and the time
// from the send's start (its two statements included) to the body resuming (its next line, in the
// worker's process) is recorded. Then RUNS functions each invoke a child job: the time from the child's
// handler returning to the parent resuming. One worker (LISTEN/NOTIFY, a poll of 60 s, so only a wake
// explains a prompt resume). Prints p50/p95/max in ms.
// Usage: npx tsx bench/probes/function-wakes.ts (env: PROBE_SERVER_URL, RUNS (default 200), CONCURRENCY (default 10))
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { z } from 'zod';
import { preparedStatementName } from '../../src/client/connect.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { createWorker, defineFunction, defineJob, enqueueWorkflowRun, migrate, signal, silentLogger } from '../../src/index.js';

const base = process.env.PROBE_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
const database = `fn_wakes_${process.pid}`;
const admin = new pg.Client({ connectionString: `${base}postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = `${base}${database}`;
const RUNS = Number(process.env.RUNS ?? 200);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 10);

try {
  await migrate({ connectionString: url });
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY + 6 });
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { statementNameGenerator: preparedStatementName }) });
  const sender = new pg.Pool({ connectionString: url, max: 2 });
  sender.on('error', () => undefined);
  const senderDb = new PrismaClient({ adapter: new PrismaPg(sender, { statementNameGenerator: preparedStatementName }) });
  const payload = z.object({ n: z.number() });

  const sentAt = new Map<number, number>();
  const signalLatency: number[] = [];
  const waiter = defineFunction('probe.waiter', payload, async (input, ctx) => {
    const got = await ctx.waitForSignal('go', { timeoutMs: 600_000 });
    signalLatency.push(performance.now() - sentAt.get(input.n)!);
    return got.status;
  });
  const childDone = new Map<number, number>();
  const childLatency: number[] = [];
  const child = defineJob('probe.child', payload, (input) => {
    childDone.set(input.n, performance.now());
    return input.n;
  });
  const parent = defineFunction('probe.parent', payload, async (input, ctx) => {
    const n = await ctx.invoke('child', { job: child, payload: { n: input.n } });
    childLatency.push(performance.now() - childDone.get(n)!);
    return n;
  });
  const worker = createWorker({
    db: prisma,
    listenConnectionString: url,
    handlers: [waiter, child, parent],
    concurrency: CONCURRENCY,
    pollIntervalMs: 60_000,
    logger: silentLogger,
    reaper: false,
  });
  await worker.start();
  const count = async (sql: string): Promise<number> => (await sender.query<{ n: number }>(sql)).rows[0]!.n;

  const runIds: string[] = [];
  for (let i = 0; i < RUNS; i++) runIds.push((await enqueueWorkflowRun(senderDb, waiter.run({ n: i }))).workflowRunId);
  // Suspended: every wait recorded and its body PENDING again.
  while (
    (await count(`SELECT count(*)::int AS n FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
                   WHERE ws.step_key = '$function' AND jq.job_type = 'probe.waiter' AND jq.status = 'PENDING' AND jq.run_number > 1`)) < RUNS
  ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  for (let i = 0; i < RUNS; i++) {
    sentAt.set(i, performance.now());
    await signal(senderDb, runIds[i]!, 'go', i);
  }
  while (signalLatency.length < RUNS) await new Promise((resolve) => setTimeout(resolve, 10));

  for (let i = 0; i < RUNS; i++) await enqueueWorkflowRun(senderDb, parent.run({ n: i }));
  while (childLatency.length < RUNS) await new Promise((resolve) => setTimeout(resolve, 10));

  const pct = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
  const line = (name: string, xs: number[]) =>
    console.log(`${name}: p50 ${pct(xs, 50).toFixed(0)} ms, p95 ${pct(xs, 95).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms (${xs.length} runs)`);
  line('signal sent -> body resumed', signalLatency);
  line('child job returned -> parent resumed', childLatency);
  await worker.stop();
  await prisma.$disconnect();
  await senderDb.$disconnect();
  await pool.end();
  await sender.end();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
}
