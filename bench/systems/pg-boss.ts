/**
 * pg-boss 10 (the newest line whose `engines` accepts Node 20). Throughput
 * uses its fetch(batchSize) + complete(ids) API in `concurrency` loops, the
 * same shape as the runledger loop; `work()` would add its polling sleep
 * (pollingIntervalSeconds, minimum 0.5 s) between batches. Latency uses
 * `work()`, woken with `notifyWorker` right after each send: pg-boss 10 has no
 * LISTEN/NOTIFY, so this is its best case (a producer in the worker's own
 * process); a producer elsewhere waits for the next poll.
 * Maintenance (`supervise`) and cron (`schedule`) are off while measuring.
 */
import { performance } from 'node:perf_hooks';
import PgBoss from 'pg-boss';
import type { BenchConfig } from '../config.js';
import { countRows, sleep } from '../db.js';
import { LatencyProbe, seqOf } from '../latency.js';
import { BENCH_JOB_TYPE, type BenchSystem, type DrainResult, type LatencySample, type PhaseTiming } from './types.js';

const POLLING_INTERVAL_SECONDS = 0.5;

async function withBoss<R>(url: string, max: number, fn: (boss: PgBoss) => Promise<R>): Promise<R> {
  const boss = new PgBoss({ connectionString: url, max, supervise: false, schedule: false, migrate: true });
  boss.on('error', (error: Error) => console.error(`pg-boss error: ${error.message}`));
  await boss.start();
  try {
    return await fn(boss);
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

export const pgBossSystem: BenchSystem = {
  key: 'pgboss',
  label: 'pg-boss',

  describe(config: BenchConfig) {
    return `fetch(batchSize ${config.claimBatch}) + complete(ids), ${config.concurrency} loops; supervise/schedule off`;
  },

  async install(url) {
    await withBoss(url, 2, (boss) => boss.createQueue(BENCH_JOB_TYPE));
  },

  async enqueue(url, config): Promise<PhaseTiming> {
    return withBoss(url, 2, async (boss) => {
      const started = performance.now();
      for (let start = 0; start < config.jobs; start += config.enqueueBatch) {
        const size = Math.min(config.enqueueBatch, config.jobs - start);
        await boss.insert(Array.from({ length: size }, (_, i) => ({ name: BENCH_JOB_TYPE, data: { n: start + i } })));
      }
      return { wallMs: performance.now() - started, harnessCommits: 0 };
    });
  },

  async drain(url, config): Promise<DrainResult> {
    let wallMs = 0;
    const completed = await withBoss(url, config.concurrency + 2, async (boss) => {
      const started = performance.now();
      const loops = Array.from({ length: config.concurrency }, async () => {
        let done = 0;
        for (let round = 0; round <= config.jobs; round += 1) {
          const jobs = await boss.fetch<{ n: number }>(BENCH_JOB_TYPE, { batchSize: config.claimBatch });
          if (jobs.length === 0) break;
          await Promise.all(jobs.map(async () => undefined));
          await boss.complete(BENCH_JOB_TYPE, jobs.map((job) => job.id));
          done += jobs.length;
        }
        return done;
      });
      const total = (await Promise.all(loops)).reduce((sum, n) => sum + n, 0);
      wallMs = performance.now() - started;
      return total;
    });
    return { completed, harnessCommits: 0, wallMs };
  },

  async latency(url, config): Promise<LatencySample[]> {
    return withBoss(url, 4, async (boss) => {
      const probe = new LatencyProbe();
      const workerId = await boss.work<{ seq: number }>(
        BENCH_JOB_TYPE,
        { batchSize: config.claimBatch, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS },
        async (jobs) => {
          for (const job of jobs) probe.picked(seqOf(job.data));
          // work() completes without awaiting; completing here makes the commit observable (the later one is a no-op).
          await boss.complete(BENCH_JOB_TYPE, jobs.map((job) => job.id));
          for (const job of jobs) probe.markDone(seqOf(job.data), true);
        },
      );
      try {
        return await probe.run(config.latencyJobs, async (seq) => {
          await boss.send(BENCH_JOB_TYPE, { seq });
          boss.notifyWorker(workerId);
        });
      } finally {
        await boss.offWork(BENCH_JOB_TYPE);
        // offWork does not wait for the loop; let an in-flight fetch finish before the pool closes.
        await sleep(200);
      }
    });
  },

  countUnfinished(url) {
    return countRows(url, `SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state <> 'completed'`, [BENCH_JOB_TYPE]);
  },
};
