/**
 * runledger, driven by a minimal worker loop written here: claimJobs (a batch,
 * `markRunning: true`, so RUNNING costs no commit of its own), run the no-op
 * handlers, completeJobsSuccess for the whole batch. The latency loop wakes on
 * LISTEN runledger_job_available and otherwise polls.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createPrismaClient } from '../../src/client/connect.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import {
  JOB_AVAILABLE_CHANNEL,
  claimJobs,
  completeJobsSuccess,
  enqueueJob,
  enqueueJobs,
  migrate,
  type ClaimedJob,
} from '../../src/index.js';
import type { BenchConfig } from '../config.js';
import { countRows } from '../db.js';
import { LatencyProbe, seqOf } from '../latency.js';
import { Waker } from '../waker.js';
import { BENCH_JOB_TYPE, type BenchSystem, type DrainResult, type LatencySample, type PhaseTiming } from './types.js';

const LEASE_SECONDS = 60;
const IDLE_POLL_MS = 1_000;

function newPrisma(url: string, max: number): PrismaClient {
  return createPrismaClient(url, { max });
}

/** Runs `fn` on a fresh client that has connected and run one query (one harness commit). */
export async function withPrisma<R>(url: string, max: number, fn: (prisma: PrismaClient) => Promise<R>): Promise<R> {
  const prisma = newPrisma(url, max);
  try {
    await prisma.$queryRaw`SELECT 1`;
    return await fn(prisma);
  } finally {
    await prisma.$disconnect();
  }
}

/** One claim -> run -> complete round; returns the jobs it completed (none: nothing was runnable). */
async function runOneBatch(
  prisma: PrismaClient,
  workerId: string,
  limit: number,
  handler: (job: ClaimedJob) => Promise<void>,
): Promise<ClaimedJob[]> {
  const jobs = await claimJobs(prisma, { workerId, jobTypes: [BENCH_JOB_TYPE], limit, leaseSeconds: LEASE_SECONDS, markRunning: true });
  if (jobs.length === 0) return jobs;
  await Promise.all(jobs.map(handler));
  const outcomes = await completeJobsSuccess(prisma, jobs.map((job) => ({ lease: job })));
  const refused = outcomes.filter((outcome) => outcome.outcome !== 'succeeded');
  if (refused.length > 0) throw new Error(`runledger refused ${refused.length} completions (lease mismatch)`);
  return jobs;
}

export const runledgerSystem: BenchSystem = {
  key: 'runledger',
  label: 'runledger',

  describe(config) {
    return `claimJobs(limit ${config.claimBatch}, markRunning) + completeJobsSuccess(batch), ${config.concurrency} loops, Prisma 7 + adapter-pg`;
  },

  async install(url) {
    await migrate({ connectionString: url });
  },

  async enqueue(url, config): Promise<PhaseTiming> {
    return withPrisma(url, 2, async (prisma) => {
      const started = performance.now();
      for (let start = 0; start < config.jobs; start += config.enqueueBatch) {
        const size = Math.min(config.enqueueBatch, config.jobs - start);
        await enqueueJobs(prisma, Array.from({ length: size }, (_, i) => ({ jobType: BENCH_JOB_TYPE, payload: { n: start + i } })));
      }
      return { wallMs: performance.now() - started, harnessCommits: 1 };
    });
  },

  async drain(url, config): Promise<DrainResult> {
    let wallMs = 0;
    const completed = await withPrisma(url, config.concurrency + 2, async (prisma) => {
      const started = performance.now();
      const loops = Array.from({ length: config.concurrency }, async (_, index) => {
        let done = 0;
        // Bounded: every round completes at least one job or ends the loop.
        for (let round = 0; round <= config.jobs; round += 1) {
          const jobs = await runOneBatch(prisma, `bench-${index}`, config.claimBatch, async () => undefined);
          if (jobs.length === 0) break;
          done += jobs.length;
        }
        return done;
      });
      const total = (await Promise.all(loops)).reduce((sum, n) => sum + n, 0);
      wallMs = performance.now() - started;
      return total;
    });
    return { completed, harnessCommits: 1, wallMs };
  },

  async latency(url, config): Promise<LatencySample[]> {
    const probe = new LatencyProbe();
    const waker = new Waker();
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    listener.on('notification', () => waker.wake());
    await listener.query(`LISTEN "${JOB_AVAILABLE_CHANNEL}"`);
    try {
      return await withPrisma(url, 4, async (prisma) => {
        let stopping = false;
        let loopError: unknown;
        const loop = (async () => {
          while (!stopping) {
            waker.arm();
            const jobs = await runOneBatch(prisma, 'bench-latency', config.claimBatch, async (job) => probe.picked(seqOf(job.payload)));
            // completeJobsSuccess has returned: the completions are committed.
            for (const job of jobs) probe.markDone(seqOf(job.payload), true);
            if (jobs.length === 0) await waker.wait(IDLE_POLL_MS);
          }
        })().catch((error: unknown) => {
          loopError = error;
        });
        try {
          return await probe.run(config.latencyJobs, async (seq) => {
            await enqueueJob(prisma, { jobType: BENCH_JOB_TYPE, payload: { seq } });
          });
        } finally {
          stopping = true;
          waker.wake();
          await loop;
          if (loopError) throw loopError;
        }
      });
    } finally {
      await listener.end();
    }
  },

  countUnfinished(url) {
    return countRows(url, `SELECT count(*) AS n FROM runledger.job_queue WHERE status <> 'SUCCEEDED'`);
  },
};
