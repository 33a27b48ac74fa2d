/**
 * The autocommit fast paths of the queue (src/client/transaction.ts
 * `withStatement`): on a root client, claim, heartbeat, mark running, enqueue
 * without keys, the completion/failure of direct jobs and the release of any
 * job (its step included) are one statement each. These tests pin the semantics those paths must keep: the
 * lease fence, the workflow hooks, and the fallback to a transaction for
 * workflow-managed jobs and refused leases.
 */
import { describe, expect, it } from 'vitest';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import {
  claimJobs,
  completeJob,
  completeJobs,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  failJob,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  heartbeatJob,
  listJobEvents,
  markJobRunning,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { autocommitIsReadCommitted } from '../../src/client/transaction.js';
import { releaseJob } from '../../src/queue/release-lease.js';
import { useTestDatabase } from '../harness/database.js';
import { stepsByKey } from '../harness/workflow-helpers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();

async function claimOne(jobType: string, workerId = 'w'): Promise<ClaimedJob> {
  const [job] = await claimJobs(db.prisma, { workerId, jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
  if (!job) throw new Error(`nothing to claim for ${jobType}`);
  return job;
}

async function eventTypes(jobId: string): Promise<string[]> {
  return (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId })).items.map((event) => event.eventType);
}

/** A run a -> b whose step a's job is claimed; returns the run, a's job lease, and b's step key. */
async function claimedWorkflowStep(name: string): Promise<{ workflowRunId: string; lease: ClaimedJob }> {
  const { workflowRunId } = await enqueueWorkflowRun(
    db.prisma,
    workflow(name).job('a', `${name}.a`, {}).job('b', `${name}.b`, {}).afterSuccess('b', ['a']).resultStep('b').build(),
  );
  const lease = await claimOne(`${name}.a`);
  expect(lease.workflowManaged).toBe(true);
  return { workflowRunId, lease };
}

describe('queue fast paths on a root client', () => {
  it('completes a direct job once: the same lease again is refused and writes nothing', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'fast.once', payload: {} });
    const lease = await claimOne('fast.once');
    const first = await completeJob(db.prisma, { ...lease, output: { n: 1 } });

    await expect(completeJob(db.prisma, { ...lease, output: { n: 2 } })).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    expect(await completeJobs(db.prisma, [{ ...lease, output: { n: 3 } }])).toEqual([{ jobId, outcome: 'lease_owner_mismatch' }]);

    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    expect(job).toMatchObject({ status: 'SUCCEEDED', output: { n: 1 }, finishedAt: first.finishedAt });
    expect(await eventTypes(jobId)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING', 'SUCCEEDED']);
  });

  it('refuses stale and foreign leases of a direct job in every lifecycle write and leaves the job as it was', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'fast.fence', payload: {} });
    const lease = await claimOne('fast.fence');
    const stale = [
      { ...lease, attempt: lease.attempt + 1 },
      { ...lease, workerId: 'someone-else' },
      { ...lease, runNumber: lease.runNumber + 1 },
    ];
    for (const wrong of stale) {
      expect(await completeJobs(db.prisma, [wrong])).toEqual([{ jobId, outcome: 'lease_owner_mismatch' }]);
      await expect(failJob(db.prisma, { ...wrong, error: { code: 'x', message: 'y' }, retryable: true })).rejects.toMatchObject({
        code: 'job.lease_owner_mismatch',
      });
      await expect(releaseJob(db.prisma, wrong)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
      await expect(heartbeatJob(db.prisma, wrong)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
      await expect(markJobRunning(db.prisma, wrong)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });
    }
    // An expired lease is refused too, even with the right identity.
    await expireLeases(db.prisma, jobId);
    expect(await completeJobs(db.prisma, [lease])).toEqual([{ jobId, outcome: 'lease_owner_mismatch' }]);
    await expect(failJob(db.prisma, { ...lease, error: { code: 'x', message: 'y' }, retryable: true })).rejects.toMatchObject({
      code: 'job.lease_owner_mismatch',
    });
    await expect(releaseJob(db.prisma, lease)).rejects.toMatchObject({ code: 'job.lease_owner_mismatch' });

    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'LEASED', leaseOwner: 'w', attempt: 1, output: null });
    expect(await eventTypes(jobId)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING']);
  });

  it('a batch of a direct job, a workflow job and a stale lease: succeeded, succeeded, mismatch; the step completes and releases its dependent', async () => {
    const direct = await enqueueJob(db.prisma, { jobType: 'fast.mix.direct', payload: {} });
    const staleJob = await enqueueJob(db.prisma, { jobType: 'fast.mix.stale', payload: {} });
    const directLease = await claimOne('fast.mix.direct');
    const staleLease = { ...(await claimOne('fast.mix.stale')), workerId: 'gone' };
    const { workflowRunId, lease: workflowLease } = await claimedWorkflowStep('fastmix');

    const outcomes = await completeJobs(db.prisma, [
      { ...directLease, output: 'd' },
      { ...workflowLease, output: 'a' },
      { ...staleLease, output: 's' },
    ]);
    expect(outcomes.map((outcome) => outcome.outcome)).toEqual(['succeeded', 'succeeded', 'lease_owner_mismatch']);
    expect(outcomes.map((outcome) => outcome.jobId)).toEqual([direct.jobId, workflowLease.jobId, staleJob.jobId]);

    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: direct.jobId })).toMatchObject({ status: 'SUCCEEDED', output: 'd' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: workflowLease.jobId })).toMatchObject({ status: 'SUCCEEDED', output: 'a' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: staleJob.jobId })).toMatchObject({ status: 'LEASED', leaseOwner: 'w', output: null });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.a).toMatchObject({ status: 'SUCCEEDED', output: 'a' });
    expect(steps.b).toMatchObject({ status: 'ENQUEUED', jobId: expect.any(String) });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: steps.b!.jobId! })).toMatchObject({ status: 'PENDING' });
    for (const jobId of [direct.jobId, workflowLease.jobId]) {
      expect((await eventTypes(jobId)).filter((type) => type === 'SUCCEEDED')).toHaveLength(1);
    }
  });

  it('claims workflow and direct jobs in one batch: only the workflow steps read as RUNNING', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('fastclaim').job('a', 'fastclaim.job', { k: 'a' }).job('c', 'fastclaim.job', { k: 'c' }).build(),
    );
    const direct = await enqueueJob(db.prisma, { jobType: 'fastclaim.job', payload: { k: 'direct' } });
    const claimed = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['fastclaim.job'], limit: 10, leaseSeconds: 60 });
    expect(claimed).toHaveLength(3);
    expect(Object.fromEntries(claimed.map((job) => [(job.payload as { k: string }).k, job.workflowManaged]))).toEqual({ a: true, c: true, direct: false });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.a).toMatchObject({ status: 'RUNNING', startedAt: expect.any(Date) });
    expect(steps.c).toMatchObject({ status: 'RUNNING', startedAt: expect.any(Date) });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: direct.jobId })).toMatchObject({ status: 'LEASED', attempt: 1 });
  });

  it('mark running writes no step row, and a step a cancellation ended reads as ended', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('fastrun').job('a', 'fastrun.a', {}).build());
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['fastrun.a'], limit: 1, leaseSeconds: 60 });
    const stepId = (await stepsByKey(db.prisma, workflowRunId)).a!.id;
    const version = async () =>
      (await db.prisma.$queryRaw<{ v: string }[]>`SELECT xmin::text AS v FROM runledger.workflow_steps WHERE id = ${stepId}::uuid`)[0]!.v;
    const before = await version();
    await markJobRunning(db.prisma, lease!);
    expect(await version()).toBe(before);
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'RUNNING' });
    expect((await eventTypes(lease!.jobId)).filter((type) => type === 'RUNNING')).toHaveLength(1);

    await db.prisma.$executeRaw`
      UPDATE runledger.workflow_steps SET status = 'CANCELED', finished_at = now(), status_reason = 'test' WHERE id = ${stepId}::uuid`;
    await markJobRunning(db.prisma, lease!);
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'CANCELED' });
  });

  it('fails and releases direct jobs in one statement and workflow jobs with their step hooks', async () => {
    const direct = await enqueueJob(db.prisma, { jobType: 'fast.fail.direct', payload: {}, maxAttempts: 3 });
    const failed = await failJob(db.prisma, { ...(await claimOne('fast.fail.direct')), error: { code: 'flaky', message: 'again' }, retryable: true });
    expect(failed).toMatchObject({ jobId: direct.jobId, status: 'PENDING', nextRunAt: expect.any(Date) });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${direct.jobId}::uuid`;
    expect(await releaseJob(db.prisma, { ...(await claimOne('fast.fail.direct')), reason: 'job.worker_shutdown' })).toEqual({
      jobId: direct.jobId,
      status: 'PENDING',
    });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: direct.jobId })).toMatchObject({
      status: 'PENDING',
      attempt: 1,
      lastErrorCode: 'flaky',
    });
    expect(await eventTypes(direct.jobId)).toEqual(['ENQUEUED', 'LEASED', 'RUNNING', 'RETRY_SCHEDULED', 'LEASED', 'RUNNING', 'RELEASED']);

    const { workflowRunId, lease } = await claimedWorkflowStep('fastfail');
    await failJob(db.prisma, { ...lease, error: { code: 'flaky', message: 'again' }, retryable: true });
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'ENQUEUED', lastErrorCode: 'flaky' });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${lease.jobId}::uuid`;
    const again = await claimOne('fastfail.a');
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'RUNNING' });
    await releaseJob(db.prisma, { ...again, reason: 'job.worker_shutdown' });
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({
      status: 'ENQUEUED',
      statusReason: null,
      lastErrorCode: null,
      lastErrorMessage: null,
    });
    const last = await claimOne('fastfail.a');
    expect(await failJob(db.prisma, { ...last, error: { code: 'fatal', message: 'no' }, retryable: false })).toMatchObject({
      status: 'DEAD_LETTERED',
      nextRunAt: null,
    });
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'FAILED', lastErrorCode: 'fatal' });
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('COMPLETED_WITH_ERRORS');
  });

  it('enqueues a batch without keys in one statement and returns every job inserted', async () => {
    const results = await enqueueJobs(db.prisma, [
      { jobType: 'fast.enqueue', payload: 1 },
      { jobType: 'fast.enqueue', payload: 2, delayMs: 60_000 },
    ]);
    expect(results).toEqual([
      { jobId: expect.any(String), status: 'PENDING', runNumber: 1, disposition: 'inserted' },
      { jobId: expect.any(String), status: 'PENDING', runNumber: 1, disposition: 'inserted' },
    ]);
    for (const { jobId } of results) expect(await eventTypes(jobId)).toEqual(['ENQUEUED']);
  });

  it('joined transactions still share the caller’s fate: a rollback undoes completions and failures', async () => {
    const done = await enqueueJob(db.prisma, { jobType: 'fast.joined', payload: 'c' });
    const doneLease = await claimOne('fast.joined');
    const fail = await enqueueJob(db.prisma, { jobType: 'fast.joined', payload: 'f' });
    const failLease = await claimOne('fast.joined');
    await expect(
      db.prisma.$transaction(async (tx) => {
        expect(await completeJobs(tx, [doneLease])).toMatchObject([{ outcome: 'succeeded' }]);
        await failJob(tx, { ...failLease, error: { code: 'x', message: 'y' }, retryable: false });
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: done.jobId })).toMatchObject({ status: 'LEASED' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: fail.jobId })).toMatchObject({ status: 'LEASED' });
  });
});

