import { describe, expect, it } from 'vitest';
import {
  adminScope,
  claimJobs,
  completeJob,
  enqueueJob,
  failJob,
  getJob,
  noOrganizationScope,
  heartbeatJob,
  listJobEvents,
  organizationScope,
  type Job,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { compareAndReplaySucceededJob } from '../../src/replay/index.js';
import { useTestDatabase } from '../harness/database.js';
import { attachToWorkflowStep } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

const ORG_A = '0190a3e0-0000-7000-8000-00000000000a';
const ORG_B = '0190a3e0-0000-7000-8000-00000000000b';

interface SourceOptions {
  organizationId?: string | null;
  idempotencyKey?: string;
}

/** A job that went the whole way through the queue: settings, progress, checkpoint, output, key. */
async function succeededJob(jobType: string, options: SourceOptions = {}): Promise<Job> {
  const organizationId = options.organizationId ?? null;
  const { jobId } = await enqueueJob(db.prisma, {
    jobType,
    organizationId,
    payload: { invoice: 42, lines: ['a', 'b'] },
    priority: 7,
    maxAttempts: 3,
    timeoutSeconds: 90,
    idempotencyKey: options.idempotencyKey ?? `key-${jobType}`,
  });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
  await heartbeatJob(db.prisma, { ...lease!, save: { progress: { done: 2 }, checkpoint: { cursor: 'b' } } });
  await completeJob(db.prisma, { ...lease!, output: { sent: true } });
  return getJob(db.prisma, { scope: adminScope(), jobId });
}

async function jobCount(jobType: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${jobType}`;
  return row!.n;
}

async function lineageCount(sourceJobId: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM runledger.job_replays WHERE source_job_id = ${sourceJobId}::uuid`;
  return row!.n;
}

function replayOf(source: Job, key = 'replay-1', reason = 'template fixed') {
  return {
    scope: source.organizationId === null ? noOrganizationScope() : organizationScope(source.organizationId),
    sourceJobId: source.id,
    expectedRunNumber: source.runNumber,
    replayRequestKey: key,
    reason,
  };
}

async function replayJobId(source: Job, key?: string, reason?: string): Promise<string> {
  const result = await compareAndReplaySucceededJob(db.prisma, replayOf(source, key, reason));
  if (result.kind !== 'replayed') throw new Error(`expected a replay, got ${result.kind}`);
  return result.replay.jobId;
}

describe('compareAndReplaySucceededJob', () => {
  it('inserts a fresh pending job that copies only the payload and the execution settings', async () => {
    const source = await succeededJob('replay.copy', { organizationId: ORG_A });
    const result = await compareAndReplaySucceededJob(db.prisma, replayOf(source));
    expect(result).toEqual({
      kind: 'replayed',
      sourceJobId: source.id,
      sourceRunNumber: 1,
      replay: { jobId: expect.any(String), status: 'PENDING', runNumber: 1, disposition: 'inserted' },
    });
    if (result.kind !== 'replayed') return;
    expect(result.replay.jobId).not.toBe(source.id);
    const replay = await getJob(db.prisma, { scope: organizationScope(ORG_A), jobId: result.replay.jobId });
    expect(replay).toMatchObject({
      jobType: 'replay.copy',
      organizationId: ORG_A,
      payload: source.payload,
      priority: 7,
      maxAttempts: 3,
      timeoutSeconds: 90,
      status: 'PENDING',
      attempt: 0,
      runNumber: 1,
      progress: null,
      checkpoint: null,
      output: null,
      idempotencyKey: null,
      startedAt: null,
      finishedAt: null,
      lastErrorCode: null,
    });
  });

  it('leaves the source row untouched', async () => {
    const source = await succeededJob('replay.untouched');
    await replayJobId(source);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: source.id })).toEqual(source);
    expect((await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: source.id })).items.map((e) => e.eventType)).toEqual([
      'ENQUEUED',
      'LEASED',
      'RUNNING',
      'SUCCEEDED',
    ]);
  });

  it('records the lineage row and an ENQUEUED event naming the source job, run, key and reason', async () => {
    const source = await succeededJob('replay.lineage');
    const replayId = await replayJobId(source, 'ticket-881', 'customer asked again');
    const lineage = await db.prisma.$queryRaw<Record<string, unknown>[]>`
      SELECT source_job_id, source_run_number, replay_request_key, replay_job_id, reason
        FROM runledger.job_replays WHERE source_job_id = ${source.id}::uuid`;
    expect(lineage).toEqual([
      {
        source_job_id: source.id,
        source_run_number: 1,
        replay_request_key: 'ticket-881',
        replay_job_id: replayId,
        reason: 'customer asked again',
      },
    ]);
    const events = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: replayId })).items;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      eventType: 'ENQUEUED',
      runNumber: 1,
      attempt: 0,
      payload: {
        replayedFromJobId: source.id,
        replayedFromRunNumber: 1,
        replayRequestKey: 'ticket-881',
        reason: 'customer asked again',
      },
    });
  });

  it('runs the replay through the queue and succeeds independently of the source', async () => {
    const source = await succeededJob('replay.worker');
    const replayId = await replayJobId(source);
    const claimed = await claimJobs(db.prisma, { workerId: 'w2', jobTypes: ['replay.worker'], limit: 10, leaseSeconds: 60, markRunning: true });
    expect(claimed.map((c) => c.jobId)).toEqual([replayId]);
    expect(claimed[0]).toMatchObject({ payload: source.payload, progress: null, checkpoint: null, workflowManaged: false });
    await completeJob(db.prisma, { ...claimed[0]!, output: { sent: 'again' } });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: replayId })).toMatchObject({ status: 'SUCCEEDED', output: { sent: 'again' } });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: source.id })).toEqual(source);
  });

  it('returns the existing replay for the same key and reason', async () => {
    const source = await succeededJob('replay.idempotent');
    const first = await compareAndReplaySucceededJob(db.prisma, replayOf(source));
    const second = await compareAndReplaySucceededJob(db.prisma, replayOf(source));
    expect(first).toMatchObject({ kind: 'replayed', replay: { disposition: 'inserted' } });
    if (first.kind !== 'replayed') return;
    expect(second).toEqual({ ...first, replay: { ...first.replay, disposition: 'existing' } });
    expect(await jobCount('replay.idempotent')).toBe(2);
  });

  it('reports the existing replay with its current status', async () => {
    const source = await succeededJob('replay.existing-status');
    const replayId = await replayJobId(source);
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['replay.existing-status'], limit: 1, leaseSeconds: 60 });
    await failJob(db.prisma, { ...lease!, error: { code: 'boom', message: 'no' }, retryable: false });
    const again = await compareAndReplaySucceededJob(db.prisma, replayOf(source));
    expect(again).toMatchObject({ kind: 'replayed', replay: { jobId: replayId, status: 'DEAD_LETTERED', runNumber: 1, disposition: 'existing' } });
  });

  it('inserts another replay for another key', async () => {
    const source = await succeededJob('replay.two-keys');
    const first = await replayJobId(source, 'one');
    const second = await replayJobId(source, 'two');
    expect(second).not.toBe(first);
    expect(await lineageCount(source.id)).toBe(2);
  });

  it('refuses the same key with another reason and writes nothing', async () => {
    const source = await succeededJob('replay.reason-conflict');
    await replayJobId(source, 'k', 'first reason');
    const error = await compareAndReplaySucceededJob(db.prisma, replayOf(source, 'k', 'second reason')).catch((e) => e);
    expect(error).toMatchObject({ code: 'job.replay_idempotency_conflict', category: 'conflict' });
    expect(await jobCount('replay.reason-conflict')).toBe(2);
    expect(await lineageCount(source.id)).toBe(1);
  });

  it('reports a job that has not succeeded as an expectation mismatch with its actual record', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'replay.pending', payload: {} });
    const actual = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    const result = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: jobId,
      expectedRunNumber: 1,
      replayRequestKey: 'k',
      reason: 'r',
    });
    expect(result).toEqual({ kind: 'expectation_mismatch', actual });
    expect(await jobCount('replay.pending')).toBe(1);
  });

  it('reports a wrong run number as an expectation mismatch', async () => {
    const source = await succeededJob('replay.wrong-run');
    const result = await compareAndReplaySucceededJob(db.prisma, { ...replayOf(source), expectedRunNumber: 2 });
    expect(result).toEqual({ kind: 'expectation_mismatch', actual: source });
    expect(await lineageCount(source.id)).toBe(0);
  });

  it('matches the scope exactly', async () => {
    const orgJob = await succeededJob('replay.scope-org', { organizationId: ORG_A });
    const globalJob = await succeededJob('replay.scope-global');
    const attempts = [
      { ...replayOf(orgJob), scope: organizationScope(ORG_B) },
      { ...replayOf(orgJob), scope: noOrganizationScope() },
      { ...replayOf(globalJob), scope: organizationScope(ORG_A) },
      { ...replayOf(globalJob), sourceJobId: newId() },
    ];
    for (const attempt of attempts) {
      expect(await compareAndReplaySucceededJob(db.prisma, attempt)).toEqual({ kind: 'not_found' });
    }
    expect(await jobCount('replay.scope-org')).toBe(1);
    expect(await jobCount('replay.scope-global')).toBe(1);
  });

  it('does not reveal another organization’s replay through a reused key', async () => {
    const orgJob = await succeededJob('replay.scope-lineage', { organizationId: ORG_A });
    await replayJobId(orgJob);
    const result = await compareAndReplaySucceededJob(db.prisma, { ...replayOf(orgJob), scope: organizationScope(ORG_B) });
    expect(result).toEqual({ kind: 'not_found' });
  });

  it('replays a source of any organization in admin scope', async () => {
    const orgJob = await succeededJob('replay.admin', { organizationId: ORG_B });
    const result = await compareAndReplaySucceededJob(db.prisma, { ...replayOf(orgJob), scope: adminScope() });
    expect(result).toMatchObject({ kind: 'replayed', replay: { disposition: 'inserted' } });
    if (result.kind !== 'replayed') return;
    expect((await getJob(db.prisma, { scope: adminScope(), jobId: result.replay.jobId })).organizationId).toBe(ORG_B);
  });

  it('refuses to replay a workflow step’s job', async () => {
    const source = await succeededJob('replay.workflow');
    await attachToWorkflowStep(db.prisma, source, 'SUCCEEDED');
    const error = await compareAndReplaySucceededJob(db.prisma, replayOf(source)).catch((e) => e);
    expect(error).toMatchObject({ code: 'job.workflow_requeue_not_supported', category: 'conflict' });
    expect(await jobCount('replay.workflow')).toBe(1);
    expect(await lineageCount(source.id)).toBe(0);
  });

  it('fails closed as internal when the recorded replay job is missing', async () => {
    const source = await succeededJob('replay.missing');
    const replayId = await replayJobId(source);
    // Only a session that disables foreign-key triggers can leave lineage pointing nowhere.
    await db.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL session_replication_role = replica`;
      await tx.$executeRaw`DELETE FROM runledger.job_queue WHERE id = ${replayId}::uuid`;
    });
    const error = await compareAndReplaySucceededJob(db.prisma, replayOf(source)).catch((e) => e);
    expect(error).toMatchObject({ code: 'job.replay_missing', category: 'internal', details: { replayJobId: replayId } });
    expect(await jobCount('replay.missing')).toBe(1);
  });

  it('deletes a source’s lineage with the source', async () => {
    const source = await succeededJob('replay.delete-source');
    const replayId = await replayJobId(source);
    await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE id = ${source.id}::uuid`;
    expect(await lineageCount(source.id)).toBe(0);
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: replayId })).status).toBe('PENDING');
  });

  it('refuses to delete a replay job alone while its lineage exists', async () => {
    const source = await succeededJob('replay.delete-replay');
    const replayId = await replayJobId(source);
    await expect(db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE id = ${replayId}::uuid`).rejects.toThrow(/job_replays_replay_job_id_fkey/);
    expect(await lineageCount(source.id)).toBe(1);
  });
});
