/**
 * Concurrency keys (src/queue/statements/concurrency-slots.ts, migration 20270101000000_concurrency_keys): at
 * most the key's limit of its jobs LEASED at once, across claims, workers and clients; a job over the limit
 * stays PENDING at attempt 0 and takes no claim slot; every way a lease ends frees its slot (a canceled one
 * once it has run out); the limit is a row an operator can change while jobs run.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  cancelWorkflowRun,
  recoverWorkflowRun,
  appendWorkflowSteps,
  enqueueWorkflowRun,
  enqueueWorkflowRuns,
  workflow,
  cancelJob,
  claimJobs,
  compareAndReplaySucceededJob,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  failJob,
  isRunledgerError,
  listConcurrencyLimits,
  noOrganizationScope,
  organizationScope,
  reapExpiredLeases,
  releaseJob,
  setConcurrencyLimit,
  verifyIntegrity,
  type ClaimedJob,
} from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { countdown, latch, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

let counter = 0;
/** A job type and a key of this test alone, so tests sharing the database never meet. */
const fresh = (): { type: string; key: string } => {
  counter += 1;
  return { type: `conc.t${counter}`, key: `conc-key-${counter}-${Date.now()}` };
};

async function claim(jobType: string, limit = 10): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds: 60, markRunning: true });
}

async function keyRow(key: string): Promise<{ max_leased: number; leased: number; set_by: string } | undefined> {
  const [row] = await db.prisma.$queryRaw<{ max_leased: number; leased: number; set_by: string }[]>`
    SELECT max_leased, leased, set_by FROM runledger.concurrency_slots WHERE key = ${key}`;
  return row;
}

