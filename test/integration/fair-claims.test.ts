/**
 * Fair claiming (src/queue/statements/fair-turns.ts, migration 20270101000003_fair_claims): jobs that name a
 * fairness key take turns per key within a priority, `weight` jobs of a key per round, the jobs without a key
 * taking one turn as one more key; a client's consecutive claims walk the keys from where the last stopped.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  claimJobs,
  compareAndReplaySucceededJob,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  getJob,
  getQueueMetrics,
  isRunledgerError,
  noOrganizationScope,
  type ClaimedJob,
  type Db,
} from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { countdown, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

let counter = 0;
/** A job type of this test alone, so tests sharing the database never meet. */
const freshType = (): string => {
  counter += 1;
  return `fair.t${counter}.${Date.now()}`;
};

async function claim(jobType: string | undefined, limit: number, client: Db = db.prisma): Promise<ClaimedJob[]> {
  return claimJobs(client, { workerId: 'w', ...(jobType === undefined ? {} : { jobTypes: [jobType] }), limit, leaseSeconds: 60 });
}

/** `n` jobs of `jobType` for each key (null: no key), enqueued in key order. */
async function backlog(jobType: string, perKey: [string | null, number, number?][]): Promise<void> {
  const jobs = perKey.flatMap(([key, n, weight]) =>
    Array.from({ length: n }, (_, i) => ({
      jobType,
      payload: { key, i },
      ...(key === null ? {} : { fairness: { key, ...(weight === undefined ? {} : { weight }) } }),
    })),
  );
  await enqueueJobs(db.prisma, jobs, { notify: false });
}

const keysOf = (jobs: ClaimedJob[]): (string | null)[] => jobs.map((job) => job.fairKey);
const countBy = (keys: (string | null)[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const key of keys) counts[String(key)] = (counts[String(key)] ?? 0) + 1;
  return counts;
};

