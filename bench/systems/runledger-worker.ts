/**
 * runledger through its own worker runtime, `createWorker`, with its defaults
 * (adaptive claim size, completion batching, LISTEN + poll) except `concurrency`, a
 * silent logger and the reaper off (nothing expires in these runs, and its
 * sweeps would add commits). It shares the loop variant's seeding and the
 * enqueue workloads are measured once, under the loop variant.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { Worker } from '../../src/index.js';
import { runledger } from '../runledger-package.js';
import { Countdown } from '../done.js';
import { LatencyProbe, seqOf } from '../latency.js';
import { withCountingPrisma, type CountingPrisma } from './runledger-client.js';
import { runledgerLoopSystem, seedChainRuns, seedFanOutRuns, seedNoopJobs, timedEnqueueBulk, timedEnqueueSingle, viaPool, viaPrisma } from './runledger.js';
import { BENCH_JOB_TYPE, CHAIN_STEPS, FAN_CHILD, FAN_IN, FAN_ROOT, type BenchSystem, type LatencySample, type Timed } from './types.js';

const { createWorker, defineJob, enqueueJob, silentLogger } = runledger;

export type Handler = (payload: unknown, jobId: string) => void;

/** How a variant's worker reaches the database: its Prisma client, or the pg Pool under it (`db: pool`). */
export interface WorkerShape {
  batchSize?: number;
  pool?: boolean;
}

export function newWorker(
  { prisma, pool }: CountingPrisma,
  url: string,
  concurrency: number,
  { batchSize, pool: viaPool }: WorkerShape,
  jobTypes: readonly string[],
  handler: Handler = () => undefined,
): Worker {
  return createWorker({
    db: viaPool ? pool : prisma,
    listenConnectionString: url,
    handlers: jobTypes.map((type) => defineJob(type, z.unknown(), async (payload, ctx) => handler(payload, ctx.jobId))),
    concurrency,
    ...(batchSize === undefined ? {} : { batchSize }),
    logger: silentLogger,
    reaper: false,
  });
}

/** Starts a worker and times it until `target` successes of `finalType` (any type when null) are committed. */
async function timedWorker(
  url: string,
  concurrency: number,
  shape: WorkerShape,
  jobTypes: readonly string[],
  target: number,
  finalType: string | null,
  what: string,
): Promise<Timed> {
  // Pool: the worker's claims and completion flushes plus headroom; the LISTEN connection is separate.
  return withCountingPrisma(url, concurrency + 4, async (client) => {
    const countdown = new Countdown(target, what);
    const worker = newWorker(client, url, concurrency, shape, jobTypes);
    // 'job:success' is emitted once the success is committed.
    worker.on('job:success', ({ job }) => {
      if (finalType === null || job.jobType === finalType) countdown.hit();
    });
    // Reported, not fatal: a stall still fails the run through the countdown's timeout.
    worker.on('worker:error', ({ error, operation }) => console.error(`[bench] createWorker ${operation} error:`, error));
    const before = client.statements();
    const started = performance.now();
    try {
      await worker.start();
      await countdown.done;
      return { wallMs: performance.now() - started, harnessCommits: 1, statements: client.statements() - before };
    } finally {
      await worker.stop({ drainMs: 5_000 });
    }
  });
}

const payloadN = (payload: unknown): number => Number((payload as { n?: unknown } | null)?.n ?? 0);

/**
 * The host-write workload (bench/workloads/host-write.ts): each job inserts
 * one row of the host's table. `transactional`: through `ctx.tx`, committed
 * with the job's success in one transaction per job (the client's pool is the
 * worker's: `concurrency` attempts hold a connection each, plus headroom for
 * claims, heartbeats and completions); otherwise through the client itself,
 * autocommitted, the success batched as usual.
 */
async function timedHostWrite(
  url: string,
  jobs: number,
  concurrency: number,
  { batchSize, pool: viaPool }: WorkerShape,
  transactional: boolean,
): Promise<Timed> {
  return withCountingPrisma(url, concurrency * (transactional ? 2 : 1) + 4, async (client) => {
    const { prisma } = client;
    // HOST_ROWS_TABLE, spelled out: a tagged statement cannot interpolate an identifier.
    const insert = (db: Pick<typeof prisma, '$executeRaw'>, n: number) => db.$executeRaw`INSERT INTO bench_host_rows (n) VALUES (${n}::int)`;
    const handler = transactional
      ? defineJob(BENCH_JOB_TYPE, z.unknown(), async (payload, ctx) => void (await insert(ctx.tx, payloadN(payload))), { transaction: prisma })
      : defineJob(BENCH_JOB_TYPE, z.unknown(), async (payload) => void (await insert(prisma, payloadN(payload))));
    const worker = createWorker({
      db: viaPool ? client.pool : prisma,
      listenConnectionString: url,
      handlers: [handler],
      concurrency,
      ...(batchSize === undefined ? {} : { batchSize }),
      logger: silentLogger,
      reaper: false,
    });
    const countdown = new Countdown(jobs, transactional ? 'createWorker transactional host write' : 'createWorker host write');
    worker.on('job:success', () => countdown.hit());
    worker.on('job:failure', ({ error }) => countdown.fail(error));
    worker.on('worker:error', ({ error, operation }) => console.error(`[bench] createWorker ${operation} error:`, error));
    const before = client.statements();
    const started = performance.now();
    try {
      await worker.start();
      await countdown.done;
      return { wallMs: performance.now() - started, harnessCommits: 1, statements: client.statements() - before };
    } finally {
      await worker.stop({ drainMs: 5_000 });
    }
  });
}

