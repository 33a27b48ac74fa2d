/**
 * The worker's local buffer (src/worker/worker.ts): claims larger than the
 * free handler slots keep the surplus claimed-but-not-started. These pin the
 * rules around it: never more than `concurrency` handlers at once however
 * much is buffered, buffered jobs released at stop() (none left LEASED), and
 * a buffered job that waited too long for its lease is released, not run late.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJobs } from '../../src/index.js';
import { createWorker, defineJob, silentLogger, type Worker } from '../../src/worker/index.js';
import { countdown, latch, nextEvent, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { JOB_BUFFER_EXPIRED } from '../../src/job/errors.js';

const db = useTestDatabase();
const workers: Worker[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
});

async function jobStates(jobType: string) {
  return db.prisma.$queryRaw<{ n: number; status: string; attempt: number; lease_owner: string | null }[]>`
    SELECT (payload->>'n')::int AS n, status::text, attempt, lease_owner
      FROM runledger.job_queue WHERE job_type = ${jobType} ORDER BY (payload->>'n')::int`;
}

async function releaseReasons(jobType: string) {
  const rows = await db.prisma.$queryRaw<{ n: number; reason: string }[]>`
    SELECT (j.payload->>'n')::int AS n, e.payload->>'reason' AS reason
      FROM runledger.job_trail e JOIN runledger.job_queue j ON j.id = e.job_id
     WHERE j.job_type = ${jobType} AND e.event_type = 'RELEASED' ORDER BY e.position`;
  return rows;
}

describe('worker buffer', () => {
  it('never runs more than concurrency handlers while jobs wait in the buffer', async () => {
    let running = 0;
    let maxRunning = 0;
    let maxHeld = 0;
    let worker: Worker | undefined;
    const handler = defineJob('buffer.count', z.object({ n: z.number() }), async () => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      maxHeld = Math.max(maxHeld, worker!.stats().inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2));
      running -= 1;
    });
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 150 }, (_, n) => ({ jobType: 'buffer.count', payload: { n } })),
    );
    worker = createWorker({
      db: db.prisma,
      handlers: [handler],
      concurrency: 3,
      batchSize: 12,
      completionBatchSize: 12,
      listen: false,
      pollIntervalMs: 50,
      reaper: false,
      logger: silentLogger,
    });
    workers.push(worker);
    const done = countdown(150);
    worker.on('job:success', done.arrive);
    await worker.start();
    await within(done.promise, 30_000, '150 successes');
    expect(maxRunning).toBeLessThanOrEqual(3);
    expect(maxRunning).toBe(3);
    expect(maxHeld).toBeGreaterThan(3); // jobs did wait in the buffer
    expect(maxHeld).toBeLessThanOrEqual(2 * 3 + 12 + 2 * 12);
    expect(worker.stats()).toMatchObject({ claimed: 150, succeeded: 150, failed: 0, released: 0, leaseLost: 0 });
  });

  it('releases buffered jobs at stop() before draining the running one, leaving none LEASED', async () => {
    const started = latch();
    const finish = latch();
    const startedJobs: number[] = [];
    const handler = defineJob('buffer.stop', z.object({ n: z.number().int() }), async (payload) => {
      startedJobs.push(payload.n);
      started.open();
      await finish.promise;
    });
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 6 }, (_, n) => ({ jobType: 'buffer.stop', payload: { n } })),
    );
    // Polling only, so the one claim of 5 is all this worker takes (the buffer stays over half full). The poll
    // interval is longer than the test: a poll that fired while the first claim was in flight (a loaded machine)
    // sent a second claim of 1 that could win the race, and the first handler started with nothing buffered.
    const worker = createWorker({
      db: db.prisma,
      handlers: [handler],
      concurrency: 1,
      batchSize: 5,
      listen: false,
      pollIntervalMs: 60_000,
      reaper: false,
      logger: silentLogger,
    });
    const stopped = nextEvent(worker, 'worker:stopped');
    const released: string[] = [];
    worker.on('job:released', ({ reason }) => released.push(reason));
    await worker.start();
    await within(started.promise, 10_000, 'the first handler started');
    // One running, the rest of the claim of 5 buffered.
    expect(worker.stats().inFlight).toBe(5);

    const stopping = worker.stop({ drainMs: 10_000 });
    // The buffered jobs are released while the running handler still holds its slot.
    await within(
      (async () => {
        while (released.length < 4) await new Promise((resolve) => setTimeout(resolve, 5));
      })(),
      10_000,
      'the 4 buffered jobs released during the drain',
    );
    expect(startedJobs).toEqual([0]);
    finish.open();
    await stopping;

    expect(startedJobs).toEqual([0]);
    const states = await jobStates('buffer.stop');
    expect(states.filter((s) => s.status === 'LEASED')).toEqual([]);
    expect(states.map((s) => [s.status, s.attempt, s.lease_owner])).toEqual([
      ['SUCCEEDED', 1, null],
      ...Array(4).fill(['PENDING', 0, null]),
      ['PENDING', 0, null],
    ]);
    expect((await releaseReasons('buffer.stop')).map((r) => r.reason)).toEqual(Array(4).fill('job.worker_shutdown'));
    expect((await stopped).stats).toEqual({ inFlight: 0, claimed: 5, succeeded: 1, failed: 0, released: 4, leaseLost: 0 });
  });

  it('releases a buffered job whose lease is near expiry instead of running it late', async () => {
    const finishFirst = latch();
    const starts: { n: number; attempt: number }[] = [];
    const handler = defineJob('buffer.expire', z.object({ n: z.number().int() }), async (payload, ctx) => {
      starts.push({ n: payload.n, attempt: ctx.attempt });
      if (payload.n === 0) await finishFirst.promise;
    });
    await enqueueJobs(db.prisma, [
      { jobType: 'buffer.expire', payload: { n: 0 }, priority: 10 },
      { jobType: 'buffer.expire', payload: { n: 1 } },
    ]);
    // A 1 s lease: heartbeats every 333 ms, and a buffered job may wait at most that long.
    const worker = createWorker({
      db: db.prisma,
      handlers: [handler],
      concurrency: 1,
      batchSize: 2,
      leaseSeconds: 1,
      listen: false,
      pollIntervalMs: 50,
      reaper: false,
      logger: silentLogger,
    });
    workers.push(worker);
    const releasedEvent = nextEvent(worker, 'job:released');
    const done = countdown(2);
    worker.on('job:success', done.arrive);
    await worker.start();

    const { job, reason } = await within(releasedEvent, 5_000, 'the buffered job released');
    expect(reason).toBe(JOB_BUFFER_EXPIRED);
    expect(starts).toEqual([{ n: 0, attempt: 1 }]); // job 1 never started on its first lease
    finishFirst.open();
    await within(done.promise, 10_000, 'both jobs succeed');

    // Job 1 ran once, on a fresh lease; the release gave its attempt back.
    expect(starts).toEqual([
      { n: 0, attempt: 1 },
      { n: 1, attempt: 1 },
    ]);
    expect(job.attempt).toBe(1);
    const states = await jobStates('buffer.expire');
    expect(states.map((s) => [s.status, s.attempt])).toEqual([
      ['SUCCEEDED', 1],
      ['SUCCEEDED', 1],
    ]);
    expect((await releaseReasons('buffer.expire')).map((r) => [r.n, r.reason])).toEqual([[1, JOB_BUFFER_EXPIRED]]);
    expect(worker.stats()).toMatchObject({ claimed: 3, succeeded: 2, failed: 0, released: 1, leaseLost: 0 });
  });
});
