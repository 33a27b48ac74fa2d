/**
 * Debounce and throttle at enqueue (issue 35; src/queue/enqueue-windows.ts): the last (debounce) or first
 * (throttle) request of a key's window wins, one job per window, under concurrency and inside the host's
 * transaction; bad settings are coded errors naming the field and write nothing.
 */
import { describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJob,
  enqueueJob,
  enqueueJobs,
  getQueueMetrics,
  getJob,
  listJobs,
  adminScope,
  organizationScope,
  purgeFinished,
  ValidationError,
  type EnqueueJobInput,
  type EnqueueJobResult,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { raceInTransactions } from '../harness/workflow-helpers.js';
import { countingClient } from '../harness/counting-client.js';
import { runUntilIdle } from '../../src/testing/index.js';
import { defineJob } from '../../src/index.js';
import { z } from 'zod';

const db = useTestDatabase();

interface JobFacts {
  id: string;
  status: string;
  payload: unknown;
  priority: number;
  due_in_ms: number;
}

async function jobsOf(jobType: string): Promise<JobFacts[]> {
  return db.prisma.$queryRaw<JobFacts[]>`
    SELECT id, status::text, payload, priority, (extract(epoch FROM next_run_at - now()) * 1000)::float8 AS due_in_ms
      FROM runledger.job_queue WHERE job_type = ${jobType} ORDER BY id`;
}

async function windowsOf(jobType: string): Promise<{ kind: string; window_key: string; job_id: string; organization_key: string }[]> {
  return db.prisma.$queryRaw`
    SELECT kind::text, window_key, job_id, organization_key FROM runledger.enqueue_windows WHERE job_type = ${jobType} ORDER BY window_key, organization_key`;
}

const debounced = (jobType: string, payload: unknown, key = 'k', windowMs = 60_000, maxWaitMs?: number): EnqueueJobInput => ({
  jobType,
  payload,
  debounce: { key, windowMs, ...(maxWaitMs === undefined ? {} : { maxWaitMs }) },
});
const throttled = (jobType: string, payload: unknown, key = 'k', windowMs = 60_000): EnqueueJobInput => ({ jobType, payload, throttle: { key, windowMs } });

/** Makes the job due now and claims it (a worker would, once its window ended). */
async function claimNow(jobType: string, jobId: string) {
  await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60 });
  expect(lease?.jobId).toBe(jobId);
  return lease!;
}

