/**
 * Client-safe errors leak no keys: idempotency and replay keys are request
 * identifiers a client may treat as secrets, so conflicts keep them in
 * `sensitiveDetails`, which toJSON(), JSON.stringify and util.inspect never show.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { adminScope, claimJobs, completeJob, enqueueJob, enqueueWorkflowRun, RunledgerError, workflow } from '../../src/index.js';
import { compareAndReplaySucceededJob } from '../../src/replay/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

async function conflict(promise: Promise<unknown>): Promise<RunledgerError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(RunledgerError);
    return error as RunledgerError;
  }
  throw new Error('expected a conflict');
}

function expectNoKey(error: RunledgerError, key: string): void {
  expect(JSON.stringify(error.toJSON())).not.toContain(key);
  expect(JSON.stringify(error)).not.toContain(key);
  expect(JSON.stringify({ error })).not.toContain(key);
  expect(inspect(error)).not.toContain(key);
  expect(inspect(error, { depth: Infinity })).not.toContain(key);
  expect(error.message).not.toContain(key);
  expect(error.internalMessage).not.toContain(key);
  expect(String(error.stack)).not.toContain(key);
}

describe('errors leak no idempotency or replay keys', () => {
  it('job.idempotency_conflict', async () => {
    const key = 'secret-job-key-4f1c';
    await enqueueJob(db.prisma, { jobType: 'keys.job', payload: { a: 1 }, idempotencyKey: key });
    const error = await conflict(enqueueJob(db.prisma, { jobType: 'keys.job', payload: { a: 2 }, idempotencyKey: key }));
    expect(error.code).toBe('job.idempotency_conflict');
    expectNoKey(error, key);
    expect(error.sensitiveDetails).toEqual({ idempotencyKey: key });
  });

  it('workflow.idempotency_conflict', async () => {
    const key = 'secret-run-key-9a2e';
    await enqueueWorkflowRun(db.prisma, workflow('keys.run').idempotencyKey(key).external('a').build());
    const error = await conflict(enqueueWorkflowRun(db.prisma, workflow('keys.run').idempotencyKey(key).external('b').build()));
    expect(error.code).toBe('workflow.idempotency_conflict');
    expectNoKey(error, key);
    expect(error.sensitiveDetails).toEqual({ idempotencyKey: key });
  });

  it('job.replay_idempotency_conflict', async () => {
    const key = 'secret-replay-key-c07d';
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'keys.replay', payload: {} });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['keys.replay'], limit: 1, leaseSeconds: 60 });
    await completeJob(db.prisma, { ...lease!, output: { ok: true } });
    const request = { scope: adminScope(), sourceJobId: jobId, expectedRunNumber: 1, replayRequestKey: key };
    await compareAndReplaySucceededJob(db.prisma, { ...request, reason: 'first' });
    const error = await conflict(compareAndReplaySucceededJob(db.prisma, { ...request, reason: 'second' }));
    expect(error.code).toBe('job.replay_idempotency_conflict');
    expectNoKey(error, key);
    expect(error.sensitiveDetails).toEqual({ replayRequestKey: key });
  });

  it('keeps sensitiveDetails out of every serialisation of any RunledgerError', () => {
    const error = new RunledgerError('conflict', 'job.idempotency_conflict', 'safe', { details: { shown: 1 }, sensitiveDetails: { hidden: 'xyz-hidden' } });
    expect(error.toJSON()).toEqual({ name: 'RunledgerError', code: 'job.idempotency_conflict', category: 'conflict', message: 'safe', details: { shown: 1 } });
    expect(Object.keys(error)).not.toContain('sensitiveDetails');
    expect(inspect(error)).not.toContain('xyz-hidden');
    expect(error.sensitiveDetails).toEqual({ hidden: 'xyz-hidden' });
    expect(Object.isFrozen(error.sensitiveDetails)).toBe(true);
  });
});
