import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJobs } from '../../src/index.js';
import { createWorker, defineJob, JobAbortedError, silentLogger } from '../../src/worker/index.js';
import { countdown, latch, nextEvent, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

async function jobStates(jobType: string) {
  return db.prisma.$queryRaw<{ n: number; status: string; attempt: number; last_error_code: string | null; lease_owner: string | null }[]>`
    SELECT (payload->>'n')::int AS n, status::text, attempt, last_error_code, lease_owner
      FROM runledger.job_queue WHERE job_type = ${jobType} ORDER BY (payload->>'n')::int`;
}

describe('stop()', () => {
  it('leaves none of 20 running jobs LEASED: those that finish in the drain window succeed, the rest are released', async () => {
    const allStarted = countdown(20);
    const finishEarly = latch();
    const abortReasons: unknown[] = [];
    const handler = defineJob('stop.drain', z.object({ n: z.number().int() }), async (payload, ctx) => {
      allStarted.arrive();
      if (payload.n < 10) {
        await finishEarly.promise;
        return { n: payload.n };
      }
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      abortReasons.push(ctx.signal.reason);
      throw ctx.signal.reason;
    });
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 20 }, (_, n) => ({ jobType: 'stop.drain', payload: { n } })),
    );
    // Its own Prisma client and LISTEN connection: stop() must close both (the file's leak check fails otherwise).
    const worker = createWorker({ connectionString: db.url, handlers: [handler], concurrency: 20, logger: silentLogger });
    const stopped = nextEvent(worker, 'worker:stopped');
    await worker.start();
    await within(allStarted.promise, 15_000, 'all 20 handlers started');

    const startedAt = Date.now();
    const stopping = worker.stop({ drainMs: 1_500 });
    expect(worker.state).toBe('stopping');
    finishEarly.open();
    await stopping;
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_400);
    expect(worker.state).toBe('stopped');

    const states = await jobStates('stop.drain');
    expect(states.filter((s) => s.status === 'LEASED')).toEqual([]);
    expect(states.slice(0, 10).map((s) => s.status)).toEqual(Array(10).fill('SUCCEEDED'));
    // Released, not failed: PENDING at once with the attempt given back, and a RELEASED event naming the reason.
    expect(states.slice(10).map((s) => [s.status, s.attempt, s.lease_owner, s.last_error_code])).toEqual(Array(10).fill(['PENDING', 0, null, null]));
    const released = await db.prisma.$queryRaw<{ reason: string }[]>`
      SELECT e.payload->>'reason' AS reason FROM runledger.job_trail e JOIN runledger.job_queue j ON j.id = e.job_id
       WHERE j.job_type = 'stop.drain' AND e.event_type = 'RELEASED'`;
    expect(released.map((r) => r.reason)).toEqual(Array(10).fill('job.worker_shutdown'));
    expect(abortReasons).toHaveLength(10);
    expect(abortReasons.every((r) => r instanceof JobAbortedError && r.reason === 'shutdown')).toBe(true);
    expect((await stopped).stats).toEqual({ inFlight: 0, claimed: 20, succeeded: 10, failed: 0, released: 10, leaseLost: 0 });
    expect(worker.stop()).toBe(stopping);
  });

  it('resolves without aborting anything when every handler finishes within the drain window', async () => {
    const started = latch();
    const finish = latch();
    let aborted = false;
    const handler = defineJob('stop.graceful', z.object({ n: z.number() }), async (_payload, ctx) => {
      started.open();
      await finish.promise;
      aborted = ctx.signal.aborted;
      return 'finished';
    });
    await enqueueJobs(db.prisma, [{ jobType: 'stop.graceful', payload: { n: 1 } }]);
    const worker = createWorker({ db: db.prisma, handlers: [handler], logger: silentLogger, listen: false, pollIntervalMs: 50 });
    await worker.start();
    await started.promise;
    const stopping = worker.stop({ drainMs: 60_000 });
    finish.open();
    await within(stopping, 10_000, 'stop after the last handler finished');
    expect(aborted).toBe(false);
    expect((await jobStates('stop.graceful')).map((s) => s.status)).toEqual(['SUCCEEDED']);
  });

  it('stops a worker that never started, and refuses to start it afterwards', async () => {
    const handler = defineJob('stop.unstarted', z.object({}), async () => null);
    const worker = createWorker({ connectionString: db.url, handlers: [handler], logger: silentLogger });
    await worker.stop();
    expect(worker.state).toBe('stopped');
    await expect(worker.start()).rejects.toMatchObject({ code: 'worker.stopped' });
  });
});