describe('debounce', () => {
  it('keeps one job per window: the last request wins, with its payload and settings, due windowMs after it', async () => {
    const type = 'deb.last';
    const first = await enqueueJob(db.prisma, debounced(type, { n: 1 }, 'k', 30_000));
    const second = await enqueueJob(db.prisma, { ...debounced(type, { n: 2 }, 'k', 30_000), priority: 7 });
    const third = await enqueueJob(db.prisma, debounced(type, { n: 3 }, 'k', 60_000));
    expect(first).toEqual({ jobId: first.jobId, status: 'PENDING', runNumber: 1, disposition: 'inserted' });
    expect(second).toEqual({ ...first, disposition: 'debounced' });
    expect(third).toEqual({ ...first, disposition: 'debounced' });
    const [job, ...others] = await jobsOf(type);
    expect(others).toEqual([]);
    // The last request's payload and settings (its priority is the default again), due 60 s after it.
    expect(job).toMatchObject({ id: first.jobId, status: 'PENDING', payload: { n: 3 }, priority: 0 });
    expect(job!.due_in_ms).toBeGreaterThan(55_000);
    expect(job!.due_in_ms).toBeLessThanOrEqual(60_000);
    expect(await windowsOf(type)).toEqual([{ kind: 'DEBOUNCE', window_key: 'k', job_id: first.jobId, organization_key: '' }]);
  });

  it('never pushes the job past the window start + maxWaitMs, so a steady stream still runs', async () => {
    const type = 'deb.maxwait';
    const first = await enqueueJob(db.prisma, debounced(type, 1, 'k', 30_000, 40_000));
    const [before] = await jobsOf(type);
    await enqueueJob(db.prisma, debounced(type, 2, 'k', 30_000, 40_000));
    await enqueueJob(db.prisma, debounced(type, 3, 'k', 30_000, 40_000));
    const [after] = await jobsOf(type);
    // Every request pushes it to now + 30 s, which stays under the cap here.
    expect(after!.due_in_ms).toBeGreaterThanOrEqual(before!.due_in_ms - 50);
    // The window began long ago (its cap has passed): the next request replaces the payload but the job is due now.
    await db.prisma.$executeRaw`
      UPDATE runledger.enqueue_windows SET opened_at = now() - interval '50 seconds', closes_at = now() - interval '10 seconds'
       WHERE job_id = ${first.jobId}::uuid`;
    const late = await enqueueJob(db.prisma, debounced(type, 4, 'k', 30_000, 40_000));
    expect(late).toMatchObject({ jobId: first.jobId, disposition: 'debounced' });
    const [capped] = await jobsOf(type);
    expect(capped).toMatchObject({ payload: 4 });
    expect(capped!.due_in_ms).toBeLessThanOrEqual(-9_000);
  });

  it('opens a new window with a new job once the job was claimed, and again once it finished', async () => {
    const type = 'deb.claimed';
    const first = await enqueueJob(db.prisma, debounced(type, { n: 1 }));
    const lease = await claimNow(type, first.jobId);
    const second = await enqueueJob(db.prisma, debounced(type, { n: 2 }));
    expect(second.jobId).not.toBe(first.jobId);
    expect(second.disposition).toBe('inserted');
    // The claimed job kept the payload it was claimed with.
    const jobs = await jobsOf(type);
    expect(jobs.map((j) => [j.id, j.status, j.payload])).toEqual([
      [first.jobId, 'LEASED', { n: 1 }],
      [second.jobId, 'PENDING', { n: 2 }],
    ]);
    await completeJob(db.prisma, { ...lease, output: null });
    expect((await enqueueJob(db.prisma, debounced(type, { n: 3 }))).jobId).toBe(second.jobId);
    const lease2 = await claimNow(type, second.jobId);
    await completeJob(db.prisma, { ...lease2 });
    const third = await enqueueJob(db.prisma, debounced(type, { n: 4 }));
    expect(third.disposition).toBe('inserted');
    expect(new Set([first.jobId, second.jobId, third.jobId]).size).toBe(3);
    expect(await windowsOf(type)).toEqual([{ kind: 'DEBOUNCE', window_key: 'k', job_id: third.jobId, organization_key: '' }]);
  });

  it('keeps keys apart by job type, organization and key', async () => {
    const results = await enqueueJobs(db.prisma, [
      debounced('deb.scope.a', 1, 'k'),
      debounced('deb.scope.b', 1, 'k'),
      { ...debounced('deb.scope.a', 1, 'k'), organizationId: 'org-a' },
      { ...debounced('deb.scope.a', 1, 'k'), organizationId: 'org-b' },
      debounced('deb.scope.a', 1, 'other'),
      throttled('deb.scope.a', 1, 'k'),
    ]);
    expect(new Set(results.map((r) => r.jobId)).size).toBe(6);
    expect(results.every((r) => r.disposition === 'inserted')).toBe(true);
  });

  it('gives every request of one key in a batch the key’s job: the last one’s payload wins', async () => {
    const type = 'deb.batch';
    const results = await enqueueJobs(db.prisma, [
      debounced(type, 'a1', 'a'),
      debounced(type, 'b1', 'b'),
      debounced(type, 'a2', 'a'),
      debounced(type, 'a3', 'a'),
    ]);
    expect(results.map((r) => r.disposition)).toEqual(['inserted', 'inserted', 'debounced', 'debounced']);
    expect(results[2]!.jobId).toBe(results[0]!.jobId);
    expect(results[3]!.jobId).toBe(results[0]!.jobId);
    const jobs = await jobsOf(type);
    expect(jobs.map((j) => j.payload).sort()).toEqual(['a3', 'b1']);
    // A second batch joins both windows.
    const again = await enqueueJobs(db.prisma, [debounced(type, 'b2', 'b'), debounced(type, 'a4', 'a')]);
    expect(again.map((r) => [r.jobId, r.disposition])).toEqual([
      [results[1]!.jobId, 'debounced'],
      [results[0]!.jobId, 'debounced'],
    ]);
    expect((await jobsOf(type)).map((j) => j.payload).sort()).toEqual(['a4', 'b2']);
  });

  it('takes a full batch: 10,000 requests over 2,000 keys make 2,000 jobs, each with its key’s last payload', async () => {
    const type = 'deb.bulk';
    const inputs = Array.from({ length: 10_000 }, (_, i) => debounced(type, { i }, `k${i % 2_000}`));
    const results = await enqueueJobs(db.prisma, inputs);
    expect(results.filter((r) => r.disposition === 'inserted')).toHaveLength(2_000);
    const [row] = await db.prisma.$queryRaw<{ jobs: number; last: number }[]>`
      SELECT count(*)::int AS jobs, count(*) FILTER (WHERE (payload ->> 'i')::int >= 8000)::int AS last
        FROM runledger.job_queue WHERE job_type = ${type}`;
    expect(row).toEqual({ jobs: 2_000, last: 2_000 });
    expect(results[9_999]!.jobId).toBe(results[1_999]!.jobId);
  });

  it('mixes with plain and keyed jobs in one batch, all or nothing', async () => {
    const type = 'deb.mixed';
    const results = await enqueueJobs(db.prisma, [
      { jobType: type, payload: 'plain' },
      debounced(type, 'w1'),
      { jobType: type, payload: 'keyed', idempotencyKey: 'idem' },
      debounced(type, 'w2'),
    ]);
    expect(results.map((r) => r.disposition)).toEqual(['inserted', 'inserted', 'inserted', 'debounced']);
    expect((await jobsOf(type)).map((j) => j.payload).sort()).toEqual(['keyed', 'plain', 'w2']);
    // An idempotency conflict in the batch: the window is not touched.
    await expect(enqueueJobs(db.prisma, [debounced(type, 'w3'), { jobType: type, payload: 'other', idempotencyKey: 'idem' }])).rejects.toMatchObject({
      code: 'job.idempotency_conflict',
    });
    expect((await jobsOf(type)).map((j) => j.payload).sort()).toEqual(['keyed', 'plain', 'w2']);
  });
});

