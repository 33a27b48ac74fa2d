import { describe, expect, it } from 'vitest';
import {
  ValidationError,
  cancelJob,
  claimJobs,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  failJob,
  heartbeatJob,
  listJobs,
  type EnqueueJobInput,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const JOB_ID = '0190a3e0-0000-7000-8000-0000000000aa';
const lease = { jobId: JOB_ID, runNumber: 1, attempt: 1, workerId: 'w1' };

async function counts(): Promise<{ jobs: number; events: number }> {
  const [row] = await db.prisma.$queryRaw<{ jobs: number; events: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.job_queue) AS jobs, (SELECT count(*)::int FROM runledger.job_trail) AS events`;
  return row!;
}

async function expectInvalid(promise: Promise<unknown>, field: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  expect(error).toMatchObject({ code: 'job.invalid_input', field, category: 'validation' });
}

const valid: EnqueueJobInput = { jobType: 'email.send', payload: { to: 'x' } };
const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;

describe('queue input validation', () => {
  it.each([
    ['a blank job type', { ...valid, jobType: '   ' }, 'jobType'],
    ['a non-integer priority', { ...valid, priority: 1.5 }, 'priority'],
    ['max attempts below 1', { ...valid, maxAttempts: 0 }, 'maxAttempts'],
    ['a payload with a function', { ...valid, payload: { f: () => 1 } }, 'payload.f'],
    ['a payload with a bigint', { ...valid, payload: { n: 1n } }, 'payload.n'],
    ['a cyclic payload', { ...valid, payload: cyclic }, 'payload.self'],
    ['a payload with a Date', { ...valid, payload: { at: new Date() } }, 'payload.at'],
    ['a missing payload', { jobType: 'x' }, 'payload'],
    ['an idempotency key over 512 bytes', { ...valid, idempotencyKey: 'é'.repeat(257) }, 'idempotencyKey'],
    ['a blank idempotency key', { ...valid, idempotencyKey: ' ' }, 'idempotencyKey'],
    ['a timeout of zero', { ...valid, timeoutSeconds: 0 }, 'timeoutSeconds'],
    ['an empty organization id', { ...valid, organizationId: '' }, 'organizationId'],
    ['an organization id over 255 characters', { ...valid, organizationId: 'o'.repeat(256) }, 'organizationId'],
    ['an organization id with NUL', { ...valid, organizationId: 'org\u0000' }, 'organizationId'],
    ['both runAt and delayMs', { ...valid, runAt: new Date(), delayMs: 5 }, 'runAt'],
    ['a negative delay', { ...valid, delayMs: -1 }, 'delayMs'],
    ['an unknown option, named itself', { ...valid, maxAttempt: 3 }, 'maxAttempt'],
  ])('refuses %s, naming the field, and writes nothing', async (_name, input, field) => {
    const before = await counts();
    await expectInvalid(enqueueJob(db.prisma, input as EnqueueJobInput), field);
    expect(await counts()).toEqual(before);
  });

  it('accepts a key of exactly 512 bytes', async () => {
    const result = await enqueueJob(db.prisma, { ...valid, idempotencyKey: 'é'.repeat(256) });
    expect(result.disposition).toBe('inserted');
  });

  it('names the batch index of a bad item and writes none of the batch', async () => {
    const before = await counts();
    await expectInvalid(enqueueJobs(db.prisma, [valid, valid, { ...valid, payload: undefined as never }]), '2.payload');
    expect(await counts()).toEqual(before);
  });

  it('refuses bad claim, lifecycle, cancel and list inputs before touching the database', async () => {
    await expectInvalid(claimJobs(db.prisma, { workerId: ' ', limit: 1, leaseSeconds: 30 }), 'workerId');
    await expectInvalid(claimJobs(db.prisma, { workerId: 'w', limit: 0, leaseSeconds: 30 }), 'limit');
    await expectInvalid(claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30, jobTypes: [] }), 'jobTypes');
    await expectInvalid(heartbeatJob(db.prisma, { ...lease, attempt: 0 }), 'attempt');
    await expectInvalid(heartbeatJob(db.prisma, { ...lease, save: { progress: { n: Number.NaN } } }), 'save.progress.n');
    await expectInvalid(failJob(db.prisma, { ...lease, error: { code: '', message: 'm' }, retryable: true }), 'error.code');
    await expectInvalid(failJob(db.prisma, { ...lease, jobId: 'nope', error: { code: 'c', message: 'm' }, retryable: true }), 'jobId');
    await expectInvalid(completeJobs(db.prisma, [lease, lease]), '1.jobId');
    await expectInvalid(cancelJob(db.prisma, { jobId: JOB_ID, scope: { kind: 'organization', organizationId: '' } as never }), 'scope.organizationId');
    await expectInvalid(listJobs(db.prisma, { scope: { kind: 'admin' }, limit: 100_000 }), 'limit');
  });
});
