/**
 * runledger driven by a minimal worker loop written here (the "hand loop"):
 * `concurrency` loops, each claimJobs(limit claimBatch, markRunning: true, so
 * RUNNING costs no commit of its own), run the no-op handlers, then
 * completeJobs for the whole batch. A loop that finds nothing waits for
 * a NOTIFY on JOB_AVAILABLE_CHANNEL (workflow steps are released by other
 * loops' completions) or a short poll. Enqueue workloads are measured here
 * through the Prisma client, and by the `db: pg Pool` worker variant
 * through `poolDb(pool)` (the same functions, another client).
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { ClaimedJob, Db } from '../../src/index.js';
import { runledger } from '../runledger-package.js';
import { Countdown, runInFlight } from '../done.js';
import { LatencyProbe, seqOf } from '../latency.js';
import { Waker } from '../waker.js';
import { withCountingPrisma, type CountingPrisma } from './runledger-client.js';
import { batchEnqueueApi, chainRun, enqueueRuns, fanOutRun } from './runledger-workflows.js';
import { BENCH_JOB_TYPE, CHAIN_STEPS, FAN_CHILD, FAN_IN, FAN_ROOT, type BenchSystem, type LatencySample, type Timed } from './types.js';

const { JOB_AVAILABLE_CHANNEL, claimJobs, completeJobs, enqueueJob, enqueueJobs, migrate, poolDb } = runledger;

/** Which client an enqueue goes through: the Prisma client, or `poolDb` over the pg Pool under it. */
export type EnqueueVia = (client: CountingPrisma) => Db;
export const viaPrisma: EnqueueVia = ({ prisma }) => prisma;
export const viaPool: EnqueueVia = ({ pool }) => poolDb(pool);

/** `batches` enqueueJobs calls of `batchSize` jobs, one after another. */
export function timedEnqueueBulk(url: string, batches: number, batchSize: number, via: EnqueueVia): Promise<Timed> {
  return withCountingPrisma(url, 2, async (client) => {
    const db = via(client);
    const before = client.statements();
    const started = performance.now();
    for (let b = 0; b < batches; b += 1) {
      await enqueueJobs(
        db,
        Array.from({ length: batchSize }, (_, i) => ({ jobType: BENCH_JOB_TYPE, payload: { n: b * batchSize + i } })),
      );
    }
    return { wallMs: performance.now() - started, harnessCommits: 1, statements: client.statements() - before };
  });
}

/** `jobs` enqueueJob calls, `inFlight` at a time. */
export function timedEnqueueSingle(url: string, jobs: number, inFlight: number, via: EnqueueVia): Promise<Timed> {
  return withCountingPrisma(url, inFlight + 1, async (client) => {
    const db = via(client);
    const before = client.statements();
    const started = performance.now();
    await runInFlight(jobs, inFlight, async (n) => {
      await enqueueJob(db, { jobType: BENCH_JOB_TYPE, payload: { n } });
    });
    return { wallMs: performance.now() - started, harnessCommits: 1, statements: client.statements() - before };
  });
}

const LEASE_SECONDS = 60;
/** Idle wait of a loop that found nothing: a NOTIFY ends it sooner, so this is only the fallback poll (createWorker's default). */
const IDLE_WAIT_MS = 1_000;
/** Most jobs per enqueueJobs call when seeding (the API's limit is 10,000). */
const SEED_BATCH = 1_000;

export interface LoopOptions {
  claimBatch: number;
}