describe('with concurrency keys', () => {
  it('a re-arm takes the last request’s concurrency key; a throttle’s answer writes no limit', async () => {
    const type = 'deb.concurrency';
    const first = await enqueueJob(db.prisma, { ...debounced(type, 1), concurrency: { key: 'win-c1', limit: 2 } });
    await enqueueJob(db.prisma, { ...debounced(type, 2), concurrency: { key: 'win-c2', limit: 3 } });
    const [job] = await db.prisma.$queryRaw<{ concurrency_key: string }[]>`
      SELECT concurrency_key FROM runledger.job_queue WHERE id = ${first.jobId}::uuid`;
    expect(job).toEqual({ concurrency_key: 'win-c2' });
    await enqueueJob(db.prisma, { ...throttled(type, 1), concurrency: { key: 'win-c3', limit: 1 } });
    await enqueueJob(db.prisma, { ...throttled(type, 2), concurrency: { key: 'win-c4', limit: 1 } });
    const limits = await db.prisma.$queryRaw<{ key: string; max_leased: number }[]>`
      SELECT key, max_leased FROM runledger.concurrency_limits WHERE key LIKE 'win-%' ORDER BY key`;
    expect(limits).toEqual([
      { key: 'win-c1', max_leased: 2 },
      { key: 'win-c2', max_leased: 3 },
      { key: 'win-c3', max_leased: 1 },
    ]);
  });
});

