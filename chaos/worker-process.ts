/**
 * One chaos worker process (the controller forks K of them and SIGKILLs them
 * at random): a runledger worker running the chaos handlers, plus a small
 * enqueuer that sends direct jobs and workflow runs, and, when the
 * controller says so, the same idempotent job and run as every other process.
 *
 * Environment: CHAOS_URL (database, maybe through a pooler), CHAOS_LISTEN_URL
 * (the database itself, for LISTEN), CHAOS_WORKER_ID. SIGTERM drains and exits 0.
 */
import pg from 'pg';
import { poolerConnectionString } from '../src/client/connect.js';
import { proofFunction } from '../test/harness/function-proof.js';
import { connect, enqueueDirect, enqueueRun, startWorker, type WorkerLogger } from './api.js';
import { chaosHandlers } from './handlers.js';
import { summarizeError, type ChildMessage } from './messages.js';
import { enqueueDuplicatePair } from './enqueue.js';
import { buildShape, randomDirectJob, randomKeyedJob, randomRatedJob, randomShape } from './shapes.js';

const url = process.env.CHAOS_URL!;
const listenUrl = process.env.CHAOS_LISTEN_URL ?? url;
const workerId = process.env.CHAOS_WORKER_ID!;
const send = (message: ChildMessage) => {
  if (process.connected) process.send?.(message);
};

const log = (level: 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) => {
  send({ t: 'log', level, message, ...(fields?.error ? { error: summarizeError(fields.error) } : {}) });
};
const logger: WorkerLogger = { debug: () => undefined, info: () => undefined, warn: log('warn'), error: log('error') };

const db = connect(url, 6);
const pool = new pg.Pool({ connectionString: url, max: 3 });
pool.on('error', () => undefined); // an idle client killed by pg_terminate_backend; the next query reconnects
// chaos.tx attempts hold a connection each for their handler's duration: their own pool, as the README advises.
const host = connect(url, 8);
// Every other worker sends its own statements through a pg Pool (createWorker's `db: pool`), the rest through Prisma.
const direct = poolerConnectionString(url);
const workerPool = /[13579]$/.test(workerId) ? new pg.Pool({ connectionString: direct.connectionString, max: 6 }) : undefined;
workerPool?.on('error', () => undefined);
const worker = startWorker({
  db,
  ...(workerPool ? { pool: { pool: workerPool, preparedStatements: !direct.pooled } } : {}),
  listenUrl,
  // The durable-function shape: its plain steps' side effects on `pool` (autocommit), its transactional ones on `host`.
  handlers: [...chaosHandlers(pool, workerId, host), proofFunction(pool, host)],
  workerId,
  logger,
});

async function attempt(kind: string, fn: () => Promise<string>): Promise<void> {
  try {
    send({ t: 'op', kind, outcome: await fn() });
  } catch (error) {
    const summary = summarizeError(error);
    send({ t: 'op', kind, outcome: summary.code, error: summary });
  }
}

// CHAOS_ENQUEUE=0: a replacement started during the drain only works.
let stopping = process.env.CHAOS_ENQUEUE === '0';
async function enqueueLoop(): Promise<void> {
  while (!stopping) {
    const roll = Math.random();
    if (roll < 0.3) await attempt('enqueue_keyed', async () => (await enqueueDirect(db, randomKeyedJob())).disposition);
    else if (roll < 0.45) await attempt('enqueue_rated', async () => (await enqueueDirect(db, randomRatedJob())).disposition);
    else if (roll < 0.6) await attempt('enqueue_job', async () => (await enqueueDirect(db, randomDirectJob())).disposition);
    else {
      const shape = randomShape();
      await attempt(`enqueue_run.${shape}`, async () => (await enqueueRun(db, buildShape(shape))).disposition);
    }
    await new Promise((resolve) => setTimeout(resolve, 120 + Math.random() * 200));
  }
}

process.on('SIGTERM', () => {
  stopping = true;
  void (async () => {
    await worker.stop({ drainMs: 5_000 }).catch(() => undefined);
    await db.$disconnect().catch(() => undefined);
    await host.$disconnect().catch(() => undefined);
    await workerPool?.end().catch(() => undefined);
    await pool.end().catch(() => undefined);
    process.exit(0);
  })();
});
process.on('message', (message: { t?: string; key?: string }) => {
  // The controller's drain: no more new work from this process.
  if (message?.t === 'stop-enqueue') stopping = true;
  if (message?.t === 'enqueue-duplicates' && message.key && !stopping) void enqueueDuplicatePair(db, message.key, attempt, send);
});

// Started during an outage, the worker cannot reach the database yet: keep trying (the controller may kill us first).
for (;;) {
  try {
    await worker.start();
    break;
  } catch (error) {
    send({ t: 'log', level: 'warn', message: 'worker start failed; retrying', error: summarizeError(error) });
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
void enqueueLoop();
