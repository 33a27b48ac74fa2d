import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimJobs, enqueueJob, enqueueJobs, getJob, noOrganizationScope } from '../../src/index.js';
import { createWorker, defineJob, silentLogger, type Worker, type WorkerOptions } from '../../src/worker/index.js';
import { countdown, latch, nextEvent, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { LISTENER_APPLICATION_NAME } from '../../src/worker/listener.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();

const workers: Worker[] = [];

function startWorker(options: Partial<WorkerOptions> & Pick<WorkerOptions, 'handlers'>): Worker {
  const worker = createWorker({ db: db.prisma, logger: silentLogger, reaper: false, ...options });
  workers.push(worker);
  return worker;
}

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ drainMs: 0 })));
});

async function countByStatus(jobType: string): Promise<Record<string, number>> {
  const rows = await db.prisma.$queryRaw<{ status: string; n: number }[]>`
    SELECT status::text, count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${jobType} GROUP BY status`;
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

describe('worker processing', () => {
  it('processes 200 jobs with concurrency 8 exactly once and never runs more than 8 at a time', async () => {
    const runs = new Map<string, number>();
    let running = 0;
    let maxRunning = 0;
    const handler = defineJob('proc.count', z.object({ n: z.number().int() }), async (payload, ctx) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
      // Yield to the event loop so handlers overlap and the limit is actually exercised.
      await new Promise((resolve) => setImmediate(resolve));
      running -= 1;
      return { doubled: payload.n * 2 };
    });
    const jobs = await enqueueJobs(
      db.prisma,
      Array.from({ length: 200 }, (_, n) => ({ jobType: 'proc.count', payload: { n } })),
    );
    const worker = startWorker({ handlers: [handler], concurrency: 8, listen: false, pollIntervalMs: 50 });
    const allDone = countdown(200);
    worker.on('job:success', allDone.arrive);
    await worker.start();
    await within(allDone.promise, 30_000, '200 successes');
    await worker.stop();

    expect(await countByStatus('proc.count')).toEqual({ SUCCEEDED: 200 });
    const events = await db.prisma.$queryRaw<{ job_id: string; n: number }[]>`
      SELECT e.job_id::text, count(*)::int AS n
        FROM runledger.job_trail e JOIN runledger.job_queue q ON q.id = e.job_id
       WHERE q.job_type = 'proc.count' AND e.event_type = 'SUCCEEDED'
       GROUP BY e.job_id`;
    expect(events).toHaveLength(200);
    expect(events.every((row) => row.n === 1)).toBe(true);
    expect(runs.size).toBe(200);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(maxRunning).toBeLessThanOrEqual(8);
    expect(maxRunning).toBeGreaterThan(1);
    const sample = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: jobs[7]!.jobId });
    expect(sample).toMatchObject({ status: 'SUCCEEDED', output: { doubled: 14 }, attempt: 1, leaseOwner: null });
    expect(worker.stats()).toEqual({ inFlight: 0, claimed: 200, succeeded: 200, failed: 0, released: 0, leaseLost: 0 });
  });

  it('wakes on NOTIFY when an enqueue commits, long before the next poll', async () => {
    const handler = defineJob('proc.notify', z.object({}), async () => 'ok');
    const worker = startWorker({ db: undefined, connectionString: db.url, handlers: [handler], pollIntervalMs: 60_000 });
    const idle = nextEvent(worker, 'worker:idle');
    await worker.start();
    await idle; // the start-up claim found nothing; only a notification can wake the worker now

    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobType === 'proc.notify', 5_000);
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'proc.notify', payload: {} });
    expect((await succeeded).job.jobId).toBe(jobId);
  });

  it('finds jobs by polling when LISTEN is off', async () => {
    const handler = defineJob('proc.poll', z.object({}), async () => 'polled');
    const worker = startWorker({ handlers: [handler], listen: false, pollIntervalMs: 50 });
    const idle = nextEvent(worker, 'worker:idle');
    await worker.start();
    await idle;

    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobType === 'proc.poll', 5_000);
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'proc.poll', payload: {} });
    expect((await succeeded).job.jobId).toBe(jobId);
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).output).toBe('polled');
  });

  it('polls only, and says so once, when given a db and no connection string to LISTEN on', async () => {
    const entries: string[] = [];
    const logger = { ...silentLogger, info: (message: string) => void entries.push(message) };
    const handler = defineJob('proc.db_only', z.object({}), async () => null);
    const worker = startWorker({ handlers: [handler], logger, pollIntervalMs: 50 });
    await worker.start();
    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobType === 'proc.db_only', 5_000);
    await enqueueJob(db.prisma, { jobType: 'proc.db_only', payload: {} });
    await succeeded;
    const wakeUps = entries.filter((message) => message.startsWith('wake-ups:'));
    expect(wakeUps).toHaveLength(1);
    expect(wakeUps[0]).toContain('polling only');
    expect(wakeUps[0]).toContain('listenConnectionString');
  });

  it.each([
    ['LISTEN/NOTIFY, with polling as the safety net', { listenConnectionString: 'url' }],
    ['polling only (listen: false)', { listen: false }],
  ] as const)('logs its wake-up path once at start: %s', async (path, options) => {
    const entries: string[] = [];
    const logger = { ...silentLogger, info: (message: string) => void entries.push(message) };
    const handler = defineJob('proc.wake_path', z.object({}), async () => null);
    const listenOptions = 'listenConnectionString' in options ? { listenConnectionString: db.url } : options;
    const worker = startWorker({ handlers: [handler], logger, pollIntervalMs: 50, ...listenOptions });
    await worker.start();
    await worker.stop({ drainMs: 0 });
    expect(entries.filter((message) => message.startsWith('wake-ups:'))).toEqual([`wake-ups: ${path}`]);
  });

  it('keeps waking on NOTIFY after its LISTEN connection is killed', async () => {
    const handler = defineJob('proc.relisten', z.object({}), async () => 'ok');
    const worker = startWorker({
      db: undefined,
      connectionString: db.url,
      handlers: [handler],
      pollIntervalMs: 60_000,
    });
    const idle = nextEvent(worker, 'worker:idle');
    await worker.start();
    await idle;

    const listenerError = nextEvent(worker, 'worker:error', (e) => e.operation === 'listen');
    const [before] = await db.prisma.$queryRaw<{ pid: number }[]>`
      SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ${LISTENER_APPLICATION_NAME}`;
    expect(before).toBeDefined();
    await db.prisma.$queryRaw`SELECT pg_terminate_backend(${before!.pid}::int)`;
    await listenerError;
    await waitForListener(before!.pid);

    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobType === 'proc.relisten', 5_000);
    await enqueueJob(db.prisma, { jobType: 'proc.relisten', payload: {} });
    await succeeded;
  });

  it('never claims a job type it has no handler for', async () => {
    const handler = defineJob('proc.known', z.object({}), async () => 'ok');
    const { jobId: unknownId } = await enqueueJob(db.prisma, { jobType: 'proc.unknown', payload: {}, priority: 100 });
    const { jobId: knownId } = await enqueueJob(db.prisma, { jobType: 'proc.known', payload: {} });
    const worker = startWorker({ handlers: [handler], listen: false, pollIntervalMs: 50 });
    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobId === knownId);
    const idle = nextEvent(worker, 'worker:idle');
    await worker.start();
    await succeeded;
    await idle;
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: unknownId })).toMatchObject({ status: 'PENDING', attempt: 0 });
  });

  it('reaps the lease of a crashed worker and runs the job again', async () => {
    const attempts: number[] = [];
    const handler = defineJob('proc.orphan', z.object({}), async (_payload, ctx) => {
      attempts.push(ctx.attempt);
      return 'rescued';
    });
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'proc.orphan', payload: {} });
    // Claimed as a worker claims (markRunning): the handler started, so the expired attempt counts.
    const [orphan] = await claimJobs(db.prisma, { workerId: 'crashed', jobTypes: ['proc.orphan'], limit: 1, leaseSeconds: 60, markRunning: true });
    expect(orphan?.jobId).toBe(jobId);
    // The crashed worker's lease runs out (moved into the past instead of waiting a minute).
    await expireLeases(db.prisma, jobId);

    const worker = startWorker({ handlers: [handler], listen: false, pollIntervalMs: 60_000, reaper: { intervalMs: 50 } });
    const succeeded = nextEvent(worker, 'job:success', (e) => e.job.jobId === jobId);
    await worker.start();
    expect((await succeeded).job.attempt).toBe(2);
    expect(attempts).toEqual([2]);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
      status: 'SUCCEEDED',
      output: 'rescued',
      lastErrorCode: 'job.lease_expired',
    });
  });

  it('claims again as soon as a slot frees up when the last batch was full', async () => {
    const release = latch();
    const started = countdown(2);
    const handler = defineJob('proc.slots', z.object({ n: z.number() }), async (payload) => {
      started.arrive();
      if (payload.n === 0) await release.promise;
      return payload.n;
    });
    await enqueueJobs(
      db.prisma,
      [0, 1, 2, 3].map((n) => ({ jobType: 'proc.slots', payload: { n }, priority: 10 - n })),
    );
    const worker = startWorker({ handlers: [handler], concurrency: 2, listen: false, pollIntervalMs: 60_000 });
    const rest = countdown(3);
    worker.on('job:success', (e) => {
      if (e.output !== 0) rest.arrive();
    });
    await worker.start();
    // With polling a minute away, jobs 2 and 3 can only start because slot 1 freed up after a full batch.
    await within(rest.promise, 5_000, 'jobs 1-3 through one slot');
    expect(worker.stats().inFlight).toBe(1);
    release.open();
  });
});

/** Waits (bounded) until a new LISTEN session is connected and idle after its LISTEN. */
async function waitForListener(oldPid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const rows = await db.prisma.$queryRaw<{ pid: number }[]>`
      SELECT pid FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = ${LISTENER_APPLICATION_NAME}
         AND pid <> ${oldPid}::int AND state = 'idle' AND query LIKE 'LISTEN%'`;
    if (rows.length > 0) return;
    if (Date.now() > deadline) throw new Error('the listener did not reconnect');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
