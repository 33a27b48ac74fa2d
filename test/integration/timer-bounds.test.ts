/**
 * Every option that ends up in a Node timer is bounded by what a timer can
 * wait (2^31-1 ms): a lease of 10,000,000 s used to overflow the heartbeat
 * timer (a warning flood and hundreds of commits a second).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimJobs, createWorker, enqueueJob, heartbeatJob, ValidationError } from '../../src/index.js';
import { runUntilIdle } from '../../src/testing/index.js';
import { defineJob } from '../../src/worker/index.js';
import { MAX_LEASE_SECONDS } from '../../src/validation/primitives.js';
import { useTestDatabase } from '../harness/database.js';
import { withTransaction } from '../../src/client/transaction.js';
import { errorOf } from '../harness/errors.js';

const db = useTestDatabase();
const handler = defineJob('bounds.job', z.object({}), async () => null);

describe('timer-fed options', () => {
  it('refuses a worker lease, poll interval or reaper interval a timer cannot wait', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ leaseSeconds: 10_000_000 }, 'leaseSeconds'],
      [{ leaseSeconds: MAX_LEASE_SECONDS + 1 }, 'leaseSeconds'],
      [{ pollIntervalMs: 2 ** 31 }, 'pollIntervalMs'],
      [{ pollIntervalMs: Number.NaN }, 'pollIntervalMs'],
      [{ reaper: { intervalMs: Number.POSITIVE_INFINITY } }, 'reaper.intervalMs'],
    ];
    for (const [options, field] of cases) {
      const error = await errorOf(() => createWorker({ db: db.prisma, handlers: [handler], ...options }));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ code: 'worker.invalid_options', field });
    }
    expect(createWorker({ db: db.prisma, handlers: [handler], leaseSeconds: MAX_LEASE_SECONDS }).state).toBe('created');
  });

  it('refuses a claim or heartbeat lease a timer cannot wait, and accepts the longest one', async () => {
    await enqueueJob(db.prisma, { jobType: 'bounds.job', payload: {} });
    const claimError = await errorOf(() => claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 10_000_000 }));
    expect(claimError).toMatchObject({ code: 'job.invalid_input', field: 'leaseSeconds' });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: MAX_LEASE_SECONDS });
    expect(lease).toBeDefined();
    const heartbeatError = await errorOf(() => heartbeatJob(db.prisma, { ...lease!, leaseSeconds: 10_000_000 }));
    expect(heartbeatError).toMatchObject({ code: 'job.invalid_input', field: 'leaseSeconds' });
    expect((await heartbeatJob(db.prisma, { ...lease!, leaseSeconds: MAX_LEASE_SECONDS })).leaseExpiresAt.getTime()).toBeGreaterThan(
      Date.now() + 24 * 3600_000,
    );
  });

  it('refuses a runUntilIdle timeout a timer cannot wait', async () => {
    for (const timeoutMs of [Number.NaN, -5, 2 ** 31]) {
      const error = await errorOf(() => runUntilIdle(db.prisma, [handler], { timeoutMs }));
      expect(error).toMatchObject({ code: 'testing.invalid_options', field: 'timeoutMs' });
    }
  });
});

describe('withTransaction options', () => {
  it('refuses a Prisma transaction timeout or wait a timer cannot honour, before opening anything', async () => {
    for (const [options, field] of [
      [{ timeoutMs: Number.NaN }, 'timeoutMs'],
      [{ timeoutMs: 0 }, 'timeoutMs'],
      [{ maxWaitMs: 2 ** 31 }, 'maxWaitMs'],
    ] as const) {
      const error = await errorOf(() => withTransaction(db.prisma, 'test', async () => 1, options));
      expect(error).toMatchObject({ code: 'client.invalid_options', field });
    }
    expect(await withTransaction(db.prisma, 'test', async () => 1, { timeoutMs: 5_000, maxWaitMs: 5_000 })).toBe(1);
  });
});
