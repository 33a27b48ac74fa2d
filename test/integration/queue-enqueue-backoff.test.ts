/**
 * A backoff per enqueue and per workflow step (issue 11): stored on the job
 * row, and used by failJob over the backoff the worker passes from the job
 * type's definition. Precedence: the enqueue's (or step's) > the
 * definition's > DEFAULT_BACKOFF. failJob receives `backoff` exactly as
 * job-execution.ts passes it (`definition.backoff`).
 */
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  ValidationError,
  appendWorkflowSteps,
  claimJobs,
  compareAndReplaySucceededJob,
  completeJob,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  failJob,
  noOrganizationScope,
  workflow,
  type BackoffPolicy,
  type ClaimedJob,
} from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

async function claim(jobType: string): Promise<ClaimedJob> {
  const [claimed] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60 });
  if (!claimed) throw new Error(`nothing of ${jobType} to claim`);
  return claimed;
}

/** Fails the leased job retryably, as a worker whose definition has `backoff` does; returns the scheduled delay. */
async function failAndDelay(lease: ClaimedJob, backoff?: BackoffPolicy): Promise<number> {
  const result = await failJob(db.prisma, { ...lease, error: { code: 'x.down', message: 'down' }, retryable: true, ...(backoff ? { backoff } : {}) });
  expect(result.status).toBe('PENDING');
  // updated_at is the failing statement's now(), so this is the delay exactly as scheduled.
  const [row] = await db.prisma.$queryRaw<{ delay_ms: number }[]>`
    SELECT round(EXTRACT(EPOCH FROM next_run_at - updated_at) * 1000)::int AS delay_ms FROM runledger.job_queue WHERE id = ${lease.jobId}::uuid`;
  return row!.delay_ms;
}

async function makeDue(jobId: string): Promise<void> {
  await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
}

