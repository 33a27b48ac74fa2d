/**
 * Attempt history: every lease opens a job_attempts row in the claim and the
 * statement that ends the lease closes it, with no statement of its own.
 */
import { describe, expect, it } from 'vitest';
import {
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  completeJob,
  completeJobs,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  isRunledgerError,
  listJobAttempts,
  noOrganizationScope,
  organizationScope,
  purgeFinished,
  reapExpiredLeases,
  releaseJob,
  workflow,
} from '../../src/index.js';
import { countingClient } from '../harness/counting-client.js';
import { useTestDatabase } from '../harness/database.js';
import { claimOne } from '../harness/workflow-helpers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
const scope = noOrganizationScope();

const claim = (jobType: string, workerId = 'w1') => claimOne(db.prisma, jobType, { workerId, markRunning: true });

async function makeDue(jobId: string): Promise<void> {
  await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
}

const attempts = async (jobId: string) => (await listJobAttempts(db.prisma, { scope, jobId })).items;

describe('job attempts', () => {
  it('opens an attempt with the lease and closes it SUCCEEDED with the completion', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'att.ok', payload: {} });
    const lease = await claim('att.ok', 'worker-a');
    const [open] = await attempts(jobId);
    expect(open).toMatchObject({ jobId, runNumber: 1, attempt: 1, workerId: 'worker-a', finishedAt: null, outcome: null });
    await completeJob(db.prisma, { ...lease, output: 1 });
    const [closed, ...rest] = await attempts(jobId);
    expect(rest).toEqual([]);
    expect(closed).toMatchObject({ outcome: 'SUCCEEDED', errorCode: null, retryDelayMs: null, nextRunAt: null });
    expect(closed!.finishedAt!.getTime()).toBeGreaterThanOrEqual(closed!.startedAt.getTime());
  });

  it('never closes an attempt before it started, though the closing transaction began before the claim', async () => {
    // The chaos run found it: a cancellation whose transaction began (its now()) before a claim it then waited for
    // closed the claim's attempt at that earlier time.
    for (const how of ['job', 'run'] as const) {
      const jobType = `att.early.${how}`;
      const { jobId } = how === 'job' ? await enqueueJob(db.prisma, { jobType, payload: {} }) : { jobId: '' };
      const run = how === 'run' ? await enqueueWorkflowRun(db.prisma, workflow('att.early').job('only', jobType, {}).build()) : undefined;
      let leasedJobId = jobId;
      await db.prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT now()`; // the transaction's clock starts here
        await new Promise((resolve) => setTimeout(resolve, 20));
        const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
        leasedJobId = lease!.jobId;
        if (how === 'job') await cancelJob(tx, { jobId, scope });
        else await cancelWorkflowRun(tx, { workflowRunId: run!.workflowRunId, scope });
      });
      const [closed] = await attempts(leasedJobId);
      expect(closed?.outcome).toBe('CANCELED');
      expect(closed!.finishedAt!.getTime()).toBeGreaterThanOrEqual(closed!.startedAt.getTime());
    }
  });

  it('records a retry delay from the policy, then from the handler, then the dead-letter', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'att.fail', payload: {}, maxAttempts: 3 });
    await failJob(db.prisma, { ...(await claim('att.fail')), error: { code: 'smtp.down', message: 'down' }, retryable: true });
    await makeDue(jobId);
    const notBefore = new Date(Date.now() + 3_600_000);
    await failJob(db.prisma, { ...(await claim('att.fail')), error: { code: 'rate.limited', message: 'later' }, retryable: true, retryNotBefore: notBefore });
    await makeDue(jobId);
    await failJob(db.prisma, { ...(await claim('att.fail')), error: { code: 'bad.data', message: 'no' }, retryable: false });
    const [first, second, third] = await attempts(jobId);
    expect(first).toMatchObject({
      attempt: 1,
      outcome: 'FAILED_RETRY',
      errorCode: 'smtp.down',
      errorMessage: 'down',
      retryDelaySource: 'POLICY',
      requestedNextRunAt: null,
    });
    expect(first!.retryDelayMs).toBeGreaterThanOrEqual(500);
    expect(first!.retryDelayMs).toBeLessThanOrEqual(1_000);
    expect(first!.nextRunAt!.getTime() - first!.finishedAt!.getTime()).toBe(first!.retryDelayMs);
    expect(second).toMatchObject({ attempt: 2, outcome: 'FAILED_RETRY', errorCode: 'rate.limited', retryDelaySource: 'HANDLER_NOT_BEFORE' });
    expect(second!.requestedNextRunAt).toEqual(notBefore);
    expect(second!.nextRunAt).toEqual(notBefore);
    expect(third).toMatchObject({ attempt: 3, outcome: 'DEAD_LETTERED', errorCode: 'bad.data', retryDelayMs: null, retryDelaySource: null, nextRunAt: null });
  });

  it('keeps a released attempt and the re-claim under the same attempt number as two rows', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'att.release', payload: {} });
    await releaseJob(db.prisma, { ...(await claim('att.release', 'w1')), reason: 'job.worker_shutdown' });
    const again = await claim('att.release', 'w2');
    expect(again.attempt).toBe(1);
    const [released, open] = await attempts(jobId);
    expect(released).toMatchObject({ attempt: 1, workerId: 'w1', outcome: 'RELEASED', errorCode: 'job.worker_shutdown' });
    expect(released!.nextRunAt).not.toBeNull();
    expect(open).toMatchObject({ attempt: 1, workerId: 'w2', outcome: null });
    expect(BigInt(open!.seq)).toBeGreaterThan(BigInt(released!.seq));
  });

  it('closes an expired lease LEASE_EXPIRED, retried or dead-lettered', async () => {
    const retried = await enqueueJob(db.prisma, { jobType: 'att.reap', payload: {}, maxAttempts: 2 });
    await claim('att.reap');
    await expireLeases(db.prisma, retried.jobId);
    expect((await reapExpiredLeases(db.prisma, { limit: 10 })).retried).toEqual([retried.jobId]);
    await claim('att.reap');
    await expireLeases(db.prisma, retried.jobId);
    expect((await reapExpiredLeases(db.prisma, { limit: 10 })).deadLettered).toEqual([retried.jobId]);
    const [first, second] = await attempts(retried.jobId);
    expect(first).toMatchObject({ attempt: 1, outcome: 'LEASE_EXPIRED', errorCode: 'job.lease_expired' });
    expect(first!.nextRunAt).not.toBeNull();
    expect(second).toMatchObject({ attempt: 2, outcome: 'LEASE_EXPIRED', errorCode: 'job.lease_expired', nextRunAt: null });
  });

  it('closes a canceled lease CANCELED, for a direct job and a workflow run', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'att.cancel', payload: {} });
    await claim('att.cancel');
    await cancelJob(db.prisma, { jobId, scope, reason: 'ops' });
    expect(await attempts(jobId)).toMatchObject([{ outcome: 'CANCELED', errorMessage: 'ops' }]);

    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('att.wf').job('a', 'att.wf.a', {}).build());
    const lease = await claim('att.wf.a');
    await cancelWorkflowRun(db.prisma, { workflowRunId, scope });
    expect(await attempts(lease.jobId)).toMatchObject([{ outcome: 'CANCELED', errorCode: 'workflow.run_canceled' }]);
  });

  it("pages attempts in order and keeps them in the job's scope", async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'att.page', payload: {}, organizationId: 'org-1' });
    for (let i = 0; i < 3; i += 1) await releaseJob(db.prisma, { ...(await claim('att.page', `w${i}`)), reason: 'job.buffer_expired' });
    const org = organizationScope('org-1');
    const first = await listJobAttempts(db.prisma, { scope: org, jobId, limit: 2 });
    expect(first.items.map((a) => a.workerId)).toEqual(['w0', 'w1']);
    const second = await listJobAttempts(db.prisma, { scope: org, jobId, limit: 2, cursor: first.nextCursor! });
    expect(second).toMatchObject({ items: [{ workerId: 'w2' }], nextCursor: null });
    const outside = await listJobAttempts(db.prisma, { scope, jobId }).catch((e: unknown) => e);
    expect(isRunledgerError(outside, 'job.not_found')).toBe(true);
    const bad = await listJobAttempts(db.prisma, { scope: org, jobId, cursor: 'x' }).catch((e: unknown) => e);
    expect(isRunledgerError(bad, 'job.invalid_input') && bad.message).toContain('cursor');
  });

  it('is deleted with its job by the purge', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'att.purge', payload: {} });
    await completeJob(db.prisma, { ...(await claim('att.purge')), output: null });
    expect(await attempts(jobId)).toHaveLength(1);
    await purgeFinished(db.prisma, { olderThan: new Date(Date.now() + 60_000), statuses: ['SUCCEEDED'] });
    const [left] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_attempts WHERE job_id = ${jobId}::uuid`;
    expect(left!.n).toBe(0);
  });

  it('adds no statement to a claim, a batch completion, a failure or a release', async () => {
    await enqueueJob(db.prisma, { jobType: 'att.count.warm', payload: {} });
    for (let i = 0; i < 21; i += 1) await enqueueJob(db.prisma, { jobType: 'att.count', payload: { i } });
    const counter = countingClient(db);
    try {
      // Connect and let the client's one-time checks run outside the count.
      const [warm] = await claimJobs(counter.client, { workerId: 'c', jobTypes: ['att.count.warm'], limit: 1, leaseSeconds: 60 });
      await completeJobs(counter.client, [{ ...warm!, output: null }]);
      let before = counter.count();
      const leases = await claimJobs(counter.client, { workerId: 'c', jobTypes: ['att.count'], limit: 21, leaseSeconds: 60, markRunning: true });
      expect(counter.count() - before).toBe(1);
      before = counter.count();
      await completeJobs(
        counter.client,
        leases.slice(0, 19).map((lease) => ({ ...lease, output: null })),
      );
      expect(counter.count() - before).toBe(1);
      before = counter.count();
      await failJob(counter.client, { ...leases[19]!, error: { code: 'x', message: 'y' }, retryable: true });
      expect(counter.count() - before).toBe(1);
      before = counter.count();
      await releaseJob(counter.client, { ...leases[20]!, reason: 'job.worker_shutdown' });
      expect(counter.count() - before).toBe(1);
    } finally {
      await counter.close();
    }
    const [closed] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_attempt_history a JOIN runledger.job_queue j ON j.id = a.job_id
       WHERE j.job_type = 'att.count' AND a.finished_at IS NOT NULL`;
    expect(closed!.n).toBe(21);
  });
});
