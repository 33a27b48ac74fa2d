/**
 * graphile-worker 0.17 (0.18 requires Node 22). Throughput runs its own runner
 * (`run` with `concurrency` and a no-op task). Two configurations:
 * - defaults: each worker fetches one job and completes it on its own;
 * - batched: `localQueue.size = claimBatch` and `completeJobBatchDelay = 0`,
 *   graphile-worker's documented batching, the closest to a batch claim.
 * Completion of the last jobs is detected by polling its jobs table from one
 * extra connection (its commits are subtracted). Success logging is off
 * (NO_LOG_SUCCESS, set by the runner, and a logger that keeps errors only).
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Logger, makeWorkerUtils, run, runMigrations, type RunnerOptions, type WorkerEvents } from 'graphile-worker';
import type { BenchConfig } from '../config.js';
import { countRows, sleep } from '../db.js';
import { LatencyProbe, seqOf } from '../latency.js';
import { BENCH_JOB_TYPE, type BenchSystem, type DrainResult, type LatencySample, type PhaseTiming } from './types.js';

const JOBS_TABLE = 'graphile_worker._private_jobs';
const COMPLETION_POLL_MS = 10;

const errorsOnly = new Logger(() => (level, message) => {
  if (String(level) === 'error') console.error(`graphile-worker: ${message}`);
});

function runnerOptions(url: string, config: BenchConfig, batched: boolean, events: WorkerEvents): RunnerOptions {
  return {
    connectionString: url,
    concurrency: config.concurrency,
    maxPoolSize: config.concurrency + 2,
    noHandleSignals: true,
    logger: errorsOnly,
    events,
    ...(batched ? { preset: { worker: { localQueue: { size: config.claimBatch }, completeJobBatchDelay: 0 } } } : {}),
  };
}

export function graphileWorkerSystem(batched: boolean): BenchSystem {
  return {
    key: batched ? 'graphile_batched' : 'graphile',
    label: batched ? 'graphile-worker (batched)' : 'graphile-worker',

    describe(config) {
      return batched
        ? `run(concurrency ${config.concurrency}), localQueue.size ${config.claimBatch}, completeJobBatchDelay 0`
        : `run(concurrency ${config.concurrency}), default options (one job per fetch, one completion per job)`;
    },

    async install(url) {
      await runMigrations({ connectionString: url, logger: errorsOnly });
    },

    async enqueue(url, config): Promise<PhaseTiming> {
      const utils = await makeWorkerUtils({ connectionString: url, maxPoolSize: 2, logger: errorsOnly });
      try {
        await utils.withPgClient((client) => client.query('SELECT 1'));
        const started = performance.now();
        for (let start = 0; start < config.jobs; start += config.enqueueBatch) {
          const size = Math.min(config.enqueueBatch, config.jobs - start);
          await utils.addJobs(Array.from({ length: size }, (_, i) => ({ identifier: BENCH_JOB_TYPE, payload: { n: start + i } })));
        }
        return { wallMs: performance.now() - started, harnessCommits: 1 };
      } finally {
        await utils.release();
      }
    },

    async drain(url, config): Promise<DrainResult> {
      // The runner starts working as it boots; the clock starts with the first task (one fetch round trip in).
      let started: number | undefined;
      let ran = 0;
      let allRan: () => void = () => undefined;
      const everyJobRan = new Promise<void>((resolve) => (allRan = resolve));
      const events = new EventEmitter() as WorkerEvents;
      const runner = await run({
        ...runnerOptions(url, config, batched, events),
        taskList: {
          [BENCH_JOB_TYPE]: async () => {
            started ??= performance.now();
            ran += 1;
            if (ran === config.jobs) allRan();
          },
        },
      });
      const poller = new pg.Client({ connectionString: url });
      let harnessCommits = 0;
      let wallMs: number;
      try {
        await poller.connect();
        harnessCommits += 1; // the connection's start-up transaction
        await everyJobRan;
        // Completions are issued without being awaited by the worker; the jobs table tells when they committed.
        const deadline = Date.now() + 30_000;
        for (;;) {
          const { rows } = await poller.query<{ n: string }>(`SELECT count(*) AS n FROM ${JOBS_TABLE}`);
          harnessCommits += 1;
          if (Number(rows[0]?.n) === 0) break;
          if (Date.now() > deadline) throw new Error('graphile-worker: jobs still in the table 30 s after every task ran');
          await sleep(COMPLETION_POLL_MS);
        }
        wallMs = performance.now() - (started ?? Number.NaN);
      } finally {
        await poller.end();
        await runner.stop();
        await runner.promise;
      }
      return { completed: ran, harnessCommits, wallMs };
    },

    async latency(url, config): Promise<LatencySample[]> {
      const probe = new LatencyProbe();
      const events = new EventEmitter() as WorkerEvents;
      // job:complete fires right after the completion is issued (not awaited): order only, no commit time.
      events.on('job:complete', ({ job }) => probe.markDone(seqOf(job.payload), false));
      const runner = await run({
        ...runnerOptions(url, config, batched, events),
        taskList: { [BENCH_JOB_TYPE]: async (payload) => probe.picked(seqOf(payload)) },
      });
      const utils = await makeWorkerUtils({ connectionString: url, maxPoolSize: 2, logger: errorsOnly });
      try {
        return await probe.run(config.latencyJobs, async (seq) => {
          await utils.addJob(BENCH_JOB_TYPE, { seq });
        });
      } finally {
        await utils.release();
        await runner.stop();
        await runner.promise;
      }
    },

    countUnfinished(url) {
      return countRows(url, `SELECT count(*) AS n FROM ${JOBS_TABLE}`);
    },
  };
}