describe('throttle', () => {
  it('keeps the first request of the window: later ones return its job and write nothing; after the window, a new job', async () => {
    const type = 'thr.first';
    const first = await enqueueJob(db.prisma, throttled(type, { n: 1 }));
    const second = await enqueueJob(db.prisma, throttled(type, { n: 2 }));
    expect(first.disposition).toBe('inserted');
    expect(second).toEqual({ ...first, disposition: 'throttled' });
    const [job, ...others] = await jobsOf(type);
    expect(others).toEqual([]);
    expect(job).toMatchObject({ payload: { n: 1 } });
    expect(job!.due_in_ms).toBeLessThanOrEqual(0);
    // It answers with the job's current status, whatever it is.
    const lease = await claimNow(type, first.jobId);
    await completeJob(db.prisma, lease);
    expect(await enqueueJob(db.prisma, throttled(type, { n: 3 }))).toEqual({ jobId: first.jobId, status: 'SUCCEEDED', runNumber: 1, disposition: 'throttled' });
    // The window ends windowMs after its first request.
    await db.prisma.$executeRaw`UPDATE runledger.enqueue_windows SET closes_at = now() - interval '1 second' WHERE job_id = ${first.jobId}::uuid`;
    const next = await enqueueJob(db.prisma, throttled(type, { n: 4 }));
    expect(next.disposition).toBe('inserted');
    expect(next.jobId).not.toBe(first.jobId);
    expect((await jobsOf(type)).map((j) => j.payload)).toEqual([{ n: 1 }, { n: 4 }]);
  });

  it('schedules the window’s job by its runAt or delayMs', async () => {
    const type = 'thr.delay';
    await enqueueJob(db.prisma, { ...throttled(type, 1), delayMs: 120_000 });
    const [job] = await jobsOf(type);
    expect(job!.due_in_ms).toBeGreaterThan(110_000);
  });
});

