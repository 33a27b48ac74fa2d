import { describe, expect, it } from 'vitest';
import { ConflictError, enqueueJob, enqueueJobs, type EnqueueJobInput } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { raceInTransactions } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const ORG_A = '0190a3e0-0000-7000-8000-00000000000a';
const ORG_B = '0190a3e0-0000-7000-8000-00000000000b';

async function jobsWithKey(key: string): Promise<{ jobs: number; events: number }> {
  const [row] = await db.prisma.$queryRaw<{ jobs: number; events: number }[]>`
    SELECT count(DISTINCT jq.id)::int AS jobs, count(e.id)::int AS events
      FROM runledger.job_queue jq LEFT JOIN runledger.job_trail e ON e.job_id = jq.id
     WHERE jq.idempotency_key = ${key}`;
  return row!;
}

describe('idempotent enqueue', () => {
  it('answers ten concurrent identical requests with one job', async () => {
    const input: EnqueueJobInput = { jobType: 'invoice.issue', payload: { invoice: 42 }, idempotencyKey: 'invoice-42' };
    // Each request runs in its own transaction on its own connection; all have begun before any inserts.
    const results = await raceInTransactions(db, 10, (tx) => enqueueJob(tx, input));
    expect(new Set(results.map((r) => r.jobId)).size).toBe(1);
    expect(results.filter((r) => r.disposition === 'inserted')).toHaveLength(1);
    expect(results.filter((r) => r.disposition === 'existing')).toHaveLength(9);
    expect(results.every((r) => r.status === 'PENDING' && r.runNumber === 1)).toBe(true);
    expect(await jobsWithKey('invoice-42')).toEqual({ jobs: 1, events: 1 });
  });

  it('answers ten concurrent owned enqueues with one job', async () => {
    const input: EnqueueJobInput = { jobType: 'invoice.issue', payload: { invoice: 43 }, idempotencyKey: 'invoice-43' };
    const clients = Array.from({ length: 10 }, () => db.newClient({ max: 1 }));
    await Promise.all(clients.map((client) => client.$connect()));
    const results = await Promise.all(clients.map((client) => enqueueJob(client, input)));
    expect(new Set(results.map((r) => r.jobId)).size).toBe(1);
    expect(results.filter((r) => r.disposition === 'inserted')).toHaveLength(1);
    expect(await jobsWithKey('invoice-43')).toEqual({ jobs: 1, events: 1 });
  });

  it('refuses a changed payload under the same key and writes nothing', async () => {
    const first = await enqueueJob(db.prisma, { jobType: 'invoice.issue', payload: { invoice: 1 }, idempotencyKey: 'k-1' });
    const error = await enqueueJob(db.prisma, { jobType: 'invoice.issue', payload: { invoice: 2 }, idempotencyKey: 'k-1' }).catch((e) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ code: 'job.idempotency_conflict', category: 'conflict' });
    expect(await jobsWithKey('k-1')).toEqual({ jobs: 1, events: 1 });
    const again = await enqueueJob(db.prisma, { jobType: 'invoice.issue', payload: { invoice: 1 }, idempotencyKey: 'k-1' });
    expect(again).toEqual({ ...first, disposition: 'existing' });
  });

  it('treats a changed priority, attempts or timeout as a different request', async () => {
    const base: EnqueueJobInput = { jobType: 'sync', payload: {}, idempotencyKey: 'k-settings' };
    await enqueueJob(db.prisma, base);
    for (const change of [{ priority: 1 }, { maxAttempts: 2 }, { timeoutSeconds: 10 }]) {
      await expect(enqueueJob(db.prisma, { ...base, ...change })).rejects.toMatchObject({ code: 'job.idempotency_conflict' });
    }
    expect((await enqueueJob(db.prisma, { ...base, priority: 0, maxAttempts: 5, timeoutSeconds: 300 })).disposition).toBe('existing');
  });

  it('compares payloads as JSON, not as text', async () => {
    const first = await enqueueJob(db.prisma, { jobType: 'sync', payload: { a: 1, b: [1, 2] }, idempotencyKey: 'k-order' });
    const second = await enqueueJob(db.prisma, { jobType: 'sync', payload: { b: [1, 2], a: 1 }, idempotencyKey: 'k-order' });
    expect(second).toEqual({ ...first, disposition: 'existing' });
  });

  it('leaves the schedule out of the canonical request', async () => {
    const first = await enqueueJob(db.prisma, { jobType: 'sync', payload: {}, idempotencyKey: 'k-schedule' });
    const second = await enqueueJob(db.prisma, { jobType: 'sync', payload: {}, idempotencyKey: 'k-schedule', delayMs: 60_000 });
    const third = await enqueueJob(db.prisma, { jobType: 'sync', payload: {}, idempotencyKey: 'k-schedule', runAt: new Date(Date.now() + 3_600_000) });
    expect([second.jobId, third.jobId]).toEqual([first.jobId, first.jobId]);
    expect([second.disposition, third.disposition]).toEqual(['existing', 'existing']);
    // The first accepted schedule stands (README, "Deliberate differences from the original").
    const [row] = await db.prisma.$queryRaw<{ due_now: boolean }[]>`
      SELECT next_run_at <= now() AS due_now FROM runledger.job_queue WHERE id = ${first.jobId}::uuid`;
    expect(row!.due_now).toBe(true);
  });

  it('scopes keys by job type and organization', async () => {
    const results = await enqueueJobs(db.prisma, [
      { jobType: 'a', payload: {}, idempotencyKey: 'shared' },
      { jobType: 'b', payload: {}, idempotencyKey: 'shared' },
      { jobType: 'a', payload: {}, organizationId: ORG_A, idempotencyKey: 'shared' },
      { jobType: 'a', payload: {}, organizationId: ORG_B, idempotencyKey: 'shared' },
    ]);
    expect(results.map((r) => r.disposition)).toEqual(['inserted', 'inserted', 'inserted', 'inserted']);
    expect(new Set(results.map((r) => r.jobId)).size).toBe(4);
    const again = await enqueueJob(db.prisma, { jobType: 'a', payload: {}, organizationId: ORG_A, idempotencyKey: 'shared' });
    expect(again.jobId).toBe(results[2]!.jobId);
  });

  it('collapses a key repeated inside one batch', async () => {
    const results = await enqueueJobs(db.prisma, [
      { jobType: 'dup', payload: { n: 1 }, idempotencyKey: 'k-dup' },
      { jobType: 'dup', payload: { n: 2 } },
      { jobType: 'dup', payload: { n: 1 }, idempotencyKey: 'k-dup' },
    ]);
    expect(results.map((r) => r.disposition)).toEqual(['inserted', 'inserted', 'existing']);
    expect(results[2]!.jobId).toBe(results[0]!.jobId);
  });

  it('aborts the whole batch on one conflict', async () => {
    await enqueueJob(db.prisma, { jobType: 'batch', payload: 1, idempotencyKey: 'k-batch' });
    const error = await enqueueJobs(db.prisma, [
      { jobType: 'batch', payload: 'fresh', idempotencyKey: 'k-fresh' },
      { jobType: 'batch', payload: 2, idempotencyKey: 'k-batch' },
    ]).catch((e) => e);
    expect(error).toMatchObject({ code: 'job.idempotency_conflict', details: { index: 1 } });
    expect(await jobsWithKey('k-fresh')).toEqual({ jobs: 0, events: 0 });
  });
});
