/**
 * The worker's claim size (src/worker/claim-size.ts): without `batchSize` it
 * grows while fast handlers empty the buffer, shrinks when handlers are slow
 * (to what the lease covers, and to `concurrency` when the buffer holds more
 * than a round trip needs), and a given `batchSize` stays fixed. The claims
 * actually sent are read from the worker's own debug log ('claimed jobs',
 * with the count each claim leased); no figure here is a timing assertion.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJobs } from '../../src/index.js';
import { createWorker, defineJob, type Worker, type WorkerEvents, type WorkerOptions } from '../../src/worker/index.js';
import { countdown, recordingLogger, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const workers: Worker[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
});

interface Observed {
  worker: Worker;
  /** Jobs each claim leased, in order. */
  claims: () => number[];
  changes: WorkerEvents['worker:claim_size'][];
  /** Handler runs per payload `n`. */
  runs: Map<number, number>;
}

/** Enqueues `jobs` jobs of `jobType`, runs a worker over them until all succeed, and stops it. */
async function drain(jobType: string, jobs: number, handlerMs: number, options: Partial<WorkerOptions>): Promise<Observed> {
  const runs = new Map<number, number>();
  const handler = defineJob(jobType, z.object({ n: z.number().int() }), async ({ n }) => {
    runs.set(n, (runs.get(n) ?? 0) + 1);
    if (handlerMs > 0) await new Promise((resolve) => setTimeout(resolve, handlerMs));
  });
  for (let start = 0; start < jobs; start += 1_000) {
    await enqueueJobs(
      db.prisma,
      Array.from({ length: Math.min(1_000, jobs - start) }, (_, i) => ({ jobType, payload: { n: start + i } })),
    );
  }
  const logger = recordingLogger();
  const worker = createWorker({ db: db.prisma, handlers: [handler], listen: false, pollIntervalMs: 50, reaper: false, logger, ...options });
  workers.push(worker);
  const changes: WorkerEvents['worker:claim_size'][] = [];
  worker.on('worker:claim_size', (change) => changes.push(change));
  const done = countdown(jobs);
  worker.on('job:success', done.arrive);
  await worker.start();
  await within(done.promise, 60_000, `${jobs} successes`);
  await worker.stop();
  const claims = () => logger.entries.filter((e) => e.message === 'claimed jobs').map((e) => e.fields!.count as number);
  return { worker, claims, changes, runs };
}

async function statusesOf(jobType: string) {
  return db.prisma.$queryRaw<{ status: string; attempt: number; n: number }[]>`
    SELECT status::text, attempt, count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${jobType} GROUP BY 1, 2 ORDER BY 1, 2`;
}

async function releasedCount(jobType: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM runledger.job_events e JOIN runledger.job_queue j ON j.id = e.job_id
     WHERE j.job_type = ${jobType} AND e.event_type IN ('RELEASED', 'LEASE_EXPIRED')`;
  return row!.n;
}

describe('adaptive claim size', () => {
  it('grows past 2 x concurrency under fast handlers, each job still run once', async () => {
    const { worker, claims, changes, runs } = await drain('claimsize.fast', 2_000, 0, { concurrency: 10 });

    expect(Math.max(...claims())).toBeGreaterThan(20);
    expect(changes.some((c) => c.reason === 'starved' && c.claimSize > c.previous)).toBe(true);
    expect(Math.max(...changes.map((c) => c.claimSize))).toBeLessThanOrEqual(250);
    expect(claims().reduce((a, b) => a + b, 0)).toBe(2_000);
    expect(runs.size).toBe(2_000);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(await statusesOf('claimsize.fast')).toEqual([{ status: 'SUCCEEDED', attempt: 1, n: 2_000 }]);
    expect(worker.stats()).toMatchObject({ claimed: 2_000, succeeded: 2_000, released: 0, leaseLost: 0 });
  });

  it('buffers no more than a short lease covers under slow handlers: no job waits out its lease or runs twice', async () => {
    // A 2 s lease: a buffered job may wait 666 ms for a slot; each handler takes 800 ms, so no
    // job may wait in the buffer (claims only for free slots). The old fixed default (a claim of
    // 2 x concurrency) left 4 jobs buffered for 800 ms, to be released unrun.
    const { worker, claims, changes, runs } = await drain('claimsize.slow', 12, 800, { concurrency: 4, leaseSeconds: 2 });

    expect(Math.max(...claims())).toBeLessThanOrEqual(4);
    expect(changes.some((c) => c.reason === 'lease' && c.claimSize === 4)).toBe(true);
    expect(worker.claimSize).toBe(4);
    expect(await releasedCount('claimsize.slow')).toBe(0);
    expect([...runs.values()]).toEqual(Array(12).fill(1));
    expect(await statusesOf('claimsize.slow')).toEqual([{ status: 'SUCCEEDED', attempt: 1, n: 12 }]);
    expect(worker.stats()).toMatchObject({ claimed: 12, succeeded: 12, released: 0, leaseLost: 0 });
  });

  it('shrinks to concurrency when the buffer holds more than the round trip needs', async () => {
    // Handlers of 200 ms against claims of milliseconds: the buffer is never near empty when a
    // claim lands, so the size falls by a quarter per claim to concurrency (a claim slowed past a
    // handler's time by a loaded machine may double it once more; the floor is still reached).
    const { worker, changes } = await drain('claimsize.steady', 80, 200, { concurrency: 4 });

    expect(changes.some((c) => c.reason === 'surplus' && c.claimSize === c.previous - Math.floor(c.previous / 4))).toBe(true);
    expect(Math.min(...changes.map((c) => c.claimSize))).toBe(4);
    expect(worker.stats()).toMatchObject({ claimed: 80, succeeded: 80, released: 0, leaseLost: 0 });
  });

  it('keeps a given batchSize fixed: no claim larger, no change', async () => {
    const { worker, claims, changes, runs } = await drain('claimsize.fixed', 400, 0, { concurrency: 10, batchSize: 7 });

    expect(Math.max(...claims())).toBe(7);
    expect(changes).toEqual([]);
    expect(worker.claimSize).toBe(7);
    expect(runs.size).toBe(400);
    expect(worker.stats()).toMatchObject({ claimed: 400, succeeded: 400, released: 0, leaseLost: 0 });
  });
});