async function storedBackoff(jobId: string): Promise<{ base: number | null; max: number | null }> {
  const [row] = await db.prisma.$queryRaw<{ base: number | null; max: number | null }[]>`
    SELECT backoff_base_ms AS base, backoff_max_ms AS max FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
  return row!;
}

async function jobCount(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;
  return row!.n;
}

async function expectInvalid(promise: Promise<unknown>, code: string, field: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  expect(error).toMatchObject({ code, field });
}

/** A worker's definition backoff far from every enqueue backoff below, so the two cannot be confused. */
const TINY: BackoffPolicy = { baseDelayMs: 1, maxDelayMs: 2 };

describe('a backoff per enqueue', () => {
  it("retries a direct job after its own backoff, doubling per attempt up to its cap, over the worker's", async () => {
    const { jobId } = await enqueueJob(db.prisma, {
      jobType: 'bo.direct',
      payload: {},
      maxAttempts: 5,
      backoff: { baseDelayMs: 200_000, maxDelayMs: 500_000 },
    });
    expect(await storedBackoff(jobId)).toEqual({ base: 200_000, max: 500_000 });
    const ceilings = [200_000, 400_000, 500_000, 500_000];
    for (const [index, ceiling] of ceilings.entries()) {
      const lease = await claim('bo.direct');
      expect(lease.attempt).toBe(index + 1);
      const delay = await failAndDelay(lease, TINY);
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThanOrEqual(ceiling);
      await makeDue(jobId);
    }
  });

  it("computes the row's delay with retryDelayMs's formula: the same jitter gives the same delay as the worker's path", async () => {
    const policy: BackoffPolicy = { baseDelayMs: 12_345, maxDelayMs: 100_000 };
    const stored = await enqueueJob(db.prisma, { jobType: 'bo.same', payload: {}, maxAttempts: 10, backoff: policy });
    const passed = await enqueueJob(db.prisma, { jobType: 'bo.same_passed', payload: {}, maxAttempts: 10 });
    for (const jitter of [0, 0.37, 0.999999]) {
      for (let attempt = 1; attempt <= 5; attempt += 1) {
        const random = vi.spyOn(Math, 'random').mockReturnValue(jitter);
        try {
          const fromRow = await failAndDelay(await claim('bo.same'), TINY);
          const fromWorker = await failAndDelay(await claim('bo.same_passed'), policy);
          expect(fromRow).toBe(fromWorker);
        } finally {
          random.mockRestore();
        }
        await makeDue(stored.jobId);
        await makeDue(passed.jobId);
      }
      await db.prisma.$executeRaw`UPDATE runledger.job_queue SET attempt = 0 WHERE id IN (${stored.jobId}::uuid, ${passed.jobId}::uuid)`;
    }
  });

  it('fills a field left out from the default (by name), and stores nothing without a backoff', async () => {
    const partial = await enqueueJob(db.prisma, { jobType: 'bo.partial', payload: {}, backoff: { baseDelayMs: 90_000 } });
    expect(await storedBackoff(partial.jobId)).toEqual({ base: 90_000, max: 3_600_000 });
    const plain = await enqueueJob(db.prisma, { jobType: 'bo.plain', payload: {} });
    expect(await storedBackoff(plain.jobId)).toEqual({ base: null, max: null });
    // No backoff of its own: the worker's (the definition's) applies, as before.
    const delay = await failAndDelay(await claim('bo.plain'), { baseDelayMs: 40_000, maxDelayMs: 40_000 });
    expect(delay).toBeGreaterThanOrEqual(20_000);
    expect(delay).toBeLessThanOrEqual(40_000);
  });

  it("takes precedence over the definition's, completed field by field from it", async () => {
    const def = defineJob('bo.defined', z.object({ n: z.number() }), () => null, { retry: { backoff: { baseDelayMs: 10, maxDelayMs: 9_000_000 } } });
    const own = await enqueueJob(db.prisma, def, { n: 1 }, { backoff: { baseDelayMs: 300_000 } });
    const [batched] = await enqueueJobs(db.prisma, def, [{ payload: { n: 2 }, backoff: { maxDelayMs: 7_000_000 } }]);
    const none = await enqueueJob(db.prisma, def, { n: 3 });
    expect(await storedBackoff(own.jobId)).toEqual({ base: 300_000, max: 9_000_000 });
    expect(await storedBackoff(batched!.jobId)).toEqual({ base: 10, max: 7_000_000 });
    expect(await storedBackoff(none.jobId)).toEqual({ base: null, max: null });

    const first = await claim('bo.defined');
    expect(first.jobId).toBe(own.jobId);
    const ownDelay = await failAndDelay(first, def.backoff);
    expect(ownDelay).toBeGreaterThanOrEqual(150_000);
    expect(ownDelay).toBeLessThanOrEqual(300_000);
    await claim('bo.defined'); // the batched job
    const third = await claim('bo.defined');
    expect(third.jobId).toBe(none.jobId);
    // The definition's backoff (ceiling 10 ms on the first attempt) for the job without its own.
    expect(await failAndDelay(third, def.backoff)).toBeLessThanOrEqual(10);
  });

  it('is part of the idempotent request only when set', async () => {
    const first = await enqueueJob(db.prisma, { jobType: 'bo.idem', payload: {}, idempotencyKey: 'k1', backoff: { baseDelayMs: 5_000 } });
    // The same backoff spelled out in full is the same request.
    const same = await enqueueJob(db.prisma, { jobType: 'bo.idem', payload: {}, idempotencyKey: 'k1', backoff: { baseDelayMs: 5_000, maxDelayMs: 3_600_000 } });
    expect(same).toMatchObject({ jobId: first.jobId, disposition: 'existing' });
    await expect(enqueueJob(db.prisma, { jobType: 'bo.idem', payload: {}, idempotencyKey: 'k1', backoff: { baseDelayMs: 6_000 } })).rejects.toMatchObject({
      code: 'job.idempotency_conflict',
    });
    await expect(enqueueJob(db.prisma, { jobType: 'bo.idem', payload: {}, idempotencyKey: 'k1' })).rejects.toMatchObject({ code: 'job.idempotency_conflict' });
    const plain = await enqueueJob(db.prisma, { jobType: 'bo.idem', payload: {}, idempotencyKey: 'k2' });
    const [row] = await db.prisma.$queryRaw<{ request: Record<string, unknown> }[]>`
      SELECT enqueue_request AS request FROM runledger.job_queue WHERE id = ${plain.jobId}::uuid`;
    // Requests stored before backoffs existed had no such key: a keyed enqueue without one still matches them.
    expect(row!.request).not.toHaveProperty('backoff');
  });

  it.each([
    ['a zero base', { baseDelayMs: 0 }, 'backoff.baseDelayMs'],
    ['a fractional base', { baseDelayMs: 1.5 }, 'backoff.baseDelayMs'],
    ['a negative cap', { maxDelayMs: -1 }, 'backoff.maxDelayMs'],
    ['a cap below the base', { baseDelayMs: 5_000, maxDelayMs: 1_000 }, 'backoff.maxDelayMs'],
    ['a base above the default cap', { baseDelayMs: 4_000_000 }, 'backoff.maxDelayMs'],
    ['an unknown field', { jitter: 0 }, 'backoff.jitter'],
  ])('refuses %s, naming the field, and writes nothing', async (_name, backoff, field) => {
    const before = await jobCount();
    await expectInvalid(enqueueJob(db.prisma, { jobType: 'bo.bad', payload: {}, backoff: backoff as BackoffPolicy }), 'job.invalid_input', field);
    expect(await jobCount()).toBe(before);
  });

  it("refuses a definition-form backoff whose cap ends below the base once completed from the definition's", async () => {
    const def = defineJob('bo.defined_bad', z.object({}), () => null, { retry: { backoff: { baseDelayMs: 10, maxDelayMs: 20 } } });
    const before = await jobCount();
    await expectInvalid(enqueueJob(db.prisma, def, {}, { backoff: { baseDelayMs: 30 } }), 'job.invalid_input', 'backoff.maxDelayMs');
    expect(await jobCount()).toBe(before);
  });

  it('is enforced by the schema too', async () => {
    await expect(db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, payload, backoff_base_ms, backoff_max_ms)
      VALUES (gen_random_uuid(), 'bo.raw', '{}', 5000, 1000)`).rejects.toThrow(/job_queue_backoff_valid/);
    await expect(db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, payload, backoff_base_ms) VALUES (gen_random_uuid(), 'bo.raw', '{}', 5000)`).rejects.toThrow(
      /job_queue_backoff_valid/,
    );
  });

  it('is copied by a replay of the job', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'bo.replay', payload: {}, backoff: { baseDelayMs: 70_000, maxDelayMs: 80_000 } });
    const lease = await claim('bo.replay');
    await completeJob(db.prisma, { ...lease, output: null });
    const result = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: jobId,
      expectedRunNumber: 1,
      replayRequestKey: 'r1',
      reason: 'again',
    });
    if (result.kind !== 'replayed') throw new Error(`expected a replay, got ${result.kind}`);
    expect(await storedBackoff(result.replay.jobId)).toEqual({ base: 70_000, max: 80_000 });
  });
});

describe('a backoff per workflow step', () => {
  it("reaches the step's job: a root at enqueue, a dependent when released, an appended step", async () => {
    const def = defineJob('bo.wf.def', z.object({}), () => null, { retry: { backoff: { baseDelayMs: 10, maxDelayMs: 8_000_000 } } });
    const run = workflow('bo.wf')
      .job('root', 'bo.wf.root', {}, { backoff: { baseDelayMs: 111_000, maxDelayMs: 222_000 } })
      .job('next', def, {}, { backoff: { baseDelayMs: 400_000 } })
      .afterSuccess('next', ['root'])
      .job('plain', 'bo.wf.plain', {})
      .afterSuccess('plain', ['root'])
      .build();
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, run);
    const steps = await db.prisma.$queryRaw<{ step_key: string; base: number | null; max: number | null }[]>`
      SELECT step_key, backoff_base_ms AS base, backoff_max_ms AS max FROM runledger.workflow_steps
       WHERE workflow_run_id = ${workflowRunId}::uuid ORDER BY step_key`;
    expect(steps).toEqual([
      { step_key: 'next', base: 400_000, max: 8_000_000 },
      { step_key: 'plain', base: null, max: null },
      { step_key: 'root', base: 111_000, max: 222_000 },
    ]);

    const root = await claim('bo.wf.root');
    expect(await storedBackoff(root.jobId)).toEqual({ base: 111_000, max: 222_000 });
    const rootDelay = await failAndDelay(root, TINY);
    expect(rootDelay).toBeGreaterThanOrEqual(55_500);
    expect(rootDelay).toBeLessThanOrEqual(111_000);
    await makeDue(root.jobId);

    const appended = await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [{ kind: 'job', key: 'extra', jobType: 'bo.wf.extra', payload: {}, backoff: { baseDelayMs: 33_000, maxDelayMs: 44_000 } }],
      edges: [],
    });
    const extraJob = appended.steps[0]!.jobId!;
    expect(await storedBackoff(extraJob)).toEqual({ base: 33_000, max: 44_000 });

    await completeJob(db.prisma, { ...(await claim('bo.wf.root')), output: null });
    const next = await claim('bo.wf.def');
    expect(await storedBackoff(next.jobId)).toEqual({ base: 400_000, max: 8_000_000 });
    // The step's backoff over the definition's the worker passes.
    const nextDelay = await failAndDelay(next, def.backoff);
    expect(nextDelay).toBeGreaterThanOrEqual(200_000);
    expect(nextDelay).toBeLessThanOrEqual(400_000);
    const plain = await claim('bo.wf.plain');
    expect(await storedBackoff(plain.jobId)).toEqual({ base: null, max: null });
  });

  it('refuses an invalid step backoff naming the field, and writes nothing', async () => {
    const runs = async () => (await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_runs`)[0]!.n;
    const [runsBefore, jobsBefore] = [await runs(), await jobCount()];
    await expectInvalid(
      enqueueWorkflowRun(db.prisma, {
        workflowType: 'bo.wf_bad',
        steps: [{ key: 'a', kind: 'job', jobType: 'x', payload: {}, backoff: { baseDelayMs: 9, maxDelayMs: 3 } }],
      }),
      'workflow.invalid_input',
      'steps.0.backoff.maxDelayMs',
    );
    await expectInvalid(
      enqueueWorkflowRun(db.prisma, { workflowType: 'bo.wf_bad', steps: [{ key: 'a', kind: 'external', backoff: { baseDelayMs: 9 } } as never] }),
      'workflow.external_step_job_settings',
      'steps.0.backoff',
    );
    expect(await runs()).toBe(runsBefore);
    expect(await jobCount()).toBe(jobsBefore);
  });

  it('keeps a step backoff in the idempotent run request only when set', async () => {
    const build = (base: number) =>
      workflow('bo.wf_idem')
        .job('a', 'bo.wf_idem.a', {}, { backoff: { baseDelayMs: base } })
        .idempotencyKey('i1')
        .build();
    const first = await enqueueWorkflowRun(db.prisma, build(1_000));
    expect(await enqueueWorkflowRun(db.prisma, build(1_000))).toMatchObject({ workflowRunId: first.workflowRunId });
    await expect(enqueueWorkflowRun(db.prisma, build(2_000))).rejects.toMatchObject({ code: 'workflow.idempotency_conflict' });
  });
});