/**
 * createWorker running a transactional job type (`defineJob(..., { transaction })`):
 * measured on the host-write workload only, beside the direct variant.
 */
export function runledgerTransactionalSystem(): BenchSystem {
  const loop = runledgerLoopSystem({ claimBatch: 1 });
  return {
    key: 'runledger_worker_tx',
    label: 'runledger createWorker (transactional handler)',
    peer: false,
    describe() {
      return 'createWorker({ concurrency }) with its defaults; the job type is transactional: handler write, success and trail in one transaction per job';
    },
    install: loop.install,
    seedNoop: seedNoopJobs,
    hostWrite: (url, { jobs, concurrency }) => timedHostWrite(url, jobs, concurrency, {}, true),
  };
}

/** What README's "Tuning a worker" advises for short jobs at high volume (100-250): the variant shown beside the defaults. */
export const TUNED_WORKER_BATCH_SIZE = 250;

/**
 * createWorker with its defaults, or (`batchSize`) with a larger claim and
 * buffer, the tuned variant beside the peers' tuned ones (pg-boss's
 * batchSize, graphile-worker's localQueue).
 */
export function runledgerWorkerSystem(shape: WorkerShape = {}): BenchSystem {
  const loop = runledgerLoopSystem({ claimBatch: 1 });
  const { batchSize } = shape;
  return {
    key: shape.pool ? 'runledger_worker_pool' : batchSize === undefined ? 'runledger_worker' : 'runledger_worker_batched',
    label: shape.pool
      ? 'runledger createWorker (db: pg Pool)'
      : batchSize === undefined
        ? 'runledger createWorker'
        : `runledger createWorker (batchSize ${batchSize})`,
    peer: false,

    describe() {
      if (shape.pool) {
        return "createWorker({ db: pool, concurrency }) with its defaults: the pg Pool under the Prisma client, so the worker's statements skip Prisma's query layer (src/client/pool-db.ts), reaper off; its enqueues (the enqueue workloads and pickup latency's) go through poolDb(pool)";
      }
      return batchSize === undefined
        ? 'createWorker({ concurrency }) with its defaults (adaptive claim size, completion batching), LISTEN + poll, reaper off'
        : `createWorker({ concurrency, batchSize: ${batchSize} }): claims of up to ${batchSize} jobs held in its buffer (as graphile-worker's localQueue), otherwise the defaults, reaper off`;
    },

    install: loop.install,

    // The enqueue workloads once more, without Prisma's query layer (the other variants enqueue as the hand loop does).
    ...(shape.pool
      ? {
          enqueueBulk: (url: string, batches: number, batchSize: number) => timedEnqueueBulk(url, batches, batchSize, viaPool),
          enqueueSingle: (url: string, jobs: number, inFlight: number) => timedEnqueueSingle(url, jobs, inFlight, viaPool),
        }
      : {}),

    seedNoop: seedNoopJobs,
    drain: (url, { jobs, concurrency }) => timedWorker(url, concurrency, shape, [BENCH_JOB_TYPE], jobs, null, 'createWorker drain'),

    seedChains: seedChainRuns,
    chains: (url, { chains, concurrency }) => timedWorker(url, concurrency, shape, CHAIN_STEPS, chains, CHAIN_STEPS[2], 'createWorker chains'),

    seedFanOut: seedFanOutRuns,
    fanOut: (url, { runs, concurrency }) => timedWorker(url, concurrency, shape, [FAN_ROOT, FAN_CHILD, FAN_IN], runs, FAN_IN, 'createWorker fan-out'),

    hostWrite: (url, { jobs, concurrency }) => timedHostWrite(url, jobs, concurrency, shape, false),

    async latency(url, jobs, concurrency): Promise<LatencySample[]> {
      return withCountingPrisma(url, concurrency + 4, async (client) => {
        const probe = new LatencyProbe();
        const enqueueDb = (shape.pool ? viaPool : viaPrisma)(client);
        const seqByJob = new Map<string, number>();
        const worker = newWorker(client, url, concurrency, shape, [BENCH_JOB_TYPE], (payload, jobId) => {
          const seq = seqOf(payload);
          seqByJob.set(jobId, seq);
          probe.picked(seq);
        });
        worker.on('job:success', ({ job }) => {
          const seq = seqByJob.get(job.jobId);
          if (seq !== undefined) probe.markDone(seq, true);
        });
        await worker.start();
        try {
          return await probe.run(jobs, async (seq) => {
            await enqueueJob(enqueueDb, { jobType: BENCH_JOB_TYPE, payload: { seq } });
          });
        } finally {
          await worker.stop({ drainMs: 5_000 });
        }
      });
    },
  };
}
