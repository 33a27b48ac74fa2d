/**
 * A job step's RUNNING and start are read from its job (src/coordination/step-state.ts): a claim writes no step
 * row, and every statement that ends an attempt stores the step's start from that attempt when the step has
 * none. One case per such statement, each comparing the stored start with the attempt's own (from
 * job_attempt_history), and the cases where nothing may be stored (a lease given back unstarted, a job
 * canceled before any claim).
 */
import { describe, expect, it } from 'vitest';
import {
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  continueJob,
  completeJob,
  enqueueWorkflowRun,
  failJob,
  noOrganizationScope,
  reapExpiredLeases,
  releaseJob,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { stepsByKey } from '../harness/workflow-helpers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
const scope = noOrganizationScope();

async function oneStep(jobType: string, options: { maxAttempts?: number; allowContinuation?: boolean } = {}) {
  const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow(`start.${jobType}`).job('a', jobType, {}, options).build());
  const step = (await stepsByKey(db.prisma, workflowRunId)).a!;
  return { workflowRunId, stepId: step.id, jobId: step.jobId! };
}

async function claim(jobType: string, markRunning = true): Promise<ClaimedJob> {
  const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning });
  return job!;
}

async function stored(stepId: string): Promise<{ status: string; started_at: Date | null }> {
  const [row] = await db.prisma.$queryRaw<{ status: string; started_at: Date | null }[]>`
    SELECT status::text, started_at FROM runledger.workflow_steps WHERE id = ${stepId}::uuid`;
  return row!;
}

async function read(workflowRunId: string) {
  return (await stepsByKey(db.prisma, workflowRunId)).a!;
}

/** The start of each attempt of the job, oldest first (archived and open alike). */
async function attemptStarts(jobId: string): Promise<Date[]> {
  const rows = await db.prisma.$queryRaw<{ started_at: Date }[]>`
    SELECT started_at FROM runledger.job_attempt_history WHERE job_id = ${jobId}::uuid ORDER BY seq`;
  return rows.map((row) => row.started_at);
}

async function expire(jobId: string): Promise<void> {
  await expireLeases(db.prisma, jobId);
}

describe('a job step reads as RUNNING from its job, and stores its start when an attempt ends', () => {
  it("reads RUNNING and the open attempt's start while leased, with the row still ENQUEUED", async () => {
    const { workflowRunId, stepId, jobId } = await oneStep('start.leased');
    expect(await read(workflowRunId)).toMatchObject({ status: 'ENQUEUED', startedAt: null });
    await claim('start.leased', false);
    expect(await read(workflowRunId)).toMatchObject({ status: 'RUNNING', startedAt: (await attemptStarts(jobId))[0] });
    expect(await stored(stepId)).toEqual({ status: 'ENQUEUED', started_at: null });
  });

  it("stores the attempt's start when the job is canceled while leased, and none when canceled before a claim", async () => {
    const leased = await oneStep('start.cancel');
    await claim('start.cancel');
    await cancelJob(db.prisma, { scope, jobId: leased.jobId, reason: 'operator' });
    expect(await stored(leased.stepId)).toEqual({ status: 'CANCELED', started_at: (await attemptStarts(leased.jobId))[0] });

    const pending = await oneStep('start.cancel.pending');
    await cancelJob(db.prisma, { scope, jobId: pending.jobId, reason: 'operator' });
    expect(await stored(pending.stepId)).toEqual({ status: 'CANCELED', started_at: null });
  });

  it("stores the attempt's start when the run is canceled with the step leased", async () => {
    const { workflowRunId, stepId, jobId } = await oneStep('start.runcancel');
    await claim('start.runcancel');
    await cancelWorkflowRun(db.prisma, { scope, workflowRunId, reason: 'operator' });
    expect(await stored(stepId)).toEqual({ status: 'CANCELED', started_at: (await attemptStarts(jobId))[0] });
  });

  it("stores the first attempt's start when a started lease is reaped, retried or dead-lettered", async () => {
    const retried = await oneStep('start.reap.retry', { maxAttempts: 3 });
    await claim('start.reap.retry');
    await expire(retried.jobId);
    await reapExpiredLeases(db.prisma, { limit: 10 });
    const first = (await attemptStarts(retried.jobId))[0];
    expect(await stored(retried.stepId)).toEqual({ status: 'ENQUEUED', started_at: first });
    // The next attempt reads as RUNNING and keeps the first start.
    await claim('start.reap.retry');
    expect(await read(retried.workflowRunId)).toMatchObject({ status: 'RUNNING', startedAt: first });

    const dead = await oneStep('start.reap.dead', { maxAttempts: 1 });
    await claim('start.reap.dead');
    await expire(dead.jobId);
    await reapExpiredLeases(db.prisma, { limit: 10 });
    expect(await stored(dead.stepId)).toEqual({ status: 'FAILED', started_at: (await attemptStarts(dead.jobId))[0] });
  });

  it('stores nothing when a lease is given back unstarted (released, or reaped before it ran)', async () => {
    const released = await oneStep('start.release');
    await releaseJob(db.prisma, { ...(await claim('start.release', false)), reason: 'job.worker_shutdown' });
    expect(await stored(released.stepId)).toEqual({ status: 'ENQUEUED', started_at: null });
    expect(await read(released.workflowRunId)).toMatchObject({ status: 'ENQUEUED', startedAt: null });

    const unstarted = await oneStep('start.unstarted');
    await claim('start.unstarted', false);
    await expire(unstarted.jobId);
    await reapExpiredLeases(db.prisma, { limit: 10 });
    expect(await stored(unstarted.stepId)).toEqual({ status: 'ENQUEUED', started_at: null });
  });

  it("stores the slice's start when a step continues, and keeps it through the next slice", async () => {
    const { workflowRunId, stepId, jobId } = await oneStep('start.slice', { allowContinuation: true });
    await continueJob(db.prisma, { ...(await claim('start.slice')), delayMs: 0 });
    const first = (await attemptStarts(jobId))[0];
    expect(await stored(stepId)).toMatchObject({ status: 'ENQUEUED', started_at: first });
    await claim('start.slice');
    expect(await read(workflowRunId)).toMatchObject({ status: 'RUNNING', startedAt: first });
  });

  it('moves a step an earlier version stored as RUNNING at claim like any other (retry, then success)', async () => {
    const { workflowRunId, stepId, jobId } = await oneStep('start.legacy', { maxAttempts: 3 });
    const first = await claim('start.legacy');
    // What the claim of the version before migration 20261223000000 wrote.
    await db.prisma.$executeRaw`UPDATE runledger.workflow_steps SET status = 'RUNNING', started_at = now() WHERE id = ${stepId}::uuid`;
    const legacyStart = (await stored(stepId)).started_at;
    expect(await read(workflowRunId)).toMatchObject({ status: 'RUNNING', startedAt: legacyStart });
    await failJob(db.prisma, { ...first, error: { code: 'flaky', message: 'again' }, retryable: true });
    expect(await stored(stepId)).toEqual({ status: 'ENQUEUED', started_at: legacyStart });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
    const second = await claim('start.legacy');
    await db.prisma.$executeRaw`UPDATE runledger.workflow_steps SET status = 'RUNNING' WHERE id = ${stepId}::uuid`;
    await completeJob(db.prisma, { ...second, output: 'ok' });
    expect(await read(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', startedAt: legacyStart, output: 'ok' });
  });
});
