/**
 * Rate limits (src/queue/statements/rate-slots.ts, migration 20270101000002_rate_limits): each start of a rate
 * key's jobs takes a token of the key's bucket (at most `burst`, gaining `limit` per `periodMs`); without a
 * token a job stays PENDING at attempt 0 and takes no claim slot; the setting is a row an operator can change.
 * The clock is moved by writing the bucket's `refilled_at` back, never by sleeping.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  claimJobs,
  compareAndReplaySucceededJob,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  isRunledgerError,
  listRateLimits,
  noOrganizationScope,
  organizationScope,
  setRateLimit,
  type ClaimedJob,
} from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { countdown, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { ageBucket, bucket, waitForLockWaiters } from '../harness/key-rows.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

let counter = 0;
/** A job type and a key of this test alone, so tests sharing the database never meet. */
const fresh = (): { type: string; key: string } => {
  counter += 1;
  return { type: `rate.t${counter}`, key: `rate-key-${counter}-${Date.now()}` };
};

async function claim(jobType: string, limit = 10): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds: 60, markRunning: true });
}

async function jobCount(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;
  return row!.n;
}

describe('rate limits', () => {
  it('refuses a bad key or setting, naming the field, and writes nothing', async () => {
    const before = await jobCount();
    const bad: [unknown, string][] = [
      [{ key: '', limit: 2, periodMs: 1000 }, 'rateLimit.key'],
      [{ key: '  ', limit: 2, periodMs: 1000 }, 'rateLimit.key'],
      [{ key: 'k'.repeat(513), limit: 2, periodMs: 1000 }, 'rateLimit.key'],
      [{ key: 'k', limit: 0, periodMs: 1000 }, 'rateLimit.limit'],
      [{ key: 'k', limit: -1, periodMs: 1000 }, 'rateLimit.limit'],
      [{ key: 'k', limit: 1.5, periodMs: 1000 }, 'rateLimit.limit'],
      [{ key: 'k', limit: Number.NaN, periodMs: 1000 }, 'rateLimit.limit'],
      [{ key: 'k', limit: 1_000_001, periodMs: 1000 }, 'rateLimit.limit'],
      [{ key: 'k', periodMs: 1000 }, 'rateLimit.limit'],
      [{ key: 'k', limit: 2, periodMs: 0 }, 'rateLimit.periodMs'],
      [{ key: 'k', limit: 2, periodMs: Number.POSITIVE_INFINITY }, 'rateLimit.periodMs'],
      [{ key: 'k', limit: 2, periodMs: 8 * 24 * 3600 * 1000 }, 'rateLimit.periodMs'],
      [{ key: 'k', limit: 2 }, 'rateLimit.periodMs'],
      [{ key: 'k', limit: 2, periodMs: 1000, burst: 0 }, 'rateLimit.burst'],
      [{ key: 'k', limit: 2, periodMs: 1000, burst: 2.5 }, 'rateLimit.burst'],
      [{ key: 'k', limit: 2, periodMs: 1000, extra: 1 }, 'rateLimit.extra'],
    ];
    for (const [rateLimit, field] of bad) {
      const error = await enqueueJob(db.prisma, { jobType: 'rate.invalid', payload: {}, rateLimit } as never).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'job.invalid_input'), JSON.stringify(rateLimit)).toBe(true);
      expect((error as { field?: string }).field, JSON.stringify(rateLimit)).toBe(field);
    }
    // One batch, one setting per key: the key's row takes one value.
    const batch = await enqueueJobs(db.prisma, [
      { jobType: 'rate.invalid', payload: {}, rateLimit: { key: 'rate-batch', limit: 2, periodMs: 1000 } },
      { jobType: 'rate.invalid', payload: {}, rateLimit: { key: 'rate-batch', limit: 2, periodMs: 2000 } },
    ]).catch((e: unknown) => e);
    expect((batch as { field?: string }).field).toBe('1.rateLimit');
    expect(await jobCount()).toBe(before);
    expect(await bucket(db.prisma, 'rate-batch')).toBeUndefined();
    for (const [input, field] of [
      [{ key: '', limit: null }, 'key'],
      [{ key: 'k', limit: { limit: 0, periodMs: 10 } }, 'limit'],
      [{ key: 'k', limit: { limit: 1, periodMs: -5 } }, 'limit'],
      [{ key: 'k' }, 'limit'],
    ] as const) {
      const error = await setRateLimit(db.prisma, input as never).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'job.invalid_input'), JSON.stringify(input)).toBe(true);
      expect((error as { field?: string }).field, JSON.stringify(input)).toMatch(new RegExp(`^${field}`));
    }
    const unknownKey = await setRateLimit(db.prisma, { key: 'rate-never-named', limit: null }).catch((e: unknown) => e);
    expect(isRunledgerError(unknownKey, 'job.rate_key_not_found')).toBe(true);
  });

  it('starts at most the tokens in the bucket, leaves the rest PENDING without claim slots, and refills with time', async () => {
    const { type, key } = fresh();
    const jobs = await enqueueJobs(db.prisma, [
      ...[1, 2, 3, 4, 5, 6].map((n) => ({ jobType: type, payload: { n }, rateLimit: { key, limit: 2, periodMs: 60_000, burst: 3 } })),
      ...[7, 8].map((n) => ({ jobType: type, payload: { n } })),
    ]);
    // A new bucket is full: 3 tokens.
    expect(await bucket(db.prisma, key)).toMatchObject({ max_starts: 2, period_ms: 60_000, burst: 3, tokens: 3, set_by: 'enqueue' });
    const first = await claim(type, 6);
    expect(first.map((j) => (j.payload as { n: number }).n).sort((a, b) => a - b)).toEqual([1, 2, 3, 7, 8]);
    expect(first.find((j) => (j.payload as { n: number }).n === 1)?.rateKey).toBe(key);
    expect((await bucket(db.prisma, key))!.tokens).toBeLessThan(0.01);
    expect(await claim(type)).toEqual([]);
    const [waiting] = await db.prisma.$queryRaw<{ n: number; attempts: number }[]>`
      SELECT count(*)::int AS n, max(attempt)::int AS attempts FROM runledger.job_queue
       WHERE id = ANY(${jobs.slice(3, 6).map((j) => j.jobId)}::uuid[]) AND status = 'PENDING'`;
    expect(waiting).toEqual({ n: 3, attempts: 0 });
    const listed = await listRateLimits(db.prisma, { scope: adminScope() });
    expect(listed.items.find((item) => item.key === key)).toMatchObject({ limit: 2, periodMs: 60_000, burst: 3, waiting: 3, setBy: 'enqueue' });
    // Completing the started jobs gives nothing back: a start is a start.
    await completeJobs(
      db.prisma,
      first.map((j) => ({ ...j })),
    );
    expect(await claim(type)).toEqual([]);
    // Half a period later: one token (2 per 60 s).
    await ageBucket(db.prisma, key, 30_000);
    expect((await claim(type)).map((j) => (j.payload as { n: number }).n)).toEqual([4]);
    expect(await claim(type)).toEqual([]);
    // Ten periods later: never more than the burst.
    await ageBucket(db.prisma, key, 600_000);
    expect((await claim(type)).map((j) => (j.payload as { n: number }).n)).toEqual([5, 6]);
    expect((await bucket(db.prisma, key))!.tokens).toBeCloseTo(1, 2);
  });

  it('takes tokens for replays and for every job type naming the key', async () => {
    const { type, key } = fresh();
    const rateLimit = { key, limit: 1, periodMs: 3_600_000, burst: 2 };
    await enqueueJobs(db.prisma, [
      { jobType: type, payload: { n: 1 }, rateLimit },
      { jobType: `${type}.other`, payload: { n: 2 }, rateLimit },
      { jobType: type, payload: { n: 3 }, rateLimit },
    ]);
    const [a] = await claim(type, 1);
    const [b] = await claim(`${type}.other`, 1);
    expect([a?.payload, b?.payload]).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await claim(type)).toEqual([]);
    await completeJobs(db.prisma, [{ ...a! }, { ...b! }]);
    const replay = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: a!.jobId,
      expectedRunNumber: 1,
      replayRequestKey: `${key}-replay`,
      reason: 'again',
    });
    expect(replay.kind).toBe('replayed');
    const [row] = await db.prisma.$queryRaw<{ rate_key: string | null }[]>`
      SELECT rate_key FROM runledger.job_queue WHERE id = ${replay.kind === 'replayed' ? replay.replay.jobId : null}::uuid`;
    expect(row!.rate_key).toBe(key);
    // The replay waits for a token like the rest.
    expect(await claim(type)).toEqual([]);
    await ageBucket(db.prisma, key, 3_600_000);
    expect(await claim(type, 5)).toHaveLength(1);
  });

  it('changes at runtime: an operator pins the setting, enqueues set it only while it is theirs', async () => {
    const { type, key } = fresh();
    await enqueueJob(db.prisma, { jobType: type, payload: {}, rateLimit: { key, limit: 10, periodMs: 1000 } });
    expect(await bucket(db.prisma, key)).toMatchObject({ max_starts: 10, burst: 10, tokens: 10 });
    // A lower burst caps the tokens the bucket holds.
    const pinned = await setRateLimit(db.prisma, { key, limit: { limit: 5, periodMs: 2000, burst: 4 } });
    expect(pinned).toMatchObject({ key, limit: 5, periodMs: 2000, burst: 4, waiting: 1, setBy: 'operator' });
    expect(pinned.tokens).toBe(4);
    await enqueueJob(db.prisma, { jobType: type, payload: {}, rateLimit: { key, limit: 10, periodMs: 1000 } });
    expect(await bucket(db.prisma, key)).toMatchObject({ max_starts: 5, period_ms: 2000, burst: 4, set_by: 'operator' });
    expect(await setRateLimit(db.prisma, { key, limit: null })).toMatchObject({ limit: 5, setBy: 'enqueue' });
    await enqueueJob(db.prisma, { jobType: type, payload: {}, rateLimit: { key, limit: 10, periodMs: 1000, burst: 2 } });
    expect(await bucket(db.prisma, key)).toMatchObject({ max_starts: 10, period_ms: 1000, burst: 2, set_by: 'enqueue' });
    expect((await bucket(db.prisma, key))!.tokens).toBeLessThanOrEqual(2);
    // An operator may set a key no job has named yet: its bucket starts full.
    const preset = `${key}-preset`;
    expect(await setRateLimit(db.prisma, { key: preset, limit: { limit: 3, periodMs: 1000 } })).toMatchObject({ burst: 3, tokens: 3, waiting: 0 });
  });

  it('takes the key from the definition, computed from the payload, unless the enqueue names one', async () => {
    const { type, key } = fresh();
    const definition = defineJob(type, z.object({ tenant: z.string() }), async () => undefined, {
      rateLimit: { key: (p: { tenant: string }) => `${key}-${p.tenant}`, limit: 7, periodMs: 1000, burst: 2 },
    });
    const { jobId } = await enqueueJob(db.prisma, definition, { tenant: 'acme' });
    const own = await enqueueJob(db.prisma, definition, { tenant: 'acme' }, { rateLimit: { key: `${key}-own`, limit: 1, periodMs: 5000 } });
    const rows = await db.prisma.$queryRaw<{ id: string; rate_key: string }[]>`
      SELECT id::text, rate_key FROM runledger.job_queue WHERE id = ANY(${[jobId, own.jobId]}::uuid[])`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.rate_key]))).toEqual({ [jobId]: `${key}-acme`, [own.jobId]: `${key}-own` });
    expect(await bucket(db.prisma, `${key}-acme`)).toMatchObject({ max_starts: 7, burst: 2 });
    expect(await bucket(db.prisma, `${key}-own`)).toMatchObject({ max_starts: 1, period_ms: 5000, burst: 1 });
  });

  it('keeps the rate key of a debounced or throttled job, and a re-armed debounce takes the latest', async () => {
    const { type, key } = fresh();
    const first = await enqueueJob(db.prisma, {
      jobType: type,
      payload: { n: 1 },
      debounce: { key: `${key}-window`, windowMs: 600_000 },
      rateLimit: { key: `${key}-a`, limit: 3, periodMs: 1000 },
    });
    const again = await enqueueJob(db.prisma, {
      jobType: type,
      payload: { n: 2 },
      debounce: { key: `${key}-window`, windowMs: 600_000 },
      rateLimit: { key: `${key}-b`, limit: 4, periodMs: 1000 },
    });
    expect(again).toMatchObject({ jobId: first.jobId, disposition: 'debounced' });
    const throttled = await enqueueJob(db.prisma, {
      jobType: type,
      payload: {},
      throttle: { key: `${key}-t`, windowMs: 600_000 },
      rateLimit: { key: `${key}-c`, limit: 5, periodMs: 1000 },
    });
    const rows = await db.prisma.$queryRaw<{ id: string; rate_key: string }[]>`
      SELECT id::text, rate_key FROM runledger.job_queue WHERE id = ANY(${[first.jobId, throttled.jobId]}::uuid[])`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.rate_key]))).toEqual({ [first.jobId]: `${key}-b`, [throttled.jobId]: `${key}-c` });
    expect(await bucket(db.prisma, `${key}-b`)).toMatchObject({ max_starts: 4 });
    expect(await bucket(db.prisma, `${key}-c`)).toMatchObject({ max_starts: 5 });
  });

  it('lists only the keys a tenant’s jobs wait for in its scope, counting its own', async () => {
    const { type, key } = fresh();
    const rateLimit = { key, limit: 1, periodMs: 3_600_000, burst: 1 };
    await enqueueJobs(db.prisma, [
      { jobType: type, payload: {}, organizationId: 'org-a', rateLimit },
      { jobType: type, payload: {}, organizationId: 'org-a', rateLimit },
      { jobType: type, payload: {}, organizationId: 'org-b', rateLimit },
    ]);
    const a = await listRateLimits(db.prisma, { scope: organizationScope('org-a') });
    expect(a.items.find((item) => item.key === key)).toMatchObject({ waiting: 2 });
    const c = await listRateLimits(db.prisma, { scope: organizationScope('org-c') });
    expect(c.items.find((item) => item.key === key)).toBeUndefined();
    const all = await listRateLimits(db.prisma, { scope: adminScope() });
    expect(all.items.find((item) => item.key === key)).toMatchObject({ waiting: 3 });
  });

  it('admits no more than the tokens when claims of one key run at once on separate connections', async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 40 }, (_, n) => ({ jobType: type, payload: { n }, rateLimit: { key, limit: 1, periodMs: 3_600_000, burst: 5 } })),
    );
    // The barrier: a transaction holding the key's row, so every claim below reaches it and waits there.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM runledger.rate_limits WHERE key = $1 FOR UPDATE', [key]);
      const clients = Array.from({ length: 8 }, () => db.newClient({ max: 1 }));
      const claims = clients.map((client, i) => claimJobs(client, { workerId: `w${i}`, jobTypes: [type], limit: 2, leaseSeconds: 60 }));
      await waitForLockWaiters(holder, 8);
      await holder.query('COMMIT');
      const claimed = (await Promise.all(claims)).flat();
      expect(claimed).toHaveLength(5);
      expect(new Set(claimed.map((j) => j.jobId)).size).toBe(5);
      expect((await bucket(db.prisma, key))!.tokens).toBeLessThan(0.01);
      await Promise.all(clients.map((client) => client.$disconnect()));
    } finally {
      await holder.end();
    }
  });

  it('workers claim when tokens come back, not at their poll, and never start more than the bucket allows', async () => {
    const { type, key } = fresh();
    // 20 per 400 ms, 5 at once: 60 jobs take about a second; the workers poll once a minute.
    const rateLimit = { key, limit: 20, periodMs: 400, burst: 5 };
    const handler = defineJob(type, z.object({ n: z.number() }), async () => undefined);
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 60 }, (_, n) => ({ jobType: type, payload: { n }, rateLimit })),
      { notify: false },
    );
    const done = countdown(60);
    const workers = await Promise.all(
      Array.from({ length: 4 }, () =>
        startWorker({ db: db.newClient({ max: 4 }), handlers: [handler], concurrency: 8, pollIntervalMs: 60_000, completionBatchMs: 0 }),
      ),
    );
    for (const worker of workers) worker.on('job:success', done.arrive);
    await within(done.promise, 30_000, '60 successes with 60 s polls');
    // From the ledger: the starts (lease times) in any window of one period: at most limit + burst.
    const [row] = await db.prisma.$queryRaw<{ most: number }[]>`
      WITH keyed AS (SELECT id, attempt_started_at FROM runledger.job_queue WHERE rate_key = ${key}),
      starts AS (
        SELECT attempt_started_at AS at FROM keyed WHERE attempt_started_at IS NOT NULL
        UNION ALL
        SELECT a.started_at FROM runledger.job_attempts a JOIN keyed k ON k.id = a.job_id)
      SELECT max((SELECT count(*) FROM starts s2 WHERE s2.at >= s1.at AND s2.at < s1.at + interval '400 milliseconds'))::int AS most
        FROM starts s1`;
    expect(row!.most).toBeGreaterThan(0);
    expect(row!.most).toBeLessThanOrEqual(25);
  }, 60_000);
});
