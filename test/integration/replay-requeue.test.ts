import { describe, expect, it } from 'vitest';
import {
  JOB_AVAILABLE_CHANNEL,
  adminScope,
  cancelJob,
  claimJobs,
  completeJob,
  enqueueJob,
  failJob,
  getJob,
  noOrganizationScope,
  heartbeatJob,
  listJobEvents,
  organizationScope,
  type ClaimedJob,
  type Job,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { compareAndRequeueJob, type CompareAndRequeueJobInput } from '../../src/replay/index.js';
import { useTestDatabase } from '../harness/database.js';
import { attachToWorkflowStep } from '../harness/workflow-helpers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();

const ORG_A = '0190a3e0-0000-7000-8000-00000000000a';
const ORG_B = '0190a3e0-0000-7000-8000-00000000000b';

async function claim(jobType: string, leaseSeconds = 60): Promise<ClaimedJob> {
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds, markRunning: true });
  return lease!;
}

/** A job that made progress, saved a checkpoint, then failed terminally. */
async function deadLetteredJob(jobType: string, organizationId: string | null = null): Promise<Job> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, organizationId, payload: { n: 1 }, maxAttempts: 2, idempotencyKey: `key-${jobType}` });
  const lease = await claim(jobType);
  await heartbeatJob(db.prisma, { ...lease, save: { progress: { done: 3 }, checkpoint: { cursor: 'c3' } } });
  await failJob(db.prisma, { ...lease, error: { code: 'smtp.down', message: 'connection refused' }, retryable: false });
  return getJob(db.prisma, { scope: adminScope(), jobId });
}

/** A job canceled while its handler held a lease: the lease expiry stays as the quiescence marker. */
async function canceledLeasedJob(jobType: string): Promise<{ job: Job; lease: ClaimedJob }> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: {} });
  const lease = await claim(jobType, 300);
  const job = await cancelJob(db.prisma, { jobId, scope: noOrganizationScope(), reason: 'operator' });
  return { job, lease };
}

function requeueOf(job: Job, statePolicy: CompareAndRequeueJobInput['statePolicy'] = 'preserve_progress_and_checkpoint') {
  return {
    scope: job.organizationId === null ? noOrganizationScope() : organizationScope(job.organizationId),
    jobId: job.id,
    expectedStatus: job.status as 'DEAD_LETTERED' | 'CANCELED',
    expectedRunNumber: job.runNumber,
    statePolicy,
  };
}