describe('concurrent requests for one key', () => {
  it('ten debounces racing for a new key make one job, which carries one of their payloads', async () => {
    const type = 'race.deb.new';
    const results = await raceInTransactions(db, 10, (tx, i) => enqueueJob(tx, debounced(type, { i })));
    expectOneWindow(results, 'debounced');
    const [job, ...others] = await jobsOf(type);
    expect(others).toEqual([]);
    expect(results.map((r) => r.jobId)).toEqual(Array(10).fill(job!.id));
  });

  it('ten debounces racing for an open window all join it', async () => {
    const type = 'race.deb.open';
    const opened = await enqueueJob(db.prisma, debounced(type, { i: -1 }));
    const results = await raceInTransactions(db, 10, (tx, i) => enqueueJob(tx, debounced(type, { i })));
    expect(results.every((r) => r.jobId === opened.jobId && r.disposition === 'debounced')).toBe(true);
    const [job, ...others] = await jobsOf(type);
    expect(others).toEqual([]);
    expect((job!.payload as { i: number }).i).toBeGreaterThanOrEqual(0);
  });

  it('ten throttles racing for a new key make one job', async () => {
    const type = 'race.thr.new';
    const results = await raceInTransactions(db, 10, (tx, i) => enqueueJob(tx, throttled(type, { i })));
    expectOneWindow(results, 'throttled');
    expect(await jobsOf(type)).toHaveLength(1);
  });

  it('batches racing over the same keys in opposite orders make one job per key', async () => {
    const type = 'race.deb.batch';
    const keys = ['a', 'b', 'c', 'd'];
    const results = await raceInTransactions(db, 6, (tx, i) =>
      enqueueJobs(
        tx,
        (i % 2 === 0 ? keys : [...keys].reverse()).map((key) => debounced(type, { i, key }, key)),
      ),
    );
    const jobs = await jobsOf(type);
    expect(jobs).toHaveLength(4);
    for (const batch of results) expect(new Set(batch.map((r) => r.jobId))).toEqual(new Set(jobs.map((j) => j.id)));
  });

  it('a re-arm waits for a claim holding the job; the claim wins and the request opens a new window', async () => {
    const type = 'race.deb.claim';
    const opened = await enqueueJob(db.prisma, debounced(type, { n: 1 }));
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${opened.jobId}::uuid`;
    const claimer = db.newClient({ max: 1 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let claimedInTx!: () => void;
    const claimed = new Promise<void>((resolve) => {
      claimedInTx = resolve;
    });
    const claim = claimer.$transaction(async (tx) => {
      const leases = await claimJobs(tx, { workerId: 'w', jobTypes: [type], limit: 1, leaseSeconds: 60 });
      claimedInTx();
      await held;
      return leases;
    });
    await claimed;
    // The request blocks on the job row the claim holds (its window row is free); let the claim commit once the
    // request waits for it.
    const request = enqueueJob(db.prisma, debounced(type, { n: 2 }));
    await waitForLockWait();
    release();
    const [leases, result] = await Promise.all([claim, request]);
    expect(leases.map((l) => l.jobId)).toEqual([opened.jobId]);
    expect(result.disposition).toBe('inserted');
    expect(result.jobId).not.toBe(opened.jobId);
    expect((await jobsOf(type)).map((j) => [j.status, j.payload])).toEqual([
      ['LEASED', { n: 1 }],
      ['PENDING', { n: 2 }],
    ]);
  });
});

describe('debounces racing claims', () => {
  it('never changes a claimed job and never leaves two open windows for one key', async () => {
    const type = 'race.deb.claims';
    const keys = ['a', 'b', 'c'];
    const producers = Array.from({ length: 4 }, () => db.newClient({ max: 1 }));
    const consumers = Array.from({ length: 2 }, () => db.newClient({ max: 1 }));
    const results: EnqueueJobResult[] = [];
    const claimedPayloads = new Map<string, unknown>();
    let producing = true;
    const produce = async (client: (typeof producers)[number], p: number) => {
      for (let i = 0; i < 40; i += 1) {
        // windowMs 1: the job falls due at once, so claims race the next requests for real.
        results.push(await enqueueJob(client, debounced(type, { p, i }, keys[(p + i) % keys.length]!, 1)));
      }
    };
    const consume = async (client: (typeof consumers)[number]) => {
      while (producing) {
        const leases = await claimJobs(client, { workerId: 'w', jobTypes: [type], limit: 5, leaseSeconds: 60 });
        for (const lease of leases) claimedPayloads.set(lease.jobId, lease.payload);
        for (const lease of leases) await completeJob(client, lease);
      }
    };
    const consuming = consumers.map(consume);
    await Promise.all(producers.map(produce));
    producing = false;
    await Promise.all(consuming);
    const rows = await db.prisma.$queryRaw<{ id: string; status: string; attempt: number; payload: unknown }[]>`
      SELECT id, status::text, attempt, payload FROM runledger.job_queue WHERE job_type = ${type}`;
    // One job per window opened, and every answer names one of them.
    expect(rows).toHaveLength(results.filter((r) => r.disposition === 'inserted').length);
    const ids = new Set(rows.map((r) => r.id));
    expect(results.every((r) => ids.has(r.jobId))).toBe(true);
    // A claimed job kept the payload it was claimed with.
    for (const row of rows) if (claimedPayloads.has(row.id)) expect(row.payload).toEqual(claimedPayloads.get(row.id));
    // At most one open window per key: the jobs still PENDING and unstarted are the windows' own, one per key.
    const open = rows.filter((r) => r.status === 'PENDING' && r.attempt === 0).map((r) => r.id);
    const windows = await windowsOf(type);
    expect(open.every((id) => windows.some((w) => w.job_id === id))).toBe(true);
    expect(windows.map((w) => w.window_key)).toEqual(keys);
  });
});

/** Until a backend of this database waits for a lock. */
async function waitForLockWait(): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
    if (row!.n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no backend waited for a lock');
}

function expectOneWindow(results: readonly EnqueueJobResult[], joined: 'debounced' | 'throttled'): void {
  expect(new Set(results.map((r) => r.jobId)).size).toBe(1);
  expect(results.filter((r) => r.disposition === 'inserted')).toHaveLength(1);
  expect(results.filter((r) => r.disposition === joined)).toHaveLength(results.length - 1);
}

describe('inside the host’s transaction', () => {
  it('a rolled-back transaction leaves no job, no window and no re-arm', async () => {
    const type = 'host.rollback';
    await expect(
      db.prisma.$transaction(async (tx) => {
        await enqueueJob(tx, debounced(type, 1));
        await enqueueJob(tx, throttled(type, 1));
        throw new Error('host rolls back');
      }),
    ).rejects.toThrow('host rolls back');
    expect(await jobsOf(type)).toEqual([]);
    expect(await windowsOf(type)).toEqual([]);
    const opened = await enqueueJob(db.prisma, debounced(type, 'kept'));
    await expect(
      db.prisma.$transaction(async (tx) => {
        expect((await enqueueJob(tx, debounced(type, 'gone'))).jobId).toBe(opened.jobId);
        throw new Error('host rolls back');
      }),
    ).rejects.toThrow('host rolls back');
    expect((await jobsOf(type)).map((j) => j.payload)).toEqual(['kept']);
  });

  it('joins the window it opened earlier in the same transaction', async () => {
    const type = 'host.same';
    const [a, b] = await db.prisma.$transaction(async (tx) => [await enqueueJob(tx, debounced(type, 1)), await enqueueJob(tx, debounced(type, 2))]);
    expect(b).toEqual({ ...a!, disposition: 'debounced' });
    expect((await jobsOf(type)).map((j) => j.payload)).toEqual([2]);
  });

  it('is refused under REPEATABLE READ with a coded error, and the transaction stays usable', async () => {
    const type = 'host.iso';
    const error = await db.prisma.$transaction(
      async (tx) => {
        const e = await enqueueJob(tx, debounced(type, 1)).catch((caught: unknown) => caught);
        await enqueueJob(tx, { jobType: type, payload: 'plain' });
        return e;
      },
      { isolationLevel: 'RepeatableRead' },
    );
    expect(error).toMatchObject({ code: 'job.enqueue_window_unsupported_isolation', field: 'transaction.isolationLevel' });
    expect((await jobsOf(type)).map((j) => j.payload)).toEqual(['plain']);
    expect(await windowsOf(type)).toEqual([]);
  });
});

describe('bad settings', () => {
  const week = 7 * 24 * 60 * 60 * 1000;
  const cases: [string, Record<string, unknown>, string][] = [
    ['windowMs 0', { debounce: { key: 'k', windowMs: 0 } }, 'debounce.windowMs'],
    ['windowMs negative', { debounce: { key: 'k', windowMs: -5 } }, 'debounce.windowMs'],
    ['windowMs NaN', { debounce: { key: 'k', windowMs: Number.NaN } }, 'debounce.windowMs'],
    ['windowMs fractional', { throttle: { key: 'k', windowMs: 1.5 } }, 'throttle.windowMs'],
    ['windowMs over 7 days', { throttle: { key: 'k', windowMs: week + 1 } }, 'throttle.windowMs'],
    ['windowMs missing', { throttle: { key: 'k' } }, 'throttle.windowMs'],
    ['blank key', { debounce: { key: '  ', windowMs: 10 } }, 'debounce.key'],
    ['key over 512 bytes', { throttle: { key: 'é'.repeat(257), windowMs: 10 } }, 'throttle.key'],
    ['maxWaitMs below windowMs', { debounce: { key: 'k', windowMs: 100, maxWaitMs: 99 } }, 'debounce.maxWaitMs'],
    ['maxWaitMs over 7 days', { debounce: { key: 'k', windowMs: 100, maxWaitMs: week + 1 } }, 'debounce.maxWaitMs'],
    ['maxWaitMs on a throttle', { throttle: { key: 'k', windowMs: 100, maxWaitMs: 200 } }, 'throttle.maxWaitMs'],
    ['unknown field', { debounce: { key: 'k', windowMs: 100, leading: true } }, 'debounce.leading'],
    ['debounce and throttle', { debounce: { key: 'k', windowMs: 100 }, throttle: { key: 'k', windowMs: 100 } }, 'throttle'],
    ['debounce with runAt', { debounce: { key: 'k', windowMs: 100 }, runAt: new Date() }, 'runAt'],
    ['debounce with delayMs', { debounce: { key: 'k', windowMs: 100 }, delayMs: 5 }, 'delayMs'],
    ['debounce with idempotencyKey', { debounce: { key: 'k', windowMs: 100 }, idempotencyKey: 'i' }, 'idempotencyKey'],
    ['throttle with idempotencyKey', { throttle: { key: 'k', windowMs: 100 }, idempotencyKey: 'i' }, 'idempotencyKey'],
  ];
  it.each(cases)('%s: job.invalid_input naming %s, nothing written', async (_name, settings, field) => {
    const type = 'bad.window';
    const error = await enqueueJob(db.prisma, { jobType: type, payload: {}, ...settings } as EnqueueJobInput).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'job.invalid_input', field });
    const inBatch = await enqueueJobs(db.prisma, [{ jobType: type, payload: {} }, { jobType: type, payload: {}, ...settings } as EnqueueJobInput]).catch(
      (e: unknown) => e,
    );
    expect(inBatch).toMatchObject({ code: 'job.invalid_input', field: `1.${field}` });
    expect(await jobsOf(type)).toEqual([]);
    expect(await windowsOf(type)).toEqual([]);
  });

  it('refuses a type the catalog disables, writing nothing', async () => {
    const type = 'bad.disabled';
    await db.prisma.$executeRaw`
      INSERT INTO runledger.job_definitions (job_type, enabled, updated_at) VALUES (${type}, false, now())`;
    await expect(enqueueJob(db.prisma, debounced(type, 1))).rejects.toMatchObject({ code: 'job.definition_not_found_or_disabled' });
    expect(await jobsOf(type)).toEqual([]);
    expect(await windowsOf(type)).toEqual([]);
  });
});

describe('retention', () => {
  it('a window goes with its job', async () => {
    const type = 'ret.window';
    const opened = await enqueueJob(db.prisma, throttled(type, 1));
    await enqueueJob(db.prisma, debounced(type, 1));
    const lease = await claimNow(type, opened.jobId);
    await completeJob(db.prisma, lease);
    await purgeFinished(db.prisma, { olderThan: new Date(Date.now() + 60_000) });
    expect((await windowsOf(type)).map((w) => w.kind)).toEqual(['DEBOUNCE']);
    // The key's next request opens a new window.
    expect((await enqueueJob(db.prisma, throttled(type, 2))).disposition).toBe('inserted');
  });
});

describe('metrics', () => {
  it('getQueueMetrics counts the jobs waiting for a debounce window, per type and scope', async () => {
    const type = 'met.deb';
    const a = await enqueueJob(db.prisma, debounced(type, 1, 'a'));
    await enqueueJob(db.prisma, debounced(type, 2, 'a'));
    await enqueueJob(db.prisma, { ...debounced(type, 1, 'b'), organizationId: 'org-met' });
    await enqueueJob(db.prisma, throttled(type, 1, 'c'));
    const waiting = async (scope: Parameters<typeof getQueueMetrics>[1]['scope']) => {
      const m = await getQueueMetrics(db.prisma, { scope });
      return [m.byType.find((t) => t.jobType === type)?.debounceWaiting, m.jobs.debounceWaiting];
    };
    expect((await waiting(adminScope()))[0]).toBe(2);
    expect(await waiting(organizationScope('org-met'))).toEqual([1, 1]);
    // Due now (its window closed): no longer waiting.
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${a.jobId}::uuid`;
    expect((await waiting(adminScope()))[0]).toBe(1);
  });
});