describe('a root client whose sessions do not default to READ COMMITTED', () => {
  it('is detected, and its operations run in owned READ COMMITTED transactions with the same results', async () => {
    const url = new URL(db.url);
    url.searchParams.set('options', '-c default_transaction_isolation=serializable');
    const serializable = new PrismaClient({ adapter: new PrismaPg({ connectionString: url.toString(), max: 2 }) });
    try {
      const [session] = await serializable.$queryRaw<{ level: string }[]>`SELECT current_setting('transaction_isolation') AS level`;
      expect(session?.level).toBe('serializable');
      expect(await autocommitIsReadCommitted(serializable)).toBe(false);
      expect(await autocommitIsReadCommitted(db.prisma)).toBe(true);

      const [done, other] = await enqueueJobs(serializable, [
        { jobType: 'fast.serializable', payload: 1, priority: 2 },
        { jobType: 'fast.serializable', payload: 2, priority: 1 },
      ]);
      const [lease, otherLease] = await claimJobs(serializable, {
        workerId: 'w',
        jobTypes: ['fast.serializable'],
        limit: 5,
        leaseSeconds: 60,
        markRunning: true,
      });
      expect([lease?.jobId, otherLease?.jobId]).toEqual([done!.jobId, other!.jobId]);
      await heartbeatJob(serializable, { ...lease!, save: { progress: { pct: 50 } } });
      expect(await completeJobs(serializable, [lease!, { ...otherLease!, workerId: 'x' }])).toMatchObject([
        { jobId: done!.jobId, outcome: 'succeeded' },
        { jobId: other!.jobId, outcome: 'lease_owner_mismatch' },
      ]);
      expect(await getJob(serializable, { scope: noOrganizationScope(), jobId: done!.jobId })).toMatchObject({ status: 'SUCCEEDED', progress: { pct: 50 } });
      expect(await failJob(serializable, { ...otherLease!, error: { code: 'x', message: 'y' }, retryable: false })).toMatchObject({ status: 'DEAD_LETTERED' });
    } finally {
      await serializable.$disconnect();
    }
  });
});
