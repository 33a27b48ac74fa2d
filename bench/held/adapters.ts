/**
 * The steady-state side of the held-snapshot workload, per system: a consumer
 * pool (the system's own worker runtime) whose handler reports when it
 * started and then works for `workMs`, and a producer call that enqueues one
 * job carrying the moment its enqueue call started. Each adapter also names
 * the schema whose tables it writes (for the dead-tuple and size readings)
 * and how to count its unfinished jobs (the queue depth).
 *
 * - runledger: `createWorker` with its defaults (adaptive claim size,
 *   completion batching, LISTEN + poll, reaper, scheduler and intent promoter
 *   on) except `concurrency` and a silent logger; `enqueueJob` per job.
 * - pg-boss: `work()` with `localConcurrency`, the bench's `batchSize` and
 *   `burstWhenBatchFull` (its throughput variant), `useListenNotify` on a
 *   `notify: true` queue and the bench's 0.5 s poll;
 *   `send` per job. Maintenance and cron off, as in the other workloads.
 * - graphile-worker: `run({ concurrency })` with its defaults; `addJob` per job.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { runledger as runledgerPackage } from '../runledger-package.js';
import { sleep } from '../db.js';
import type { GraphileTask } from '../peers/api.js';
import { loadGraphileWorker, loadPgBoss } from '../peers/load.js';
import { createCountingPrisma } from '../systems/runledger-client.js';
import { BENCH_JOB_TYPE } from '../systems/types.js';

// The built package (bench/runledger-package.ts), as the other runledger variants.
const { createWorker, defineJob, enqueueJob, silentLogger } = runledgerPackage;

export interface SteadyOptions {
  concurrency: number;
  workMs: number;
  /** Called when a handler starts, with the `performance.now()` its job's enqueue call started at. */
  picked(enqueuedAt: number): void;
  /** Called when a handler returns. */
  finished(): void;
  /** pg-boss `batchSize` (the bench's BENCH_CLAIM_BATCH). */
  pgBossBatch: number;
}

export interface SteadyRun {
  enqueue(enqueuedAt: number): Promise<void>;
  stop(): Promise<void>;
}

export interface SteadyAdapter {
  /** The bench system key whose template database this adapter runs on. */
  readonly system: string;
  readonly label: string;
  /** The schema holding every table the system writes. */
  readonly schema: string;
  /** One row with `n`: jobs enqueued and not yet finished. */
  readonly depthSql: string;
  start(url: string, options: SteadyOptions): Promise<SteadyRun>;
}

const payloadSchema = z.object({ t: z.number() });

const runledger: SteadyAdapter = {
  system: 'runledger_worker',
  label: 'runledger createWorker (defaults)',
  schema: 'runledger',
  depthSql: `SELECT count(*) AS n FROM runledger.job_queue WHERE status IN ('PENDING', 'LEASED')`,
  async start(url, { concurrency, workMs, picked, finished }) {
    // The worker's pool (claims, completion flushes, maintenance loops) and the producer's are separate,
    // as an application's web tier and worker process would be.
    const workerDb = createCountingPrisma(url, concurrency + 4);
    const producerDb = createCountingPrisma(url, 16);
    const worker = createWorker({
      db: workerDb.prisma,
      listenConnectionString: url,
      handlers: [
        defineJob(BENCH_JOB_TYPE, payloadSchema, async ({ t }) => {
          picked(t);
          await sleep(workMs);
          finished();
        }),
      ],
      concurrency,
      logger: silentLogger,
    });
    worker.on('worker:error', ({ error, operation }) => console.error(`[bench] createWorker ${operation} error:`, error));
    await worker.start();
    return {
      async enqueue(enqueuedAt) {
        await enqueueJob(producerDb.prisma, { jobType: BENCH_JOB_TYPE, payload: { t: enqueuedAt } });
      },
      async stop() {
        await worker.stop({ drainMs: 5_000 });
        await Promise.all([workerDb.close(), producerDb.close()]);
      },
    };
  },
};

const pgBoss: SteadyAdapter = {
  system: 'pgboss',
  label: 'pg-boss work()',
  schema: 'pgboss',
  depthSql: `SELECT count(*) AS n FROM pgboss.job WHERE name = '${BENCH_JOB_TYPE}' AND state IN ('created', 'retry', 'active')`,
  async start(url, { concurrency, workMs, picked, finished, pgBossBatch }) {
    const { PgBoss } = await loadPgBoss();
    const boss = new PgBoss({ connectionString: url, max: concurrency + 16, supervise: false, schedule: false, migrate: true, useListenNotify: true });
    boss.on('error', (error: Error) => console.error(`pg-boss error: ${error.message}`));
    await boss.start();
    // The bench's batch with burstWhenBatchFull, as its throughput variant: at batchSize 1 pg-boss sleeps its polling
    // interval after every fetch (burstWhenBatchFull is ignored there), and 8 workers took 15 jobs/s of the 200 offered.
    // A batch's jobs run one after another in the worker that fetched it, so 8 handlers still work at once.
    await boss.work<{ t: number }>(
      BENCH_JOB_TYPE,
      { localConcurrency: concurrency, batchSize: pgBossBatch, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
      async (jobs) => {
        for (const job of jobs) {
          picked(job.data.t);
          await sleep(workMs);
          finished();
        }
      },
    );
    return {
      async enqueue(enqueuedAt) {
        await boss.send(BENCH_JOB_TYPE, { t: enqueuedAt });
      },
      async stop() {
        await boss.offWork(BENCH_JOB_TYPE, { wait: true });
        await boss.stop({ graceful: false, close: true, timeout: 5_000 });
      },
    };
  },
};

const graphile: SteadyAdapter = {
  system: 'graphile',
  label: 'graphile-worker (defaults)',
  schema: 'graphile_worker',
  depthSql: `SELECT count(*) AS n FROM graphile_worker._private_jobs`,
  async start(url, { concurrency, workMs, picked, finished }) {
    const gw = await loadGraphileWorker();
    const logger = new gw.Logger(() => (level, message) => {
      if (String(level) === 'error') console.error(`graphile-worker: ${message}`);
    });
    const task: GraphileTask = async (payload) => {
      picked((payload as { t: number }).t);
      await sleep(workMs);
      finished();
    };
    const runner = await gw.run({
      connectionString: url,
      concurrency,
      maxPoolSize: concurrency + 2,
      noHandleSignals: true,
      logger,
      taskList: { [BENCH_JOB_TYPE]: task },
    });
    const utils = await gw.makeWorkerUtils({ connectionString: url, maxPoolSize: 16, logger });
    return {
      async enqueue(enqueuedAt) {
        await utils.addJob(BENCH_JOB_TYPE, { t: enqueuedAt });
      },
      async stop() {
        await utils.release();
        await runner.stop();
        await runner.promise;
      },
    };
  },
};

export const STEADY_ADAPTERS: readonly SteadyAdapter[] = [runledger, pgBoss, graphile];

/** performance.now(): the one clock the producer stamps and the handlers read, in this process. */
export const now = (): number => performance.now();
