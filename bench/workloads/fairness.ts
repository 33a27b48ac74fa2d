/**
 * fairness (issue 35's target; runledger only): tenant A has `backlog` runnable jobs, enqueued in bulk before
 * the worker starts; one createWorker (concurrency 10, 5 ms handlers) drains them while tenant B enqueues one
 * job every 100 ms. Measured: B's pickup (enqueue call start -> handler start) per job, against the same B on
 * an empty queue in the same run. Target: B's p99 with the backlog <= 5x its p99 on the empty queue.
 * Every job names its tenant as its fairness key (fair claiming is opt-in: docs/guide/flow-control.md), so
 * claims take A's and B's jobs in turn.
 *
 * The worker is stopped after B's phase plus a grace, not when A is drained: B's jobs that had not started by
 * then are starved, and count at their wait so far (bench/workloads/fairness-table.ts).
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { sleep } from '../db.js';
import { runledger } from '../runledger-package.js';
import { percentile } from '../stats.js';
import { withCountingPrisma } from '../systems/runledger-client.js';
import { seedNoopJobs } from '../systems/runledger.js';
import { BENCH_JOB_TYPE } from '../systems/types.js';
import { type FairPhaseMeasure, type FairnessSizes, fairnessRatio, fairnessTable, p99 } from './fairness-table.js';
import type { BenchContext, TableResult, Workload } from './types.js';

const { createWorker, defineJob, enqueueJob, silentLogger } = runledger;

export const TENANT_A = 'tenant-a';
export const TENANT_B = 'tenant-b';

interface BJob {
  enqueuedAt: number;
  enqueueMs: number | null;
  pickedAt: number | null;
}

async function runPhase(url: string, sizes: FairnessSizes, backlog: number, seconds: number): Promise<FairPhaseMeasure> {
  if (backlog > 0) await seedNoopJobs(url, backlog, { organizationId: TENANT_A, fairness: { key: TENANT_A } });
  const bJobs: BJob[] = [];
  let aStarted = 0;
  // The worker's pool (its claims, heartbeats, completion flushes, plus headroom) and B's own, as another app's.
  return withCountingPrisma(url, sizes.concurrency + 4, (workerClient) =>
    withCountingPrisma(url, 4, async (producer) => {
      const worker = createWorker({
        db: workerClient.prisma,
        listenConnectionString: url,
        handlers: [
          defineJob(BENCH_JOB_TYPE, z.unknown(), async (payload, ctx) => {
            if (ctx.organizationId === TENANT_B) {
              const job = bJobs[(payload as { seq: number }).seq];
              if (job && job.pickedAt === null) job.pickedAt = performance.now();
            } else {
              aStarted += 1;
            }
            await sleep(sizes.handlerMs);
          }),
        ],
        concurrency: sizes.concurrency,
        logger: silentLogger,
        reaper: false,
      });
      worker.on('worker:error', ({ error, operation }) => console.error(`[bench] fairness worker ${operation} error:`, error));
      const started = performance.now();
      await worker.start();
      try {
        const count = Math.round((seconds * 1_000) / sizes.intervalMs);
        const t0 = performance.now();
        const aAtStart = aStarted;
        const enqueues: Promise<void>[] = [];
        let lag = 0;
        for (let seq = 0; seq < count; seq += 1) {
          const due = t0 + seq * sizes.intervalMs;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait);
          const job: BJob = { enqueuedAt: performance.now(), enqueueMs: null, pickedAt: null };
          lag = Math.max(lag, job.enqueuedAt - due);
          bJobs.push(job);
          // Not awaited: a slow call must not hold the next one back (B is 10 jobs/s whatever the database does).
          enqueues.push(
            enqueueJob(producer.prisma, { jobType: BENCH_JOB_TYPE, payload: { seq }, organizationId: TENANT_B, fairness: { key: TENANT_B } }).then(() => {
              job.enqueueMs = performance.now() - job.enqueuedAt;
            }),
          );
        }
        await Promise.all(enqueues);
        const phaseEnd = t0 + count * sizes.intervalMs;
        if (performance.now() < phaseEnd) await sleep(phaseEnd - performance.now());
        const aDuringB = aStarted - aAtStart;
        const bPhaseMs = performance.now() - t0;
        const deadline = performance.now() + sizes.graceMs;
        while (performance.now() < deadline && bJobs.some((j) => j.pickedAt === null)) await sleep(10);
        const stopAt = performance.now();
        const enqueueTimes = bJobs.map((j) => j.enqueueMs ?? Number.NaN);
        return {
          backlog,
          seconds,
          enqueued: bJobs.length,
          pickupsMs: bJobs.filter((j) => j.pickedAt !== null).map((j) => j.pickedAt! - j.enqueuedAt),
          starvedWaitsMs: bJobs.filter((j) => j.pickedAt === null).map((j) => stopAt - j.enqueuedAt),
          enqueueP50Ms: percentile(enqueueTimes, 50),
          enqueueMaxMs: Math.max(...enqueueTimes),
          scheduleLagMaxMs: lag,
          aStartsPerSecond: aDuringB / (bPhaseMs / 1_000),
          aStarted,
          wallMs: stopAt - started,
        };
      } finally {
        await worker.stop({ drainMs: 5_000 });
      }
    }),
  );
}

export function fairnessWorkload(sizes: FairnessSizes): Workload {
  return {
    key: 'fairness',
    async run(context: BenchContext, systems): Promise<TableResult> {
      const system = systems.find((s) => s.key === 'runledger');
      const runs: { empty: FairPhaseMeasure; loaded: FairPhaseMeasure }[] = [];
      if (system) {
        // createWorker runs nowhere else in a runledger-only bench: its first jobs (module JIT) must not land in the baseline.
        context.log('fairness: warm-up (a 200-job backlog and 1 s of B, untimed)');
        await context.withDatabase(system, (url) => runPhase(url, sizes, 200, 1), 'fairness');
        for (let rep = 0; rep < sizes.repeats; rep += 1) {
          context.log(`fairness: B at ${1_000 / sizes.intervalMs}/s on an empty queue, ${sizes.emptySeconds} s, run ${rep + 1}`);
          const empty = await context.withDatabase(system, (url) => runPhase(url, sizes, 0, sizes.emptySeconds), 'fairness');
          context.log(`  B p99 ${p99(empty).ms.toFixed(1)} ms, ${empty.starvedWaitsMs.length} not started`);
          context.log(
            `fairness: A's backlog of ${sizes.backlog.toLocaleString('en-US')}, B at ${1_000 / sizes.intervalMs}/s for ${sizes.seconds} s, run ${rep + 1}`,
          );
          const loaded = await context.withDatabase(system, (url) => runPhase(url, sizes, sizes.backlog, sizes.seconds), 'fairness');
          const ratio = fairnessRatio(loaded, empty);
          context.log(
            `  B p99 ${ratio.lowerBound ? '>= ' : ''}${p99(loaded).ms.toFixed(0)} ms (${ratio.value.toFixed(1)}x the empty queue's), ${loaded.starvedWaitsMs.length} of ${loaded.enqueued} not started; A ${Math.round(loaded.aStartsPerSecond)} starts/s`,
          );
          runs.push({ empty, loaded });
        }
      }
      return fairnessTable(sizes, runs);
    },
  };
}