/** Runs `loops` claim/run/complete loops over `jobTypes` until `countdown` is done. */
async function runLoops(
  { prisma }: CountingPrisma,
  url: string,
  loops: number,
  claimBatch: number,
  jobTypes: string[],
  countdown: Countdown,
  onCompleted: (jobs: ClaimedJob[]) => void,
  handler: (job: ClaimedJob) => void = () => undefined,
): Promise<void> {
  // One latch per loop: a Waker releases one waiter, and a NOTIFY must wake every idle loop.
  const wakers = Array.from({ length: loops }, () => new Waker());
  const wakeAll = (): void => {
    for (const w of wakers) w.wake();
  };
  const listener = new pg.Client({ connectionString: url });
  await listener.connect();
  listener.on('notification', wakeAll);
  await listener.query(`LISTEN "${JOB_AVAILABLE_CHANNEL}"`);
  let stopping = false;
  void countdown.done.then(
    () => {
      stopping = true;
      wakeAll();
    },
    () => {
      stopping = true;
      wakeAll();
    },
  );
  try {
    const workers = wakers.map(async (waker, index) => {
      const workerId = `bench-loop-${index}`;
      while (!stopping) {
        waker.arm();
        const jobs = await claimJobs(prisma, { workerId, jobTypes, limit: claimBatch, leaseSeconds: LEASE_SECONDS, markRunning: true });
        if (jobs.length === 0) {
          await waker.wait(IDLE_WAIT_MS);
          continue;
        }
        for (const job of jobs) handler(job);
        const outcomes = await completeJobs(prisma, jobs);
        const refused = outcomes.filter((outcome) => outcome.outcome !== 'succeeded');
        if (refused.length > 0) throw new Error(`runledger refused ${refused.length} completions (lease mismatch)`);
        onCompleted(jobs); // completeJobs has returned: these completions are committed
      }
    });
    await Promise.all(workers.map((w) => w.catch((error: unknown) => countdown.fail(error))));
    await countdown.done;
  } finally {
    await listener.end();
  }
}

/** Times a processing run: the clock starts when the loops start and stops at the last committed completion. */
async function timedLoops(
  url: string,
  loops: number,
  claimBatch: number,
  jobTypes: string[],
  target: number,
  finalType: string | null,
  what: string,
): Promise<Timed> {
  return withCountingPrisma(url, loops + 2, async (client) => {
    const countdown = new Countdown(target, what);
    const before = client.statements();
    const started = performance.now();
    await runLoops(client, url, loops, claimBatch, jobTypes, countdown, (jobs) => {
      countdown.hit(finalType === null ? jobs.length : jobs.filter((job) => job.jobType === finalType).length);
    });
    return { wallMs: performance.now() - started, harnessCommits: 1, statements: client.statements() - before };
  });
}

/** `jobs` no-op jobs; `organizationId` puts them all in one tenant (the fairness workload's backlog). */
export async function seedNoopJobs(
  url: string,
  jobs: number,
  { organizationId, fairness }: { organizationId?: string; fairness?: { key: string } } = {},
): Promise<void> {
  const tenant = { ...(organizationId === undefined ? {} : { organizationId }), ...(fairness === undefined ? {} : { fairness }) };
  await withCountingPrisma(url, 2, async ({ prisma }) => {
    for (let start = 0; start < jobs; start += SEED_BATCH) {
      const size = Math.min(SEED_BATCH, jobs - start);
      await enqueueJobs(
        prisma,
        Array.from({ length: size }, (_, i) => ({ jobType: BENCH_JOB_TYPE, payload: { n: start + i }, ...tenant })),
      );
    }
  });
}

/**
 * `jobs` no-op jobs, each on one of `keys` concurrency keys of limit `limit` (concurrency_keys workload), the
 * key of each drawn by a fixed pseudo-random sequence: the same jobs in every run, neighbours in claim order
 * sometimes on one key.
 */
export async function seedKeyedNoopJobs(url: string, jobs: number, keys: number, limit: number): Promise<void> {
  let state = 0x2545f491;
  const nextKey = () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return `bench-key-${state % keys}`;
  };
  await withCountingPrisma(url, 2, async ({ prisma }) => {
    for (let start = 0; start < jobs; start += SEED_BATCH) {
      const size = Math.min(SEED_BATCH, jobs - start);
      await enqueueJobs(
        prisma,
        Array.from({ length: size }, (_, i) => ({ jobType: BENCH_JOB_TYPE, payload: { n: start + i }, concurrency: { key: nextKey(), limit } })),
      );
    }
  });
}

