/** The worker's scheduler loop: materialises due slots on its (injected) clock and runs their jobs; off with `schedules: false`. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  cancelJob,
  createWorker,
  defineJob,
  enqueueJob,
  findJob,
  noOrganizationScope,
  isRunledgerError,
  silentLogger,
  upsertSchedule,
} from '../../src/index.js';
import { latch, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { backdateJobs } from '../harness/finished-history.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

async function jobsOf(key: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM runledger.job_queue WHERE idempotency_key LIKE ${`schedule:${key}:%`}`;
  return row!.n;
}

describe('worker scheduler loop', () => {
  it('two workers on one clock make the due slot one job, which a worker then runs', async () => {
    let clock = new Date('2028-01-01T00:00:10Z');
    await upsertSchedule(db.prisma, { key: 'loop.a', cron: '* * * * *', jobType: 'loop.job', payload: { from: 'schedule' }, enabled: true, now: clock });
    const ran = latch<unknown>();
    const handler = defineJob('loop.job', z.object({ from: z.string() }), async (payload) => void ran.open(payload));
    const schedules = { intervalMs: 10, now: () => clock };
    await startWorker({ handlers: [handler], schedules });
    await startWorker({ handlers: [handler], schedules });
    clock = new Date('2028-01-01T00:01:00Z');
    expect(await within(ran.promise, 10_000, 'the scheduled job to run')).toEqual({ from: 'schedule' });
    expect(await jobsOf('loop.a')).toBe(1);
  });

  it('is on by default (a pass runs at start) and makes no job with schedules: false; refuses a bad option', async () => {
    // Due by the database clock; the handler's type is one nobody claims, so the job stays to be counted.
    await upsertSchedule(db.prisma, {
      key: 'loop.off',
      cron: '* * * * *',
      jobType: 'loop.unclaimed',
      payload: {},
      enabled: true,
      now: new Date('2020-01-01T00:00:10Z'),
    });
    const handler = defineJob('loop.off', z.object({}), async () => undefined);
    // stop() waits for a pass in progress, and the first pass starts with the worker.
    await (await startWorker({ handlers: [handler], schedules: false })).stop({ drainMs: 0 });
    expect(await jobsOf('loop.off')).toBe(0);
    await (await startWorker({ handlers: [handler] })).stop({ drainMs: 0 });
    expect(await jobsOf('loop.off')).toBe(1);
    const error = (() => {
      try {
        createWorker({ db: db.prisma, handlers: [handler], logger: silentLogger, schedules: { intervalMs: 0 } });
      } catch (e) {
        return e;
      }
    })();
    expect(isRunledgerError(error, 'worker.invalid_options')).toBe(true);
    expect((error as { field: string }).field).toBe('schedules.intervalMs');
  });
});

describe('worker retention loop', () => {
  it('is off by default; with retention it purges what finished before its age at start', async () => {
    const { jobId: enqueued } = await enqueueJob(db.prisma, { jobType: 'loop.purge', payload: {} });
    await cancelJob(db.prisma, { jobId: enqueued, scope: noOrganizationScope() });
    // Finished 40 days ago, with an id of that time (retention reads jobs in id order).
    const jobId = (await backdateJobs(db.prisma, [enqueued], new Date(Date.now() - 40 * 86_400_000)))[0]!;
    const handler = defineJob('loop.purge.handler', z.object({}), async () => undefined);
    // stop() waits for a pass in progress, and the first pass starts with the worker.
    await (await startWorker({ handlers: [handler], schedules: false })).stop({ drainMs: 0 });
    expect(await findJob(db.prisma, { scope: noOrganizationScope(), jobId: jobId })).not.toBeNull();
    await (await startWorker({ handlers: [handler], schedules: false, retention: { olderThanMs: 30 * 24 * 3600 * 1000 } })).stop({ drainMs: 0 });
    expect(await findJob(db.prisma, { scope: noOrganizationScope(), jobId: jobId })).toBeNull();
  });
});
