/** Releasing a lease unrun: PENDING at once, attempt given back, fenced, workflow step back to ENQUEUED. */
import { describe, expect, it } from 'vitest';
import {
  claimJobs,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  noOrganizationScope,
  isRunledgerError,
  listJobEvents,
  releaseJob,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

describe('releaseJob', () => {
  it('returns the job to PENDING without using up the attempt, and refuses a stale lease', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'release.me', payload: {}, maxAttempts: 1 });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w1', jobTypes: ['release.me'], limit: 1, leaseSeconds: 60, markRunning: true });
    expect(lease!.attempt).toBe(1);
    await releaseJob(db.prisma, { ...lease!, reason: 'job.worker_shutdown' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({
      status: 'PENDING',
      attempt: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    const events = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId })).items;
    expect(events.map((e) => e.eventType)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING', 'RELEASED']);
    expect(events.at(-1)!.payload).toMatchObject({ reason: 'job.worker_shutdown', workerId: 'w1', releasedAttempt: 1 });
    const stale = await releaseJob(db.prisma, lease!).catch((e: unknown) => e);
    expect(isRunledgerError(stale, 'job.lease_owner_mismatch')).toBe(true);
    // With max attempts 1, the job can still run: the released attempt did not count.
    const [again] = await claimJobs(db.prisma, { workerId: 'w2', jobTypes: ['release.me'], limit: 1, leaseSeconds: 60 });
    expect(again).toMatchObject({ jobId, attempt: 1, workerId: 'w2' });
  });

  it('puts a workflow step back to ENQUEUED', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('release.wf').job('a', 'release.wf.a', {}).build());
    const [lease] = await claimJobs(db.prisma, { workerId: 'w1', jobTypes: ['release.wf.a'], limit: 1, leaseSeconds: 60, markRunning: true });
    expect((await stepsByKey(db.prisma, workflowRunId)).a!.status).toBe('RUNNING');
    await releaseJob(db.prisma, lease!);
    expect((await stepsByKey(db.prisma, workflowRunId)).a!.status).toBe('ENQUEUED');
  });

  it('leaves the step looking unclaimed: no reason, error code or message, start time only from earlier attempts', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('release.clear').job('a', 'release.clear.a', {}).build());
    const claim = async () =>
      (await claimJobs(db.prisma, { workerId: 'w1', jobTypes: ['release.clear.a'], limit: 1, leaseSeconds: 60, markRunning: true }))[0]!;
    const cleared = { status: 'ENQUEUED', statusReason: null, lastErrorCode: null, lastErrorMessage: null, finishedAt: null, output: null };

    // First claim released: as if it had never been claimed, so no start time either.
    await releaseJob(db.prisma, { ...(await claim()), reason: 'job.worker_shutdown' });
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ ...cleared, startedAt: null });

    // An attempt that ran and failed, then a released retry: the failure's marks go, the first start stays.
    await failJob(db.prisma, { ...(await claim()), error: { code: 'test.flaky', message: 'try again' }, retryable: true });
    const failed = (await stepsByKey(db.prisma, workflowRunId)).a!;
    expect(failed).toMatchObject({ status: 'ENQUEUED', statusReason: 'job.retry_scheduled', lastErrorCode: 'test.flaky' });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE status = 'PENDING'`;
    await releaseJob(db.prisma, { ...(await claim()), reason: 'job.worker_shutdown' });
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ ...cleared, startedAt: failed.startedAt });
  });
});