/** `jobs` no-op jobs all on one rate key (rate_limit workload): the bucket is full when the fleet starts. */
export async function seedRateLimitedNoopJobs(
  url: string,
  jobs: number,
  rateLimit: { key: string; limit: number; periodMs: number; burst: number },
): Promise<void> {
  await withCountingPrisma(url, 2, async ({ prisma }) => {
    for (let start = 0; start < jobs; start += SEED_BATCH) {
      const size = Math.min(SEED_BATCH, jobs - start);
      await enqueueJobs(
        prisma,
        Array.from({ length: size }, (_, i) => ({ jobType: BENCH_JOB_TYPE, payload: { n: start + i }, rateLimit })),
      );
    }
  });
}

export async function seedChainRuns(url: string, chains: number): Promise<void> {
  await withCountingPrisma(url, 2, async ({ prisma }) => {
    await enqueueRuns(
      prisma,
      Array.from({ length: chains }, (_, i) => chainRun(i)),
    );
  });
}

export async function seedFanOutRuns(url: string, runs: number, width: number): Promise<void> {
  await withCountingPrisma(url, 2, async ({ prisma }) => {
    await enqueueRuns(
      prisma,
      Array.from({ length: runs }, (_, i) => fanOutRun(i, width)),
    );
  });
}

export function runledgerLoopSystem(options: LoopOptions): BenchSystem {
  const { claimBatch } = options;
  return {
    key: 'runledger',
    label: 'runledger (hand loop)',
    peer: false,

    describe() {
      return `concurrency loops x claimJobs(limit ${claimBatch}, markRunning) + completeJobs(batch); LISTEN wake-up; workflows seeded with ${enqueueRunsLabel()}`;
    },

    async install(url) {
      await migrate({ connectionString: url });
    },

    enqueueBulk: (url, batches, batchSize) => timedEnqueueBulk(url, batches, batchSize, viaPrisma),
    enqueueSingle: (url, jobs, inFlight) => timedEnqueueSingle(url, jobs, inFlight, viaPrisma),

    seedNoop: seedNoopJobs,
    drain: (url, { jobs, concurrency }) => timedLoops(url, concurrency, claimBatch, [BENCH_JOB_TYPE], jobs, null, 'runledger drain'),

    seedChains: seedChainRuns,
    chains: (url, { chains, concurrency }) => timedLoops(url, concurrency, claimBatch, [...CHAIN_STEPS], chains, CHAIN_STEPS[2], 'runledger chains'),

    seedFanOut: seedFanOutRuns,
    fanOut: (url, { runs, concurrency }) => timedLoops(url, concurrency, claimBatch, [FAN_ROOT, FAN_CHILD, FAN_IN], runs, FAN_IN, 'runledger fan-out'),

    async latency(url, jobs): Promise<LatencySample[]> {
      // One loop, claiming one job at a time: the sequential probe never has more than one job out.
      return withCountingPrisma(url, 4, async (client) => {
        const probe = new LatencyProbe();
        const countdown = new Countdown(Number.POSITIVE_INFINITY, 'runledger latency');
        const loop = runLoops(
          client,
          url,
          1,
          1,
          [BENCH_JOB_TYPE],
          countdown,
          (done) => {
            for (const job of done) probe.markDone(seqOf(job.payload), true);
          },
          (job) => probe.picked(seqOf(job.payload)),
        );
        try {
          return await probe.run(jobs, async (seq) => {
            await enqueueJob(client.prisma, { jobType: BENCH_JOB_TYPE, payload: { seq } });
          });
        } finally {
          countdown.hit(Number.POSITIVE_INFINITY);
          await loop;
        }
      });
    },
  };
}

function enqueueRunsLabel(): string {
  return batchEnqueueApi() ? 'enqueueWorkflowRuns (100 runs per call)' : 'enqueueWorkflowRun per run (this checkout exports no enqueueWorkflowRuns)';
}
