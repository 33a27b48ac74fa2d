/**
 * Handler slots free once a success is queued on the completion batcher, so
 * claims overlap completion commits (src/worker/worker.ts). These pin what
 * that must not change: at most `concurrency` handlers at once, at most
 * 2 x `concurrency` + `batchSize` + 2 x `completionBatchSize` leases held (running, committing, buffered), and a workflow chain still runs through a
 * polling-only worker without waiting for a poll (the dependent is released
 * by the completion a claim may have overlapped).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJobs, enqueueWorkflowRun, getWorkflowRun, noOrganizationScope, workflow } from '../../src/index.js';
import { createWorker, defineJob, silentLogger, type Worker } from '../../src/worker/index.js';
import { countdown, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const workers: Worker[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
});

describe('worker slots', () => {
  it('never runs more than concurrency handlers nor holds more than 2 x concurrency + batchSize + 2 x completionBatchSize leases', async () => {
    let running = 0;
    let maxRunning = 0;
    let maxHeld = 0;
    let worker: Worker | undefined;
    const handler = defineJob('slots.count', z.object({ n: z.number() }), async () => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      maxHeld = Math.max(maxHeld, worker!.stats().inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      running -= 1;
    });
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 120 }, (_, n) => ({ jobType: 'slots.count', payload: { n } })),
    );
    // A long completion batch delay keeps successes queued, so the lease cap is what stops the claims.
    worker = createWorker({
      db: db.prisma,
      handlers: [handler],
      concurrency: 4,
      batchSize: 8,
      completionBatchSize: 8,
      completionBatchMs: 20,
      listen: false,
      pollIntervalMs: 50,
      reaper: false,
      logger: silentLogger,
    });
    workers.push(worker);
    const held: number[] = [];
    worker.on('job:start', () => held.push(worker!.stats().inFlight));
    const done = countdown(120);
    worker.on('job:success', done.arrive);
    await worker.start();
    await within(done.promise, 30_000, '120 successes');
    expect(maxRunning).toBeLessThanOrEqual(4);
    expect(Math.max(...held, maxHeld)).toBeLessThanOrEqual(2 * 4 + 8 + 2 * 8);
    expect(Math.max(...held)).toBeGreaterThan(4); // claims did overlap queued successes
    expect(worker.stats()).toMatchObject({ claimed: 120, succeeded: 120, leaseLost: 0 });
  });

  it('runs a workflow chain through a polling-only worker without waiting for a poll', async () => {
    const step = defineJob('slots.chain', z.object({ k: z.string() }), async (payload) => payload.k);
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('slots-chain')
        .job('a', 'slots.chain', { k: 'a' })
        .job('b', 'slots.chain', { k: 'b' })
        .job('c', 'slots.chain', { k: 'c' })
        .afterSuccess('b', ['a'])
        .afterSuccess('c', ['b'])
        .resultStep('c')
        .build(),
    );
    const worker = createWorker({
      db: db.prisma,
      handlers: [step],
      concurrency: 1,
      listen: false,
      pollIntervalMs: 60_000,
      reaper: false,
      logger: silentLogger,
    });
    workers.push(worker);
    const done = countdown(3);
    worker.on('job:success', done.arrive);
    await worker.start();
    await within(done.promise, 10_000, 'the three steps, long before the next poll');
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('SUCCEEDED');
  });
});
