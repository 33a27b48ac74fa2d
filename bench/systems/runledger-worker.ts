/**
 * runledger through its own worker runtime (`createWorker` from src/worker):
 * batch claims of up to `batchSize` (free slots plus a local buffer), LISTEN wake-up, batched
 * completions. Enqueue is the same as the loop variant. The reaper is off
 * (nothing expires in these runs); logging is silent.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createWorker, defineJob, enqueueJob, silentLogger, type Worker } from '../../src/index.js';
import type { BenchConfig } from '../config.js';
import { LatencyProbe, seqOf } from '../latency.js';
import { runledgerSystem, withPrisma } from './runledger.js';
import { BENCH_JOB_TYPE, type BenchSystem, type DrainResult, type LatencySample } from './types.js';

type Prisma = Parameters<Parameters<typeof withPrisma>[2]>[0];

function newWorker(prisma: Prisma, url: string, config: BenchConfig, handler: (payload: unknown, jobId: string) => void): Worker {
  return createWorker({
    db: prisma,
    listenConnectionString: url,
    handlers: [defineJob(BENCH_JOB_TYPE, z.unknown(), async (payload, ctx) => handler(payload, ctx.jobId))],
    concurrency: config.concurrency,
    batchSize: config.claimBatch,
    logger: silentLogger,
    reaper: false,
  });
}

export const runledgerWorkerSystem: BenchSystem = {
  key: 'runledger_worker',
  label: 'runledger createWorker',

  describe(config) {
    return `createWorker(concurrency ${config.concurrency}, batchSize ${config.claimBatch}: claims up to it, buffers claimed jobs), LISTEN + poll, reaper off`;
  },

  install: runledgerSystem.install,
  enqueue: runledgerSystem.enqueue,
  countUnfinished: runledgerSystem.countUnfinished,

  async drain(url, config): Promise<DrainResult> {
    return withPrisma(url, config.concurrency + 2, async (prisma) => {
      let succeeded = 0;
      let allDone: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (allDone = resolve));
      const worker = newWorker(prisma, url, config, () => undefined);
      // 'job:success' is emitted once the success is committed.
      worker.on('job:success', () => {
        succeeded += 1;
        if (succeeded === config.jobs) allDone();
      });
      const started = performance.now();
      let wallMs: number;
      try {
        await worker.start();
        const timeout = setTimeout(allDone, 120_000);
        await done;
        clearTimeout(timeout);
        wallMs = performance.now() - started;
      } finally {
        await worker.stop({ drainMs: 5_000 });
      }
      return { completed: succeeded, harnessCommits: 1, wallMs };
    });
  },

  async latency(url, config): Promise<LatencySample[]> {
    return withPrisma(url, config.concurrency + 4, async (prisma) => {
      const probe = new LatencyProbe();
      const seqByJob = new Map<string, number>();
      const worker = newWorker(prisma, url, config, (payload, jobId) => {
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
        return await probe.run(config.latencyJobs, async (seq) => {
          await enqueueJob(prisma, { jobType: BENCH_JOB_TYPE, payload: { seq } });
        });
      } finally {
        await worker.stop({ drainMs: 5_000 });
      }
    });
  },
};