describe('the job read model', () => {
  it('names the window a job is the current job of, and no other', async () => {
    const type = 'read.window';
    const deb = await enqueueJob(db.prisma, debounced(type, 1, 'dk', 1_000, 5_000));
    const thr = await enqueueJob(db.prisma, throttled(type, 1, 'tk', 2_000));
    const plain = await enqueueJob(db.prisma, { jobType: type, payload: 1 });
    const scope = adminScope();
    const debJob = await getJob(db.prisma, { scope, jobId: deb.jobId });
    expect(debJob.enqueueWindow).toMatchObject({ kind: 'debounce', key: 'dk' });
    expect(debJob.enqueueWindow!.closesAt!.getTime() - debJob.createdAt.getTime()).toBe(5_000);
    const thrJob = await getJob(db.prisma, { scope, jobId: thr.jobId });
    expect(thrJob.enqueueWindow).toMatchObject({ kind: 'throttle', key: 'tk' });
    expect(thrJob.enqueueWindow!.closesAt!.getTime() - thrJob.createdAt.getTime()).toBe(2_000);
    expect('enqueueWindow' in (await getJob(db.prisma, { scope, jobId: plain.jobId }))).toBe(false);
    const listed = await listJobs(db.prisma, { scope, jobType: type });
    expect(listed.items.map((j) => j.enqueueWindow?.key ?? null).sort()).toEqual(['dk', 'tk', null].sort());
  });
});