describe('compareAndRequeueJob', () => {
  it('requeues a dead-lettered job as its next run with a REQUEUED event', async () => {
    const dead = await deadLetteredJob('requeue.dead');
    const result = await compareAndRequeueJob(db.prisma, requeueOf(dead));
    expect(result.kind).toBe('requeued');
    if (result.kind !== 'requeued') return;
    expect(result.job).toMatchObject({
      id: dead.id,
      status: 'PENDING',
      runNumber: 2,
      attempt: 0,
      maxAttempts: 2,
      payload: { n: 1 },
      idempotencyKey: 'key-requeue.dead',
      leaseOwner: null,
      leaseExpiresAt: null,
      heartbeatAt: null,
      startedAt: null,
      finishedAt: null,
      output: null,
      lastErrorCode: null,
      lastErrorMessage: null,
    });
    expect(result.job).toEqual(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: dead.id }));
    const events = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).items;
    expect(events.map((e) => e.eventType)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING', 'DEAD_LETTERED', 'REQUEUED']);
    expect(events.at(-1)).toMatchObject({
      runNumber: 2,
      attempt: 0,
      payload: {
        previousRunNumber: 1,
        previousStatus: 'DEAD_LETTERED',
        statePolicy: 'preserve_progress_and_checkpoint',
        previousErrorCode: 'smtp.down',
        previousErrorMessage: 'connection refused',
      },
    });
  });

  it('keeps progress and checkpoint under preserve_progress_and_checkpoint', async () => {
    const dead = await deadLetteredJob('requeue.preserve');
    const result = await compareAndRequeueJob(db.prisma, requeueOf(dead, 'preserve_progress_and_checkpoint'));
    expect(result).toMatchObject({ kind: 'requeued', job: { progress: { done: 3 }, checkpoint: { cursor: 'c3' } } });
    expect(await claim('requeue.preserve')).toMatchObject({ runNumber: 2, attempt: 1, checkpoint: { cursor: 'c3' } });
  });

  it('clears progress and checkpoint under reset_progress_and_checkpoint', async () => {
    const dead = await deadLetteredJob('requeue.reset');
    const result = await compareAndRequeueJob(db.prisma, requeueOf(dead, 'reset_progress_and_checkpoint'));
    expect(result).toMatchObject({ kind: 'requeued', job: { progress: null, checkpoint: null } });
    const [event] = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).items.filter((e) => e.eventType === 'REQUEUED');
    expect(event?.payload).toMatchObject({ statePolicy: 'reset_progress_and_checkpoint' });
  });

  it('lets the requeued run be claimed and completed', async () => {
    const dead = await deadLetteredJob('requeue.complete');
    await compareAndRequeueJob(db.prisma, requeueOf(dead));
    const lease = await claim('requeue.complete');
    expect(lease).toMatchObject({ jobId: dead.id, runNumber: 2, attempt: 1 });
    await completeJob(db.prisma, { ...lease, output: { ok: true } });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).toMatchObject({
      status: 'SUCCEEDED',
      runNumber: 2,
      output: { ok: true },
    });
  });

  it('reports a wrong expected status or run as an expectation mismatch and changes nothing', async () => {
    const dead = await deadLetteredJob('requeue.mismatch');
    const attempts = [
      { ...requeueOf(dead), expectedStatus: 'CANCELED' as const },
      { ...requeueOf(dead), expectedRunNumber: 2 },
    ];
    for (const attempt of attempts) {
      expect(await compareAndRequeueJob(db.prisma, attempt)).toEqual({ kind: 'expectation_mismatch', actual: dead });
    }
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'requeue.pending', payload: {} });
    const pending = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(await compareAndRequeueJob(db.prisma, { ...requeueOf(dead), jobId })).toEqual({ kind: 'expectation_mismatch', actual: pending });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).toEqual(dead);
  });

  it('refuses a second requeue of the same observed run', async () => {
    const dead = await deadLetteredJob('requeue.twice');
    await compareAndRequeueJob(db.prisma, requeueOf(dead));
    const again = await compareAndRequeueJob(db.prisma, requeueOf(dead));
    expect(again).toMatchObject({ kind: 'expectation_mismatch', actual: { status: 'PENDING', runNumber: 2 } });
    const requeued = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).items.filter((e) => e.eventType === 'REQUEUED');
    expect(requeued).toHaveLength(1);
  });

  it('reports a canceled job whose lease is still live as not quiesced, then requeues it once the marker passes', async () => {
    const { job } = await canceledLeasedJob('requeue.quiesce');
    expect(job.leaseExpiresAt).toBeInstanceOf(Date);
    expect(await compareAndRequeueJob(db.prisma, requeueOf(job))).toEqual({ kind: 'cancellation_not_quiesced', retryAfter: job.leaseExpiresAt });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: job.id })).toEqual(job);
    await expireLeases(db.prisma, job.id);
    const result = await compareAndRequeueJob(db.prisma, requeueOf(job));
    expect(result).toMatchObject({ kind: 'requeued', job: { status: 'PENDING', runNumber: 2, attempt: 0, leaseExpiresAt: null } });
  });

  it("refuses a not-quiesced cancellation without holding the job row in the caller's open transaction", async () => {
    const { job } = await canceledLeasedJob('requeue.quiesce.unlocked');
    const other = await db.newPool({ max: 1 }).connect();
    try {
      await db.prisma.$transaction(async (tx) => {
        expect(await compareAndRequeueJob(tx, requeueOf(job))).toEqual({ kind: 'cancellation_not_quiesced', retryAfter: job.leaseExpiresAt });
        // The caller's transaction is still open: another connection can lock the row at once.
        await other.query('BEGIN');
        const locked = await other.query('SELECT id FROM runledger.job_queue WHERE id = $1 FOR UPDATE NOWAIT', [job.id]);
        expect(locked.rowCount).toBe(1);
        await other.query('ROLLBACK');
      });
    } finally {
      other.release();
    }
  });

  it('fences the canceled handler out of the requeued run', async () => {
    const { job, lease } = await canceledLeasedJob('requeue.fence');
    await expireLeases(db.prisma, job.id);
    await compareAndRequeueJob(db.prisma, requeueOf(job));
    const next = await claim('requeue.fence');
    expect(next).toMatchObject({ jobId: job.id, runNumber: 2, attempt: 1 });
    await expect(completeJob(db.prisma, { ...lease, output: 'stale' })).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    await completeJob(db.prisma, { ...next, output: 'fresh' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: job.id })).toMatchObject({ status: 'SUCCEEDED', output: 'fresh' });
  });

  it('requeues a job canceled before it was claimed at once', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'requeue.canceled-pending', payload: {} });
    const canceled = await cancelJob(db.prisma, { jobId, scope: noOrganizationScope() });
    const result = await compareAndRequeueJob(db.prisma, requeueOf(canceled, 'reset_progress_and_checkpoint'));
    expect(result).toMatchObject({ kind: 'requeued', job: { status: 'PENDING', runNumber: 2 } });
  });

  it('matches the scope exactly', async () => {
    const orgJob = await deadLetteredJob('requeue.scope', ORG_A);
    for (const scope of [organizationScope(ORG_B), noOrganizationScope()]) {
      expect(await compareAndRequeueJob(db.prisma, { ...requeueOf(orgJob), scope })).toEqual({ kind: 'not_found' });
    }
    expect(await compareAndRequeueJob(db.prisma, { ...requeueOf(orgJob), jobId: newId() })).toEqual({ kind: 'not_found' });
    expect(await compareAndRequeueJob(db.prisma, { ...requeueOf(orgJob), scope: adminScope() })).toMatchObject({ kind: 'requeued' });
  });

  it('refuses to requeue a workflow step’s job', async () => {
    const dead = await deadLetteredJob('requeue.workflow');
    await attachToWorkflowStep(db.prisma, dead, 'FAILED');
    const error = await compareAndRequeueJob(db.prisma, requeueOf(dead)).catch((e) => e);
    expect(error).toMatchObject({ code: 'job.workflow_requeue_not_supported', category: 'conflict' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).toEqual(dead);
  });

  it('announces the requeued job type on the job-available channel at commit', async () => {
    const dead = await deadLetteredJob('requeue.notify');
    const listener = await db.newPool({ max: 1 }).connect();
    try {
      const heard = new Promise<string | undefined>((resolve) => {
        listener.on('notification', (message) => {
          if (message.payload === 'requeue.notify') resolve(message.payload);
        });
      });
      await listener.query(`LISTEN ${JOB_AVAILABLE_CHANNEL}`);
      await compareAndRequeueJob(db.prisma, requeueOf(dead));
      expect(await heard).toBe('requeue.notify');
    } finally {
      listener.release();
    }
  });

  it('writes nothing when the caller’s transaction rolls back', async () => {
    const dead = await deadLetteredJob('requeue.rollback');
    await expect(
      db.prisma.$transaction(async (tx) => {
        expect(await compareAndRequeueJob(tx, requeueOf(dead))).toMatchObject({ kind: 'requeued' });
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: dead.id })).toEqual(dead);
  });
});
