import { describe, expect, it } from 'vitest';
import { ValidationError, claimJobs, completeJob, enqueueJob, failJob, getJob, noOrganizationScope, type Db, type Job } from '../../src/index.js';
import { compareAndReplaySucceededJob, compareAndRequeueJob } from '../../src/replay/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

async function finishedJob(jobType: string, outcome: 'succeed' | 'fail'): Promise<Job> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: {} });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60 });
  if (outcome === 'succeed') await completeJob(db.prisma, lease!);
  else await failJob(db.prisma, { ...lease!, error: { code: 'x', message: 'x' }, retryable: false });
  return getJob(db.prisma, { scope: noOrganizationScope(), jobId });
}

async function written(jobType: string): Promise<{ jobs: number; lineage: number }> {
  const [row] = await db.prisma.$queryRaw<{ jobs: number; lineage: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.job_queue WHERE job_type = ${jobType}) AS jobs,
           (SELECT count(*)::int FROM runledger.job_replays jr JOIN runledger.job_queue jq ON jq.id = jr.source_job_id
             WHERE jq.job_type = ${jobType}) AS lineage`;
  return row!;
}

/** A client that fails the test if anything reaches it. */
const untouchable = new Proxy({} as Db, {
  get(_target, property) {
    throw new Error(`the database was used (${String(property)}) before validation finished`);
  },
});

describe('validation of compareAndReplaySucceededJob', () => {
  it.each([
    ['a blank replay request key', { replayRequestKey: '  ' }, 'replayRequestKey'],
    ['a replay request key over 512 bytes of UTF-8', { replayRequestKey: 'é'.repeat(257) }, 'replayRequestKey'],
    ['a blank reason', { reason: ' \n ' }, 'reason'],
    ['a source id that is not a UUID', { sourceJobId: 'job-1' }, 'sourceJobId'],
    ['a run number below 1', { expectedRunNumber: 0 }, 'expectedRunNumber'],
    ['an unknown scope', { scope: { kind: 'everyone' } }, 'scope.kind'],
  ] as const)('rejects %s, naming the field and writing nothing', async (name, change, field) => {
    const source = await finishedJob(`validate.${name}`, 'succeed');
    const input = {
      scope: noOrganizationScope(),
      sourceJobId: source.id,
      expectedRunNumber: 1,
      replayRequestKey: 'k',
      reason: 'r',
      ...change,
    } as Parameters<typeof compareAndReplaySucceededJob>[1];
    const error = await compareAndReplaySucceededJob(db.prisma, input).catch((e) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'job.invalid_input', field });
    expect(await compareAndReplaySucceededJob(untouchable, input).catch((e) => e)).toBeInstanceOf(ValidationError);
    expect(await written(`validate.${name}`)).toEqual({ jobs: 1, lineage: 0 });
  });

  it('accepts a replay request key of exactly 512 bytes', async () => {
    const source = await finishedJob('validate.key-512', 'succeed');
    const result = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: source.id,
      expectedRunNumber: 1,
      replayRequestKey: 'é'.repeat(256),
      reason: 'r',
    });
    expect(result).toMatchObject({ kind: 'replayed', replay: { disposition: 'inserted' } });
  });

  it.each(['RepeatableRead', 'Serializable'] as const)('refuses a joined %s transaction and writes nothing', async (isolationLevel) => {
    const source = await finishedJob(`validate.isolation.${isolationLevel}`, 'succeed');
    const error = await db.prisma
      .$transaction(
        (tx) =>
          compareAndReplaySucceededJob(tx, {
            scope: noOrganizationScope(),
            sourceJobId: source.id,
            expectedRunNumber: 1,
            replayRequestKey: 'k',
            reason: 'r',
          }),
        { isolationLevel },
      )
      .catch((e) => e);
    expect(error).toMatchObject({ code: 'job.compare_and_replay_unsupported_isolation', field: 'transaction.isolationLevel' });
    expect(await written(`validate.isolation.${isolationLevel}`)).toEqual({ jobs: 1, lineage: 0 });
  });
});

describe('validation of compareAndRequeueJob', () => {
  it.each([
    ['SUCCEEDED as the expected status', { expectedStatus: 'SUCCEEDED' }, 'expectedStatus'],
    ['an unknown state policy', { statePolicy: 'keep_everything' }, 'statePolicy'],
    ['a job id that is not a UUID', { jobId: 'job-1' }, 'jobId'],
    ['a run number below 1', { expectedRunNumber: -1 }, 'expectedRunNumber'],
  ] as const)('rejects %s, naming the field and changing nothing', async (name, change, field) => {
    const dead = await finishedJob(`validate.requeue.${name}`, 'fail');
    const input = {
      scope: noOrganizationScope(),
      jobId: dead.id,
      expectedStatus: 'DEAD_LETTERED',
      expectedRunNumber: 1,
      statePolicy: 'preserve_progress_and_checkpoint',
      ...change,
    } as Parameters<typeof compareAndRequeueJob>[1];
    const error = await compareAndRequeueJob(db.prisma, input).catch((e) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'job.invalid_input', field });
    expect(await compareAndRequeueJob(untouchable, input).catch((e) => e)).toBeInstanceOf(ValidationError);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).toEqual(dead);
  });

  it('does not type SUCCEEDED as a requeueable status', () => {
    // @ts-expect-error a SUCCEEDED job is replayed, not requeued
    const status: Parameters<typeof compareAndRequeueJob>[1]['expectedStatus'] = 'SUCCEEDED';
    expect(status).toBe('SUCCEEDED');
  });

  it('requeues inside a caller’s REPEATABLE READ transaction', async () => {
    const dead = await finishedJob('validate.requeue.repeatable', 'fail');
    const result = await db.prisma.$transaction(
      (tx) =>
        compareAndRequeueJob(tx, {
          scope: noOrganizationScope(),
          jobId: dead.id,
          expectedStatus: 'DEAD_LETTERED',
          expectedRunNumber: 1,
          statePolicy: 'reset_progress_and_checkpoint',
        }),
      { isolationLevel: 'RepeatableRead' },
    );
    expect(result).toMatchObject({ kind: 'requeued', job: { runNumber: 2 } });
  });
});