describe('cost', () => {
  it('a debounce or throttle call is one statement, inside the host transaction too; a batch of keys one transaction of one', async () => {
    const counter = countingClient(db);
    const client = counter.client;
    const statementsOf = async (call: () => Promise<unknown>) => {
      const before = counter.count();
      await call();
      return counter.count() - before;
    };
    try {
      // The one-time per-client isolation checks (autocommit and owned transactions), out of the counts.
      await enqueueJobs(client, [debounced('cost.warm', 1, 'a'), debounced('cost.warm', 1, 'b')]);
      await enqueueJob(client, debounced('cost.warm', 1, 'c'));
      const type = 'cost.window';
      const counts = {
        opens: await statementsOf(() => enqueueJob(client, debounced(type, 1))),
        joins: await statementsOf(() => enqueueJob(client, debounced(type, 2))),
        throttles: await statementsOf(() => enqueueJob(client, throttled(type, 1))),
        throttled: await statementsOf(() => enqueueJob(client, throttled(type, 2))),
        batch: await statementsOf(() =>
          enqueueJobs(
            client,
            ['a', 'b', 'c', 'a'].map((key, i) => debounced(type, i, key)),
          ),
        ),
        // BEGIN, the statement, COMMIT.
        inHostTransaction: await statementsOf(() => client.$transaction((tx) => enqueueJob(tx, debounced(type, 3)))),
      };
      expect(counts).toEqual({ opens: 1, joins: 1, throttles: 1, throttled: 1, batch: 3, inHostTransaction: 3 });
    } finally {
      await counter.close();
    }
  });
});

describe('in tests', () => {
  it('runUntilIdle with includeDelayed runs a debounced job once, with the last payload, without waiting out the window', async () => {
    const seen: number[] = [];
    const sync = defineJob('test.debounced', z.object({ n: z.number() }), async ({ n }) => {
      seen.push(n);
    });
    for (const n of [1, 2, 3]) await enqueueJob(db.prisma, sync, { n }, { debounce: { key: 'k', windowMs: 600_000 } });
    expect((await runUntilIdle(db.prisma, [sync])).jobs).toEqual([]);
    expect((await runUntilIdle(db.prisma, [sync], { includeDelayed: true })).succeeded).toBe(1);
    expect(seen).toEqual([3]);
  });
});
