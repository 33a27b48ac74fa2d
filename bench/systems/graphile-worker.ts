/**
 * graphile-worker 0.18 (bench/peers), its own runner with `concurrency`. Two
 * variants: its defaults (one job per fetch, one completion per job) and
 * "batched", the configuration its performance docs recommend for many small
 * jobs: `localQueue.size` (fetch and lock a batch, serve workers from it) and
 * `completeJobBatchDelay: 0` (completions of one tick share a statement).
 * Chains: each task adds the next step. Fan-out/fan-in: the child task, in
 * its own transaction, decrements a counter row and adds the fan-in job when
 * it reaches 0. graphile-worker completes without letting the caller await
 * the commit, so the end of a run is read from its jobs table (completed jobs
 * are deleted). Success logging is off (NO_LOG_SUCCESS, set by the runner,
 * and a logger that keeps errors only).
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { GraphileLogger, GraphileRunnerOptions, GraphileTask, GraphileWorkerModule } from '../peers/api.js';
import { loadGraphileWorker, peerVersion } from '../peers/load.js';
import { withClient } from '../db.js';
import { Countdown, pollUntilZero, runInFlight } from '../done.js';
import { LatencyProbe, seqOf } from '../latency.js';
import {
  BENCH_JOB_TYPE,
  CHAIN_STEPS,
  FAN_CHILD,
  FAN_COUNTER_TABLE,
  FAN_IN,
  FAN_ROOT,
  HOST_ROWS_TABLE,
  type BenchSystem,
  type LatencySample,
  type Timed,
} from './types.js';

const JOBS_TABLE = 'graphile_worker._private_jobs';
const UNFINISHED_SQL = `SELECT count(*) AS n FROM ${JOBS_TABLE}`;

let loaded: { gw: GraphileWorkerModule; errorsOnly: GraphileLogger } | undefined;

async function graphile(): Promise<{ gw: GraphileWorkerModule; errorsOnly: GraphileLogger }> {
  if (!loaded) {
    const gw = await loadGraphileWorker();
    const errorsOnly = new gw.Logger(() => (level, message) => {
      if (String(level) === 'error') console.error(`graphile-worker: ${message}`);
    });
    loaded = { gw, errorsOnly };
  }
  return loaded;
}

export interface GraphileVariantOptions {
  localQueueSize: number;
}

export function graphileWorkerSystems(options: GraphileVariantOptions): BenchSystem[] {
  const version = peerVersion('graphile-worker');
  return [variant(false, version, options), variant(true, version, options)];
}

function variant(batched: boolean, version: string, { localQueueSize }: GraphileVariantOptions): BenchSystem {
  async function runnerOptions(
    url: string,
    concurrency: number,
    taskList: Record<string, GraphileTask>,
    events?: EventEmitter,
  ): Promise<GraphileRunnerOptions> {
    const { errorsOnly } = await graphile();
    return {
      connectionString: url,
      concurrency,
      maxPoolSize: concurrency + 2,
      noHandleSignals: true,
      logger: errorsOnly,
      taskList,
      ...(events ? { events } : {}),
      ...(batched ? { preset: { worker: { localQueue: { size: localQueueSize }, completeJobBatchDelay: 0 } } } : {}),
    };
  }

  /** Runs the runner until `countdown` is done, then until the jobs table is empty (completions committed). */
  async function timedRun(url: string, concurrency: number, countdown: Countdown, taskList: Record<string, GraphileTask>): Promise<Timed> {
    const { gw } = await graphile();
    const wrapped = Object.fromEntries(
      Object.entries(taskList).map(([name, task]) => [
        name,
        (async (payload, helpers) => {
          try {
            await task(payload, helpers);
          } catch (error) {
            countdown.fail(error);
            throw error;
          }
        }) satisfies GraphileTask,
      ]),
    );
    const started = performance.now();
    const runner = await gw.run(await runnerOptions(url, concurrency, wrapped));
    try {
      await countdown.done;
      const harnessCommits = await pollUntilZero(url, UNFINISHED_SQL, [], 'graphile-worker');
      return { wallMs: performance.now() - started, harnessCommits };
    } finally {
      await runner.stop();
      await runner.promise;
    }
  }

  const system: BenchSystem = {
    key: batched ? 'graphile_batched' : 'graphile',
    label: batched ? `graphile-worker ${version} (batched)` : `graphile-worker ${version}`,
    peer: true,

    describe() {
      return batched
        ? `run(concurrency), localQueue.size ${localQueueSize}, completeJobBatchDelay 0`
        : 'run(concurrency), default options (one job per fetch, one completion per job)';
    },

    async install(url) {
      const { gw, errorsOnly } = await graphile();
      await gw.runMigrations({ connectionString: url, logger: errorsOnly });
    },

    async seedNoop(url, jobs) {
      const { gw, errorsOnly } = await graphile();
      const utils = await gw.makeWorkerUtils({ connectionString: url, maxPoolSize: 2, logger: errorsOnly });
      try {
        for (let start = 0; start < jobs; start += 1_000) {
          const size = Math.min(1_000, jobs - start);
          await utils.addJobs(Array.from({ length: size }, (_, i) => ({ identifier: BENCH_JOB_TYPE, payload: { n: start + i } })));
        }
      } finally {
        await utils.release();
      }
    },

    drain(url, { jobs, concurrency }) {
      const countdown = new Countdown(jobs, 'graphile-worker drain');
      return timedRun(url, concurrency, countdown, { [BENCH_JOB_TYPE]: () => countdown.hit() });
    },

    hostWrite(url, { jobs, concurrency }) {
      const countdown = new Countdown(jobs, 'graphile-worker host write');
      // The row autocommits on the worker's pool, then graphile-worker completes the job.
      return timedRun(url, concurrency, countdown, {
        [BENCH_JOB_TYPE]: async (payload, helpers) => {
          await helpers.withPgClient((client) => client.query(`INSERT INTO ${HOST_ROWS_TABLE} (n) VALUES ($1)`, [(payload as { n: number }).n]));
          countdown.hit();
        },
      });
    },

    async seedChains(url, chains) {
      const { gw, errorsOnly } = await graphile();
      const utils = await gw.makeWorkerUtils({ connectionString: url, maxPoolSize: 2, logger: errorsOnly });
      try {
        await utils.addJobs(Array.from({ length: chains }, (_, chain) => ({ identifier: CHAIN_STEPS[0], payload: { chain } })));
      } finally {
        await utils.release();
      }
    },

    chains(url, { chains, concurrency }) {
      const countdown = new Countdown(chains, 'graphile-worker chains');
      const [a, b, c] = CHAIN_STEPS;
      return timedRun(url, concurrency, countdown, {
        [a]: async (payload, helpers) => void (await helpers.addJob(b, payload)),
        [b]: async (payload, helpers) => void (await helpers.addJob(c, payload)),
        [c]: () => countdown.hit(),
      });
    },

    async seedFanOut(url, runs, width) {
      await withClient(url, async (client) => {
        await client.query(`CREATE TABLE ${FAN_COUNTER_TABLE} (run int PRIMARY KEY, remaining int NOT NULL)`);
        await client.query(`INSERT INTO ${FAN_COUNTER_TABLE} SELECT g, $1 FROM generate_series(0, $2 - 1) g`, [width, runs]);
      });
      const { gw, errorsOnly } = await graphile();
      const utils = await gw.makeWorkerUtils({ connectionString: url, maxPoolSize: 2, logger: errorsOnly });
      try {
        await utils.addJobs(Array.from({ length: runs }, (_, run) => ({ identifier: FAN_ROOT, payload: { run, width } })));
      } finally {
        await utils.release();
      }
    },

    fanOut(url, { runs, concurrency }) {
      const countdown = new Countdown(runs, 'graphile-worker fan-out');
      return timedRun(url, concurrency, countdown, {
        [FAN_ROOT]: async (payload, helpers) => {
          const { run, width } = payload as { run: number; width: number };
          await helpers.addJobs(Array.from({ length: width }, () => ({ identifier: FAN_CHILD, payload: { run } })));
        },
        [FAN_CHILD]: async (payload, helpers) => {
          const { run } = payload as { run: number };
          await helpers.withPgClient(async (client) => {
            await client.query('BEGIN');
            try {
              const { rows } = await client.query<{ remaining: number }>(
                `UPDATE ${FAN_COUNTER_TABLE} SET remaining = remaining - 1 WHERE run = $1 RETURNING remaining`,
                [run],
              );
              // The last child to finish adds the fan-in job, in the transaction that counted it.
              if (rows[0]?.remaining === 0) await client.query(`SELECT graphile_worker.add_job($1, json_build_object('run', $2::int))`, [FAN_IN, run]);
              await client.query('COMMIT');
            } catch (error) {
              await client.query('ROLLBACK');
              throw error;
            }
          });
        },
        [FAN_IN]: () => countdown.hit(),
      });
    },

    async latency(url, jobs, concurrency): Promise<LatencySample[]> {
      const { gw, errorsOnly } = await graphile();
      const probe = new LatencyProbe();
      const events = new EventEmitter();
      // job:complete fires right after the completion is issued (not awaited): order only, no commit time.
      events.on('job:complete', ({ job }: { job: { payload: unknown } }) => probe.markDone(seqOf(job.payload), false));
      const runner = await gw.run(await runnerOptions(url, concurrency, { [BENCH_JOB_TYPE]: (payload) => probe.picked(seqOf(payload)) }, events));
      const utils = await gw.makeWorkerUtils({ connectionString: url, maxPoolSize: 2, logger: errorsOnly });
      try {
        return await probe.run(jobs, async (seq) => {
          await utils.addJob(BENCH_JOB_TYPE, { seq });
        });
      } finally {
        await utils.release();
        await runner.stop();
        await runner.promise;
      }
    },
  };

  if (!batched) {
    // Enqueue does not depend on the runner's options: measured once, under the default variant.
    system.enqueueBulk = async (url, batches, batchSize): Promise<Timed> => {
      const { gw, errorsOnly } = await graphile();
      const utils = await gw.makeWorkerUtils({ connectionString: url, maxPoolSize: 2, logger: errorsOnly });
      try {
        await utils.withPgClient((client) => client.query('SELECT 1'));
        const started = performance.now();
        for (let b = 0; b < batches; b += 1) {
          await utils.addJobs(Array.from({ length: batchSize }, (_, i) => ({ identifier: BENCH_JOB_TYPE, payload: { n: b * batchSize + i } })));
        }
        return { wallMs: performance.now() - started, harnessCommits: 1 };
      } finally {
        await utils.release();
      }
    };
    system.enqueueSingle = async (url, jobs, inFlight): Promise<Timed> => {
      const { gw, errorsOnly } = await graphile();
      const utils = await gw.makeWorkerUtils({ connectionString: url, maxPoolSize: inFlight + 1, logger: errorsOnly });
      try {
        await utils.withPgClient((client) => client.query('SELECT 1'));
        const started = performance.now();
        await runInFlight(jobs, inFlight, async (n) => {
          await utils.addJob(BENCH_JOB_TYPE, { n });
        });
        return { wallMs: performance.now() - started, harnessCommits: 1 };
      } finally {
        await utils.release();
      }
    };
  }
  return system;
}