describe('fair claiming', () => {
  it("takes turns between keys: a big backlog does not hold back a small key's jobs", async () => {
    const type = freshType();
    await backlog(type, [['a', 200]]);
    await backlog(type, [
      ['b', 3],
      ['c', 3],
    ]);
    const first = await claim(type, 6);
    expect(countBy(keysOf(first))).toEqual({ a: 2, b: 2, c: 2 });
    const second = await claim(type, 6);
    // Each key's share is a third of the claim: b and c have one job left, so this claim comes back short.
    expect(countBy(keysOf(second))).toEqual({ a: 2, b: 1, c: 1 });
    // The keys' own order holds inside each key: oldest first.
    const bJobs = [...first, ...second].filter((job) => job.fairKey === 'b').map((job) => (job.payload as { i: number }).i);
    expect(bJobs).toEqual([0, 1, 2]);
  });

  it('gives a key of weight w w turns per round, and the unkeyed jobs one turn as one more key', async () => {
    const type = freshType();
    await backlog(type, [
      ['heavy', 50, 3],
      ['light', 50, 1],
      [null, 50],
    ]);
    const jobs = await claim(type, 10);
    expect(jobs).toHaveLength(10);
    const counts = countBy(keysOf(jobs));
    // Round by round: heavy 3, light 1, unkeyed 1 (5 a round), two rounds.
    expect(counts).toEqual({ heavy: 6, light: 2, null: 2 });
  });

  it('keeps priority first: a higher-priority job of a busy key comes before other keys’ turns', async () => {
    const type = freshType();
    await backlog(type, [
      ['a', 5],
      ['b', 5],
    ]);
    await enqueueJob(db.prisma, { jobType: type, payload: { urgent: true }, priority: 10, fairness: { key: 'a' } });
    const [firstJob] = await claim(type, 1);
    expect(firstJob!.payload).toEqual({ urgent: true });
  });

  it("walks more keys than a claim takes from the last claim's key on, so every key gets its turn", async () => {
    const type = freshType();
    const keys = Array.from({ length: 30 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    await backlog(
      type,
      keys.map((key) => [key, 2] as [string, number]),
    );
    const client = db.newClient({ max: 1 });
    const seen: (string | null)[] = [];
    for (let i = 0; i < 3; i += 1) seen.push(...keysOf(await claim(type, 10, client)));
    // Three claims of 10: one job of each of the 30 keys, none twice before every key had one.
    expect(new Set(seen).size).toBe(30);
    expect(seen).toHaveLength(30);
  });

  it('claims fair jobs without a type filter too, in turns', async () => {
    // Every type's jobs are this claim's: the earlier tests' leftovers (keys a, b, c, heavy, k00..k29, ...) are
    // moved out of reach; the walk passes over those keys, which have nothing due, without counting them.
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() + interval '1 day' WHERE claimable`;
    const type = freshType();
    await backlog(type, [
      ['u1', 20],
      ['u2', 20],
    ]);
    const jobs = await claim(undefined, 4);
    expect(jobs.every((job) => job.jobType === type)).toBe(true);
    expect(countBy(keysOf(jobs))).toEqual({ u1: 2, u2: 2 });
  });

  it('never hands one job to two concurrent claims, and a claim skips the rows another holds', async () => {
    const type = freshType();
    await backlog(type, [
      ['a', 40],
      ['b', 40],
    ]);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let firstJobs: ClaimedJob[] = [];
    let claimedInside!: () => void;
    const inside = new Promise<void>((resolve) => {
      claimedInside = resolve;
    });
    const holder = db.prisma.$transaction(async (tx) => {
      firstJobs = await claimJobs(tx as unknown as Db, { workerId: 'w1', jobTypes: [type], limit: 10, leaseSeconds: 60 });
      claimedInside();
      await held; // the first claim's rows stay locked until the second claim has run
    });
    await inside;
    const second = await claimJobs(db.newClient({ max: 1 }), { workerId: 'w2', jobTypes: [type], limit: 10, leaseSeconds: 60 });
    release();
    await holder;
    const ids = [...firstJobs, ...second].map((job) => job.jobId);
    expect(new Set(ids).size).toBe(20);
    expect(countBy(keysOf(second))).toEqual({ a: 5, b: 5 });
  });

  it('refuses a bad fairness key or weight, naming the field, and writes nothing', async () => {
    const type = freshType();
    const bad: [unknown, string][] = [
      [{ key: '' }, 'fairness.key'],
      [{ key: '   ' }, 'fairness.key'],
      [{ key: 'k'.repeat(513) }, 'fairness.key'],
      [{ key: 'k', weight: 0 }, 'fairness.weight'],
      [{ key: 'k', weight: -1 }, 'fairness.weight'],
      [{ key: 'k', weight: 1.5 }, 'fairness.weight'],
      [{ key: 'k', weight: Number.NaN }, 'fairness.weight'],
      [{ key: 'k', weight: 1001 }, 'fairness.weight'],
      [{ key: 'k', extra: 1 }, 'fairness.extra'],
      [{ weight: 2 }, 'fairness.key'],
    ];
    for (const [fairness, field] of bad) {
      const error = await enqueueJob(db.prisma, { jobType: type, payload: {}, fairness } as never).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'job.invalid_input'), JSON.stringify(fairness)).toBe(true);
      expect((error as { field?: string }).field, JSON.stringify(fairness)).toBe(field);
    }
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${type}`;
    expect(row!.n).toBe(0);
  });

  it("takes a definition's key from the payload and organization; debounce and replay keep a job's key", async () => {
    const type = freshType();
    const definition = defineJob(type, z.object({ n: z.number() }), async () => undefined, {
      fairness: { key: (_payload: { n: number }, job: { organizationId: string | null }) => `tenant:${job.organizationId ?? 'none'}`, weight: 2 },
    });
    const a = await enqueueJob(db.prisma, definition, { n: 1 }, { organizationId: 'org-a' });
    const none = await enqueueJob(db.prisma, definition, { n: 2 });
    expect((await getJob(db.prisma, { scope: adminScope(), jobId: a.jobId })).fairKey).toBe('tenant:org-a');
    expect((await getJob(db.prisma, { scope: adminScope(), jobId: none.jobId })).fairKey).toBe('tenant:none');
    const [stored] = await db.prisma.$queryRaw<{ weight: number }[]>`SELECT fair_weight AS weight FROM runledger.job_queue WHERE id = ${a.jobId}::uuid`;
    expect(stored!.weight).toBe(2);
    const debounced = await enqueueJob(db.prisma, {
      jobType: `${type}.d`,
      payload: {},
      fairness: { key: 'deb' },
      debounce: { key: `deb-${type}`, windowMs: 60_000 },
    });
    expect((await getJob(db.prisma, { scope: adminScope(), jobId: debounced.jobId })).fairKey).toBe('deb');
    // A replay of a successful job takes its turns with the same key.
    const source = await enqueueJob(db.prisma, { jobType: `${type}.r`, payload: {}, fairness: { key: 'rep', weight: 4 } });
    const [claimed] = await claim(`${type}.r`, 1);
    expect(claimed!.fairKey).toBe('rep');
    await completeJobs(db.prisma, [{ ...claimed! }]);
    const replay = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: source.jobId,
      expectedRunNumber: 1,
      replayRequestKey: `replay-${type}`,
      reason: 'again',
    });
    expect(replay.kind).toBe('replayed');
    const [replayRow] = await db.prisma.$queryRaw<{ fair_key: string; fair_weight: number }[]>`
      SELECT fair_key, fair_weight FROM runledger.job_queue WHERE id = ${replay.kind === 'replayed' ? replay.replay.jobId : null}::uuid`;
    expect(replayRow).toEqual({ fair_key: 'rep', fair_weight: 4 });
  });

  it("counts fair jobs in getQueueMetrics' PENDING and runnable counts", async () => {
    const type = freshType();
    await backlog(type, [
      ['m1', 3],
      [null, 2],
    ]);
    const metrics = await getQueueMetrics(db.prisma, { scope: adminScope() });
    const row = metrics.byType.find((t) => t.jobType === type);
    expect(row).toMatchObject({ pending: 5, runnable: 5 });
  });

  it('a worker drains a fair backlog at full slots (a short fair claim claims again)', async () => {
    const type = freshType();
    await backlog(type, [
      ['w1', 30],
      ['w2', 2],
    ]);
    const done = countdown(32);
    const handler = defineJob(type, z.unknown(), async () => null);
    const worker = await startWorker({ db: db.newClient({ max: 4 }), handlers: [handler], concurrency: 8, pollIntervalMs: 60_000 });
    worker.on('job:success', done.arrive);
    await within(done.promise, 20_000, '32 fair jobs with a 60 s poll');
    const [left] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${type} AND status <> 'SUCCEEDED'`;
    expect(left!.n).toBe(0);
  });
});