async function leaseRows(key: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_leases WHERE concurrency_key = ${key}`;
  return row!.n;
}

async function jobCount(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;
  return row!.n;
}

describe('concurrency keys', () => {
  it('refuses a bad key or limit, naming the field, and writes nothing', async () => {
    const before = await jobCount();
    const bad: [unknown, string][] = [
      [{ key: '', limit: 2 }, 'concurrency.key'],
      [{ key: '   ', limit: 2 }, 'concurrency.key'],
      [{ key: 'k'.repeat(513), limit: 2 }, 'concurrency.key'],
      [{ key: 'k', limit: 0 }, 'concurrency.limit'],
      [{ key: 'k', limit: -1 }, 'concurrency.limit'],
      [{ key: 'k', limit: 1.5 }, 'concurrency.limit'],
      [{ key: 'k', limit: Number.NaN }, 'concurrency.limit'],
      [{ key: 'k', limit: 100_001 }, 'concurrency.limit'],
      [{ key: 'k', limit: '3' }, 'concurrency.limit'],
      [{ key: 'k' }, 'concurrency.limit'],
      [{ key: 'k', limit: 2, extra: true }, 'concurrency.extra'],
    ];
    for (const [concurrency, field] of bad) {
      const error = await enqueueJob(db.prisma, { jobType: 'conc.invalid', payload: {}, concurrency } as never).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'job.invalid_input'), JSON.stringify(concurrency)).toBe(true);
      expect((error as { field?: string }).field, JSON.stringify(concurrency)).toBe(field);
    }
    // One batch, one limit per key: the key's row takes one value.
    const batch = await enqueueJobs(db.prisma, [
      { jobType: 'conc.invalid', payload: {}, concurrency: { key: 'conc-batch', limit: 2 } },
      { jobType: 'conc.invalid', payload: {}, concurrency: { key: 'conc-batch', limit: 3 } },
    ]).catch((e: unknown) => e);
    expect((batch as { field?: string }).field).toBe('1.concurrency.limit');
    expect(await jobCount()).toBe(before);
    expect(await keyRow('conc-batch')).toBeUndefined();
    for (const [input, field] of [
      [{ key: '', limit: 2 }, 'key'],
      [{ key: 'k', limit: 0 }, 'limit'],
      [{ key: 'k' }, 'limit'],
    ] as const) {
      const error = await setConcurrencyLimit(db.prisma, input as never).catch((e: unknown) => e);
      expect((error as { field?: string }).field).toBe(field);
    }
    const unknownKey = await setConcurrencyLimit(db.prisma, { key: 'conc-never-named', limit: null }).catch((e: unknown) => e);
    expect(isRunledgerError(unknownKey, 'job.concurrency_key_not_found')).toBe(true);
  });

  it('leaves no limit row behind when an idempotency conflict refuses the enqueue in a host transaction', async () => {
    const { type, key } = fresh();
    await enqueueJob(db.prisma, { jobType: type, payload: { n: 1 }, idempotencyKey: `${key}-idem` });
    const runKey = `${key}-run`;
    await enqueueWorkflowRun(db.prisma, { ...workflow('conc.idem').job('a', type, {}).build(), idempotencyKey: runKey });
    await db.prisma.$transaction(async (tx) => {
      const job = await enqueueJob(tx, { jobType: type, payload: { n: 2 }, idempotencyKey: `${key}-idem`, concurrency: { key: `${key}-new`, limit: 2 } }).catch(
        (e: unknown) => e,
      );
      expect(isRunledgerError(job, 'job.idempotency_conflict')).toBe(true);
      const batch = await enqueueJobs(tx, [
        { jobType: type, payload: { n: 3 }, concurrency: { key: `${key}-batch`, limit: 2 }, idempotencyKey: `${key}-fresh` },
        { jobType: type, payload: { n: 2 }, idempotencyKey: `${key}-idem` },
      ]).catch((e: unknown) => e);
      expect(isRunledgerError(batch, 'job.idempotency_conflict')).toBe(true);
      const runs = await enqueueWorkflowRuns(tx, [
        {
          ...workflow('conc.idem')
            .job('a', type, {}, { concurrency: { key: `${key}-wf`, limit: 2 } })
            .build(),
          idempotencyKey: `${runKey}-fresh`,
        },
        { ...workflow('conc.idem').job('b', type, {}).build(), idempotencyKey: runKey },
      ]).catch((e: unknown) => e);
      expect(isRunledgerError(runs, 'workflow.idempotency_conflict')).toBe(true);
    });
    for (const suffix of ['new', 'batch', 'wf']) expect(await keyRow(`${key}-${suffix}`)).toBeUndefined();
    // The same calls without the conflict write their keys' rows.
    await db.prisma.$transaction(async (tx) => {
      await enqueueJobs(tx, [{ jobType: type, payload: { n: 3 }, concurrency: { key: `${key}-batch`, limit: 2 }, idempotencyKey: `${key}-fresh` }]);
      await enqueueWorkflowRuns(tx, [
        {
          ...workflow('conc.idem')
            .job('a', type, {}, { concurrency: { key: `${key}-wf`, limit: 2 } })
            .build(),
          idempotencyKey: `${runKey}-fresh`,
        },
      ]);
    });
    for (const suffix of ['batch', 'wf']) expect(await keyRow(`${key}-${suffix}`)).toMatchObject({ max_leased: 2 });
  });

  it('leases at most the limit per key, in claim order, and leaves the rest PENDING without taking claim slots', async () => {
    const { type, key } = fresh();
    const jobs = await enqueueJobs(db.prisma, [
      ...[1, 2, 3, 4, 5].map((n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 2 } })),
      ...[6, 7, 8].map((n) => ({ jobType: type, payload: { n } })),
    ]);
    const first = await claim(type, 5);
    // Keys 1 and 2 (the first of the key in claim order), then the unkeyed jobs fill the claim.
    expect(first.map((j) => (j.payload as { n: number }).n).sort((a, b) => a - b)).toEqual([1, 2, 6, 7, 8]);
    expect(await keyRow(key)).toMatchObject({ max_leased: 2, leased: 2, set_by: 'enqueue' });
    expect(await leaseRows(key)).toBe(2);
    expect(await claim(type)).toEqual([]);
    const [waiting] = await db.prisma.$queryRaw<{ n: number; attempts: number }[]>`
      SELECT count(*)::int AS n, max(attempt)::int AS attempts FROM runledger.job_queue
       WHERE id = ANY(${jobs.slice(2, 5).map((j) => j.jobId)}::uuid[]) AND status = 'PENDING'`;
    expect(waiting).toEqual({ n: 3, attempts: 0 });
    const listed = await listConcurrencyLimits(db.prisma, { scope: adminScope() });
    expect(listed.items.find((item) => item.key === key)).toMatchObject({ limit: 2, leased: 2, waiting: 3, setBy: 'enqueue' });
  });

  it('frees a slot on completion, failure, release and reaping; a canceled lease holds it until it runs out', async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      [1, 2, 3, 4, 5, 6].map((n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 1 }, maxAttempts: 5 })),
    );
    const take = async (): Promise<ClaimedJob> => {
      const jobs = await claim(type);
      expect(jobs).toHaveLength(1);
      expect(await claim(type)).toEqual([]);
      return jobs[0]!;
    };
    const a = await take();
    await completeJobs(db.prisma, [{ ...a }]);
    const b = await take();
    await failJob(db.prisma, { ...b, error: { code: 'x.fail', message: 'boom' }, retryable: true, retryNotBefore: new Date(Date.now() + 3_600_000) });
    const c = await take();
    await releaseJob(db.prisma, { ...c });
    const d = await take();
    await expireLeases(db.prisma, d.jobId);
    expect((await reapExpiredLeases(db.prisma, { limit: 100 })).retried).toContain(d.jobId);
    const e = await take();
    await cancelJob(db.prisma, { jobId: e.jobId, scope: noOrganizationScope() });
    // The canceled handler may still run until its lease ends: the slot stays taken.
    expect(await claim(type)).toEqual([]);
    expect(await keyRow(key)).toMatchObject({ leased: 1 });
    await expireLeases(db.prisma, e.jobId);
    await reapExpiredLeases(db.prisma, { limit: 100 });
    expect(await keyRow(key)).toMatchObject({ leased: 0 });
    const f = await take();
    await completeJobs(db.prisma, [{ ...f }]);
    expect(await keyRow(key)).toMatchObject({ leased: 0 });
    expect(await leaseRows(key)).toBe(0);
    // A replay repeats the work under the same key.
    const replay = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: f.jobId,
      expectedRunNumber: 1,
      replayRequestKey: `replay-${key}`,
      reason: 'again',
    });
    const [replayed] = await db.prisma.$queryRaw<{ concurrency_key: string }[]>`
      SELECT concurrency_key FROM runledger.job_queue WHERE id = ${replay.kind === 'replayed' ? replay.replay.jobId : null}::uuid`;
    expect(replayed).toEqual({ concurrency_key: key });
  });

  it('changes at runtime: an operator pins the limit, enqueues set it only while it is theirs', async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      [1, 2, 3, 4, 5, 6].map((n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 1 } })),
    );
    expect(await claim(type)).toHaveLength(1);
    const raised = await setConcurrencyLimit(db.prisma, { key, limit: 3 });
    expect(raised).toMatchObject({ key, limit: 3, leased: 1, waiting: 5, setBy: 'operator' });
    expect(await claim(type)).toHaveLength(2);
    // An enqueue naming another limit does not undo the operator's.
    await enqueueJob(db.prisma, { jobType: type, payload: { n: 7 }, concurrency: { key, limit: 1 } });
    expect(await keyRow(key)).toMatchObject({ max_leased: 3, set_by: 'operator' });
    // Lowered below what is leased: no lease is taken back, none is added until enough end.
    const lowered = await setConcurrencyLimit(db.prisma, { key, limit: 2 });
    expect(lowered).toMatchObject({ limit: 2, leased: 3 });
    expect(await claim(type)).toEqual([]);
    // Given back: the next enqueue's limit applies.
    expect(await setConcurrencyLimit(db.prisma, { key, limit: null })).toMatchObject({ limit: 2, setBy: 'enqueue' });
    await enqueueJob(db.prisma, { jobType: type, payload: { n: 8 }, concurrency: { key, limit: 5 } });
    expect(await keyRow(key)).toMatchObject({ max_leased: 5, set_by: 'enqueue' });
    expect(await claim(type)).toHaveLength(2);
    // Each raise created only the seats above the key's count, so no held seat was made free again.
    const [seats] = await db.prisma.$queryRaw<{ seats: number; free: number[]; held: number[] }[]>`
      SELECT k.seats,
             ARRAY(SELECT s.seat FROM runledger.concurrency_seats s WHERE s.key = k.key ORDER BY s.seat) AS free,
             ARRAY(SELECT l.concurrency_seat FROM runledger.job_leases l WHERE l.concurrency_key = k.key ORDER BY l.concurrency_seat) AS held
        FROM runledger.concurrency_limits k WHERE k.key = ${key}`;
    expect(seats).toEqual({ seats: 5, free: [], held: [1, 2, 3, 4, 5] });
    // A key set before any job names it.
    const preset = `${key}-preset`;
    expect(await setConcurrencyLimit(db.prisma, { key: preset, limit: 4 })).toMatchObject({ limit: 4, leased: 0, waiting: 0 });
  });

  it('takes the key from the definition, computed from the payload, unless the enqueue names one', async () => {
    const { type, key } = fresh();
    const perTenant = defineJob(type, z.object({ tenant: z.string() }), async () => undefined, {
      concurrency: { key: (payload) => `${key}:${payload.tenant}`, limit: 1 },
    });
    await enqueueJob(db.prisma, perTenant, { tenant: 'a' });
    await enqueueJob(db.prisma, perTenant, { tenant: 'a' });
    await enqueueJob(db.prisma, perTenant, { tenant: 'b' });
    await enqueueJobs(db.prisma, perTenant, [{ payload: { tenant: 'c' }, concurrency: { key: `${key}:own`, limit: 2 } }]);
    const claimed = await claim(type);
    expect(claimed.map((j) => (j.payload as { tenant: string }).tenant).sort()).toEqual(['a', 'b', 'c']);
    expect(await keyRow(`${key}:a`)).toMatchObject({ max_leased: 1, leased: 1 });
    expect(await keyRow(`${key}:own`)).toMatchObject({ max_leased: 2, leased: 1 });
    expect(() => defineJob(type, z.object({}), async () => undefined, { concurrency: { key: '', limit: 1 } })).toThrow(/concurrency/);
  });

  it('carries a workflow step’s key to its job, at start, when released later, and when appended', async () => {
    const { type, key } = fresh();
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('conc.wf')
        .job('a', type, { k: 'a' }, { concurrency: { key, limit: 1 } })
        .job('b', type, { k: 'b' }, { concurrency: { key, limit: 1 } })
        .job('c', type, { k: 'c' }, { concurrency: { key: `${key}-later`, limit: 2 } })
        .afterSuccess('c', ['a'])
        .build(),
    );
    // The later step's key has its row from the start, before its job exists.
    expect(await keyRow(`${key}-later`)).toMatchObject({ max_leased: 2, leased: 0 });
    const first = await claim(type);
    expect(first).toHaveLength(1);
    await completeJobs(db.prisma, [{ ...first[0]! }]);
    const next = await claim(type);
    const done = [...first, ...next].map((j) => (j.payload as { k: string }).k);
    if (!done.includes('a')) {
      await completeJobs(
        db.prisma,
        next.map((j) => ({ ...j })),
      );
      next.push(...(await claim(type)));
    }
    const c = next.find((j) => (j.payload as { k: string }).k === 'c') ?? (await claim(type)).find((j) => (j.payload as { k: string }).k === 'c');
    expect(c).toBeDefined();
    expect(await keyRow(`${key}-later`)).toMatchObject({ leased: 1 });
    // Appended: one step released at once, one blocked on another.
    await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [
        { kind: 'job', key: 'now', jobType: type, payload: { k: 'now' }, concurrency: { key: `${key}-ap`, limit: 1 } },
        { kind: 'job', key: 'blocked', jobType: type, payload: { k: 'blocked' }, concurrency: { key: `${key}-ap2`, limit: 3 } },
      ],
      edges: [{ prerequisite: 'now', dependent: 'blocked' }],
    });
    expect(await keyRow(`${key}-ap`)).toMatchObject({ max_leased: 1 });
    expect(await keyRow(`${key}-ap2`)).toMatchObject({ max_leased: 3, leased: 0 });
    const rows = await db.prisma.$queryRaw<{ step_key: string; step_key_c: string | null; job_key: string | null }[]>`
      SELECT ws.step_key, ws.concurrency_key AS step_key_c, jq.concurrency_key AS job_key
        FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${workflowRunId}::uuid ORDER BY ws.step_key`;
    expect(rows).toEqual([
      { step_key: 'a', step_key_c: key, job_key: key },
      { step_key: 'b', step_key_c: key, job_key: key },
      { step_key: 'blocked', step_key_c: `${key}-ap2`, job_key: null },
      { step_key: 'c', step_key_c: `${key}-later`, job_key: `${key}-later` },
      { step_key: 'now', step_key_c: `${key}-ap`, job_key: `${key}-ap` },
    ]);
    const twoLimits = await enqueueWorkflowRun(
      db.prisma,
      workflow('conc.wf')
        .job('a', type, {}, { concurrency: { key, limit: 1 } })
        .job('b', type, {}, { concurrency: { key, limit: 2 } })
        .build(),
    ).catch((e: unknown) => e);
    expect((twoLimits as { field?: string }).field).toBe('steps.1.concurrency.limit');
    // A recovery re-creates the steps with their keys.
    const source = await enqueueWorkflowRun(
      db.prisma,
      workflow('conc.rec')
        .job('x', `${type}.none`, {}, { concurrency: { key: `${key}-rec`, limit: 2 } })
        .build(),
    );
    await cancelWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId: source.workflowRunId });
    const recovered = await recoverWorkflowRun(db.prisma, {
      scope: noOrganizationScope(),
      sourceRunId: source.workflowRunId,
      requestKey: 'conc-rec',
      reason: 'test',
    });
    const [step] = await db.prisma.$queryRaw<{ step_key_c: string; job_key: string }[]>`
      SELECT ws.concurrency_key AS step_key_c, jq.concurrency_key AS job_key
        FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${recovered.recoveryRunId}::uuid`;
    expect(step).toEqual({ step_key_c: `${key}-rec`, job_key: `${key}-rec` });
  });

  it('lists only the keys and counts a tenant’s own jobs hold in its scope', async () => {
    const { type, key } = fresh();
    const orgA = '0195f7a4-1c2d-7000-8000-0000000a0001';
    const orgB = '0195f7a4-1c2d-7000-8000-0000000b0002';
    await enqueueJob(db.prisma, { jobType: type, payload: {}, organizationId: orgA, concurrency: { key, limit: 5 } });
    await enqueueJob(db.prisma, { jobType: type, payload: {}, organizationId: orgB, concurrency: { key, limit: 5 } });
    await enqueueJob(db.prisma, { jobType: type, payload: {}, organizationId: orgB, concurrency: { key, limit: 5 } });
    await enqueueJob(db.prisma, { jobType: type, payload: {}, organizationId: orgB, concurrency: { key: `${key}-b-only`, limit: 5 } });
    await claim(type, 1);
    const forA = await listConcurrencyLimits(db.prisma, { scope: organizationScope(orgA), limit: 500 });
    expect(forA.items.map((item) => item.key)).toEqual([key]);
    const forB = (await listConcurrencyLimits(db.prisma, { scope: organizationScope(orgB), limit: 500 })).items;
    expect(forB.map((item) => item.key)).toEqual([key, `${key}-b-only`]);
    const a = forA.items[0]!;
    const b = forB[0]!;
    expect(a.leased + b.leased).toBe(1);
    expect(a.waiting + b.waiting).toBe(2);
    const blank = await listConcurrencyLimits(db.prisma, { scope: adminScope(), after: '' } as never).catch((e: unknown) => e);
    expect((blank as { field?: string }).field).toBe('after');
  });

  it("is checked by verifyIntegrity: a key's count against its lease rows, a lease row's key against its job", async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      [1, 2, 3].map((n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 3 } })),
    );
    const [a, b] = await claim(type, 2);
    const ofKey = async (kind: string) => (await verifyIntegrity(db.prisma, {})).violations.filter((v) => v.kind === kind && JSON.stringify(v).includes(key));
    expect(await ofKey('concurrency.leased_count')).toEqual([]);
    // A seat both free and held by a lease.
    await db.prisma.$executeRaw`INSERT INTO runledger.concurrency_seats (key, seat)
                                 SELECT concurrency_key, concurrency_seat FROM runledger.job_leases WHERE job_id = ${a!.jobId}::uuid`;
    const counts = await ofKey('concurrency.leased_count');
    expect(counts).toHaveLength(1);
    expect(counts[0]).toMatchObject({ expected: { key, seats: 3 }, found: { key, free: 2, leased: 2, leasesOnFreeOrNoSeat: 1 } });
    await db.prisma.$executeRaw`DELETE FROM runledger.concurrency_seats s USING runledger.job_leases l
                                 WHERE l.job_id = ${a!.jobId}::uuid AND s.key = l.concurrency_key AND s.seat = l.concurrency_seat`;
    // A lease row that names another key than its job's.
    await db.prisma.$executeRaw`UPDATE runledger.job_leases SET concurrency_key = ${`${key}-other`} WHERE job_id = ${b!.jobId}::uuid`;
    const mismatched = (await verifyIntegrity(db.prisma, {})).violations.filter((v) => v.kind === 'lease.job_mismatch' && v.jobId === b!.jobId);
    expect(mismatched).toHaveLength(1);
    // Put back, so the file's other checks see a sound ledger.
    await db.prisma.$executeRaw`UPDATE runledger.job_leases SET concurrency_key = ${key} WHERE job_id = ${b!.jobId}::uuid`;
    expect(await ofKey('concurrency.leased_count')).toEqual([]);
    await completeJobs(db.prisma, [{ ...a! }, { ...b! }]);
    expect(await keyRow(key)).toMatchObject({ leased: 0 });
  });

  it('admits no more than the limit while claims of one key overlap in open transactions on separate connections', async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 40 }, (_, n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 3 } })),
    );
    // Claims never wait for each other (seats are taken with SKIP LOCKED), so the barrier is the transactions:
    // each claim runs while every earlier one is still uncommitted, and all commit together at the end.
    const clients = Array.from({ length: 8 }, () => db.newClient({ max: 1 }));
    const counts: number[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const transactions: Promise<ClaimedJob[]>[] = [];
    try {
      for (const [i, client] of clients.entries()) {
        const claimed = latch();
        transactions.push(
          client.$transaction(async (tx) => {
            const jobs = await claimJobs(tx, { workerId: `w${i}`, jobTypes: [type], limit: 2, leaseSeconds: 60 });
            counts.push(jobs.length);
            claimed.open();
            await released;
            return jobs;
          }),
        );
        await within(claimed.promise, 5_000, `claim ${i}`);
      }
      // While all eight are open: the first took two seats, the second the third, the rest none.
      expect(counts).toEqual([2, 1, 0, 0, 0, 0, 0, 0]);
      release();
      const claimed = (await Promise.all(transactions)).flat();
      expect(new Set(claimed.map((j) => j.jobId)).size).toBe(3);
      expect(await keyRow(key)).toMatchObject({ leased: 3 });
      expect(await leaseRows(key)).toBe(3);
      // Committed: a later claim finds the key full.
      expect(await claim(type, 5)).toEqual([]);
    } finally {
      release();
      await Promise.allSettled(transactions);
      await Promise.all(clients.map((client) => client.$disconnect()));
    }
  });

  it('8 workers, 600 jobs over 10 keys of limit 3: never more than 3 handlers of a key at once, and all done', async () => {
    const { type, key } = fresh();
    const active = new Map<string, number>();
    let over = 0;
    let maxPerKey = 0;
    const waiting: (() => void)[] = [];
    const handler = defineJob(type, z.object({ k: z.string() }), async ({ k }) => {
      const now = (active.get(k) ?? 0) + 1;
      active.set(k, now);
      if (now > 3) over += 1;
      maxPerKey = Math.max(maxPerKey, now);
      // Held until the key is full (or 50 ms): three handlers of a key then overlap whenever three were admitted.
      if (now === 3) for (const wake of waiting.splice(0)) wake();
      else
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          setTimeout(resolve, 50);
        });
      active.set(k, active.get(k)! - 1);
    });
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 600 }, (_, n) => ({ jobType: type, payload: { k: `${key}-${n % 10}` }, concurrency: { key: `${key}-${n % 10}`, limit: 3 } })),
      { notify: false },
    );
    const done = countdown(600);
    const workers = await Promise.all(
      Array.from({ length: 8 }, () =>
        startWorker({ db: db.newClient({ max: 4 }), handlers: [handler], concurrency: 8, pollIntervalMs: 100, completionBatchMs: 0 }),
      ),
    );
    for (const worker of workers) worker.on('job:success', done.arrive);
    await within(done.promise, 120_000, '600 successes');
    expect(over).toBe(0);
    expect(maxPerKey).toBe(3); // the limit was reached, not only respected
    const [row] = await db.prisma.$queryRaw<{ leased: number }[]>`
      SELECT COALESCE(sum(leased), 0)::int AS leased FROM runledger.concurrency_slots WHERE key LIKE ${`${key}-%`}`;
    expect(row!.leased).toBe(0);
  }, 180_000);
});
