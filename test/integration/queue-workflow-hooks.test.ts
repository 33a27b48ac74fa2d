import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  InternalError,
  cancelJob,
  claimJobs,
  completeJobSuccess,
  enqueueJob,
  failJob,
  getJob,
  globalScope,
  markJobRunning,
  reapExpiredLeases,
  type ClaimedJob,
} from '../../src/index.js';
import type { WorkflowJobTerminalTransition } from '../../src/workflow/job-hooks.js';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';

// The workflow engine's terminal processing is observed here, not exercised: the
// queue's contract is to call it, once per job, inside the transition's transaction.
const terminal = vi.hoisted(() => ({ calls: [] as WorkflowJobTerminalTransition[], failNext: false }));
vi.mock('../../src/workflow/terminal.js', () => ({
  processWorkflowStepTerminalByJobId: async (_tx: unknown, transition: WorkflowJobTerminalTransition) => {
    terminal.calls.push(transition);
    if (terminal.failNext) throw new InternalError('workflow.internal_state', 'injected failure');
  },
}));

const db = useTestDatabase();

beforeEach(() => {
  terminal.calls.length = 0;
  terminal.failNext = false;
});

/** A job enqueued for a step of a hand-written workflow run, as the workflow engine would leave it. */
async function workflowJob(jobType: string, maxAttempts = 3): Promise<{ jobId: string; stepId: string }> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: { step: jobType }, maxAttempts });
  const runId = newId();
  const stepId = newId();
  await db.prisma.$executeRaw`
    INSERT INTO runledger.workflow_runs (id, workflow_type) VALUES (${runId}::uuid, 'wf')`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, job_type, payload, status, job_id, released_at)
    VALUES (${stepId}::uuid, ${runId}::uuid, ${jobType}, 'JOB', ${jobType}, '{}'::jsonb, 'ENQUEUED', ${jobId}::uuid, now())`;
  return { jobId, stepId };
}

async function step(stepId: string) {
  const [row] = await db.prisma.$queryRaw<{ status: string; started: boolean; last_error_code: string | null }[]>`
    SELECT status, started_at IS NOT NULL AS started, last_error_code FROM runledger.workflow_steps WHERE id = ${stepId}::uuid`;
  return row!;
}

async function claim(jobType: string, markRunning = false): Promise<ClaimedJob> {
  const [claimed] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning });
  return claimed!;
}

describe('workflow hooks of the queue', () => {
  it('moves the step to RUNNING when its job is claimed', async () => {
    const { stepId } = await workflowJob('wf.claim');
    const claimed = await claim('wf.claim');
    expect(claimed.workflowManaged).toBe(true);
    expect(await step(stepId)).toMatchObject({ status: 'RUNNING', started: true });
    await markJobRunning(db.prisma, claimed);
    expect(await step(stepId)).toMatchObject({ status: 'RUNNING' });
  });

  it('puts the step back to ENQUEUED on a scheduled retry, keeping its start', async () => {
    const { stepId } = await workflowJob('wf.retry');
    await failJob(db.prisma, await claim('wf.retry'), { code: 'flaky', message: 'again', retryable: true });
    expect(await step(stepId)).toEqual({ status: 'ENQUEUED', started: true, last_error_code: 'flaky' });
    expect(terminal.calls).toEqual([]);
  });

  it('puts the step back to ENQUEUED when an expired lease is retried', async () => {
    const { jobId, stepId } = await workflowJob('wf.reap');
    await claim('wf.reap', true);
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET lease_expires_at = now() - interval '1 second' WHERE id = ${jobId}::uuid`;
    await reapExpiredLeases(db.prisma, { limit: 10 });
    expect(await step(stepId)).toMatchObject({ status: 'ENQUEUED', last_error_code: 'job.lease_expired' });
  });

  it('puts the step back as unclaimed when a lease that never started expires, with no terminal transition', async () => {
    const { jobId, stepId } = await workflowJob('wf.unstarted', 1);
    await claim('wf.unstarted');
    expect(await step(stepId)).toMatchObject({ status: 'RUNNING', started: true });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET lease_expires_at = now() - interval '1 second' WHERE id = ${jobId}::uuid`;
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [jobId], deadLettered: [] });
    expect(await step(stepId)).toEqual({ status: 'ENQUEUED', started: false, last_error_code: null });
    expect(terminal.calls).toEqual([]);
  });

  it('hands each terminal job transition to the workflow engine', async () => {
    const done = await workflowJob('wf.done');
    await completeJobSuccess(db.prisma, await claim('wf.done'), { output: { total: 3 } });
    const dead = await workflowJob('wf.dead');
    await failJob(db.prisma, await claim('wf.dead'), { code: 'fatal', message: 'no', retryable: false });
    const expired = await workflowJob('wf.expired', 1);
    await claim('wf.expired', true);
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET lease_expires_at = now() - interval '1 second' WHERE id = ${expired.jobId}::uuid`;
    await reapExpiredLeases(db.prisma, { limit: 10 });
    const canceled = await workflowJob('wf.cancel');
    await cancelJob(db.prisma, { jobId: canceled.jobId, scope: globalScope, reason: 'user' });
    expect(terminal.calls).toEqual([
      { jobId: done.jobId, status: 'SUCCEEDED', output: { total: 3 } },
      { jobId: dead.jobId, status: 'FAILED', errorCode: 'fatal', errorMessage: 'no' },
      { jobId: expired.jobId, status: 'FAILED', errorCode: 'job.lease_expired', errorMessage: expect.any(String) },
      { jobId: canceled.jobId, status: 'CANCELED', statusReason: 'user' },
    ]);
  });

  it('rolls the job transition back when the workflow engine fails', async () => {
    const { jobId } = await workflowJob('wf.atomic');
    const lease = await claim('wf.atomic');
    terminal.failNext = true;
    await expect(completeJobSuccess(db.prisma, lease, { output: 1 })).rejects.toMatchObject({ code: 'workflow.internal_state' });
    expect(await getJob(db.prisma, globalScope, jobId)).toMatchObject({ status: 'LEASED', output: null });
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_events WHERE job_id = ${jobId}::uuid AND event_type = 'SUCCEEDED'`;
    expect(row?.n).toBe(0);
  });

  it('does not call the workflow engine for direct jobs', async () => {
    await enqueueJob(db.prisma, { jobType: 'direct', payload: {} });
    const claimed = await claim('direct');
    expect(claimed.workflowManaged).toBe(false);
    await completeJobSuccess(db.prisma, claimed);
    expect(terminal.calls).toEqual([]);
  });
});
