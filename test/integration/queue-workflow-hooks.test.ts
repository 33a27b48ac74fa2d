/**
 * The queue's contract with the workflow engine: every transition of a
 * workflow-managed job moves its step in the same transaction (claim ->
 * nothing written, the step reads as RUNNING; retry -> ENQUEUED; success /
 * dead-letter / cancel / reaped lease -> terminal and released), a failure of the release rolls the job transition
 * back, and direct jobs never reach the engine.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  InternalError,
  cancelJob,
  claimJobs,
  completeJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  noOrganizationScope,
  markJobRunning,
  reapExpiredLeases,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import type { TerminalStep } from '../../src/coordination/dependency-release.js';
import { useTestDatabase } from '../harness/database.js';
import { expireLeases } from '../harness/leases.js';

// The release runs for real; calls are recorded and a failure can be injected.
const release = vi.hoisted(() => ({ calls: [] as TerminalStep[][], failNext: false }));
vi.mock('../../src/coordination/dependency-release.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/coordination/dependency-release.js')>();
  return {
    ...actual,
    releaseDependents: async (tx: never, locks: never, steps: readonly TerminalStep[]) => {
      release.calls.push([...steps]);
      if (release.failNext) throw new InternalError('workflow.internal_state', 'injected failure');
      return actual.releaseDependents(tx, locks, steps);
    },
  };
});

const db = useTestDatabase();

beforeEach(() => {
  release.calls.length = 0;
  release.failNext = false;
});

/** A run of one job step followed (on any outcome) by an external step; returns the job step and its job. */
async function workflowJob(jobType: string, maxAttempts = 3): Promise<{ jobId: string; stepId: string; workflowRunId: string }> {
  const { workflowRunId } = await enqueueWorkflowRun(
    db.prisma,
    workflow('wf').job('only', jobType, { step: jobType }, { maxAttempts }).external('after').afterTerminal('after', ['only']).build(),
  );
  const [row] = await db.prisma.$queryRaw<{ id: string; job_id: string }[]>`
    SELECT id, job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = 'only'`;
  return { jobId: row!.job_id, stepId: row!.id, workflowRunId };
}

async function step(stepId: string) {
  const [row] = await db.prisma.$queryRaw<
    { status: string; started: boolean; status_reason: string | null; last_error_code: string | null; last_error_message: string | null; output: unknown }[]
  >`
    SELECT status, started_at IS NOT NULL AS started, status_reason, last_error_code, last_error_message, output
      FROM runledger.workflow_step_states WHERE id = ${stepId}::uuid`;
  return row!;
}

/** The step row as stored (the view above derives RUNNING and the open attempt's start from the job). */
async function storedStep(stepId: string) {
  const [row] = await db.prisma.$queryRaw<{ status: string; started_at: Date | null; updated_at: Date; xmin: string }[]>`
    SELECT status::text, started_at, updated_at, xmin::text FROM runledger.workflow_steps WHERE id = ${stepId}::uuid`;
  return row!;
}

async function attemptStarts(jobId: string): Promise<Date[]> {
  const rows = await db.prisma.$queryRaw<{ started_at: Date }[]>`
    SELECT started_at FROM runledger.job_attempt_history WHERE job_id = ${jobId}::uuid ORDER BY seq`;
  return rows.map((row) => row.started_at);
}

async function runStatus(workflowRunId: string): Promise<string> {
  const [row] = await db.prisma.$queryRaw<{ status: string }[]>`SELECT status::text FROM runledger.workflow_runs WHERE id = ${workflowRunId}::uuid`;
  return row!.status;
}

async function claim(jobType: string, markRunning = false): Promise<ClaimedJob> {
  const [claimed] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning });
  return claimed!;
}

describe('workflow hooks of the queue', () => {
  it('reads the step as RUNNING while its job is leased, without writing the step row', async () => {
    const { jobId, stepId } = await workflowJob('wf.claim');
    const before = await storedStep(stepId);
    const claimed = await claim('wf.claim');
    expect(claimed.workflowManaged).toBe(true);
    expect(await step(stepId)).toMatchObject({ status: 'RUNNING', started: true });
    await markJobRunning(db.prisma, claimed);
    expect(await step(stepId)).toMatchObject({ status: 'RUNNING' });
    // Neither the claim nor mark-running wrote the step: same row version, still ENQUEUED with no start.
    expect(await storedStep(stepId)).toEqual(before);
    expect(before).toMatchObject({ status: 'ENQUEUED', started_at: null });
    // The step's start is the open attempt's, and is stored by the statement that ends it.
    await completeJob(db.prisma, { ...claimed, output: 1 });
    expect((await storedStep(stepId)).started_at).toEqual(await attemptStarts(jobId).then((starts) => starts[0]));
  });

  it('puts the step back to ENQUEUED on a scheduled retry, keeping its start', async () => {
    const { stepId } = await workflowJob('wf.retry');
    const first = await claim('wf.retry');
    await failJob(db.prisma, { ...first, error: { code: 'flaky', message: 'again' }, retryable: true });
    expect(await step(stepId)).toMatchObject({ status: 'ENQUEUED', started: true, last_error_code: 'flaky', status_reason: 'job.retry_scheduled' });
    const firstStart = (await storedStep(stepId)).started_at;
    expect(firstStart).not.toBeNull();
    // The second attempt keeps the first one's start.
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${first.jobId}::uuid`;
    await failJob(db.prisma, { ...(await claim('wf.retry')), error: { code: 'flaky', message: 'again' }, retryable: true });
    expect((await storedStep(stepId)).started_at).toEqual(firstStart);
    expect(release.calls).toEqual([]);
  });

  it('puts the step back to ENQUEUED when an expired lease is retried', async () => {
    const { jobId, stepId } = await workflowJob('wf.reap');
    await claim('wf.reap', true);
    await expireLeases(db.prisma, jobId);
    await reapExpiredLeases(db.prisma, { limit: 10 });
    expect(await step(stepId)).toMatchObject({ status: 'ENQUEUED', last_error_code: 'job.lease_expired' });
  });

  it('puts the step back as unclaimed when a lease that never started expires, with no terminal transition', async () => {
    const { jobId, stepId } = await workflowJob('wf.unstarted', 1);
    await claim('wf.unstarted');
    expect(await step(stepId)).toMatchObject({ status: 'RUNNING', started: true });
    await expireLeases(db.prisma, jobId);
    expect(await reapExpiredLeases(db.prisma, { limit: 10 })).toEqual({ retried: [jobId], deadLettered: [] });
    expect(await step(stepId)).toMatchObject({ status: 'ENQUEUED', started: false, last_error_code: null });
    expect(release.calls).toEqual([]);
  });

  it('moves each terminal job transition onto its step and releases it, in the same transaction', async () => {
    const done = await workflowJob('wf.done');
    await completeJob(db.prisma, { ...(await claim('wf.done')), output: { total: 3 } });
    const dead = await workflowJob('wf.dead');
    await failJob(db.prisma, { ...(await claim('wf.dead')), error: { code: 'fatal', message: 'no' }, retryable: false });
    const expired = await workflowJob('wf.expired', 1);
    await claim('wf.expired', true);
    await expireLeases(db.prisma, expired.jobId);
    await reapExpiredLeases(db.prisma, { limit: 10 });
    const canceled = await workflowJob('wf.cancel');
    await cancelJob(db.prisma, { jobId: canceled.jobId, scope: noOrganizationScope(), reason: 'user' });

    expect(await step(done.stepId)).toMatchObject({ status: 'SUCCEEDED', output: { total: 3 }, last_error_code: null });
    expect(await step(dead.stepId)).toMatchObject({ status: 'FAILED', last_error_code: 'fatal', last_error_message: 'no', output: null });
    expect(await step(expired.stepId)).toMatchObject({ status: 'FAILED', last_error_code: 'job.lease_expired' });
    expect(await step(canceled.stepId)).toMatchObject({ status: 'CANCELED', status_reason: 'user' });
    // Each released its external dependent: the runs now wait for it.
    for (const run of [done, dead, expired, canceled]) expect(await runStatus(run.workflowRunId)).toBe('WAITING_FOR_EXTERNAL');
    expect(release.calls).toEqual([
      [{ stepId: done.stepId, workflowRunId: done.workflowRunId, status: 'SUCCEEDED', hasDependents: true }],
      [{ stepId: dead.stepId, workflowRunId: dead.workflowRunId, status: 'FAILED', hasDependents: true }],
      [{ stepId: expired.stepId, workflowRunId: expired.workflowRunId, status: 'FAILED', hasDependents: true }],
      [{ stepId: canceled.stepId, workflowRunId: canceled.workflowRunId, status: 'CANCELED', hasDependents: true }],
    ]);
  });

  it('rolls the job transition back when the release fails', async () => {
    const { jobId, stepId } = await workflowJob('wf.atomic');
    const lease = await claim('wf.atomic');
    release.failNext = true;
    await expect(completeJob(db.prisma, { ...lease, output: 1 })).rejects.toMatchObject({ code: 'workflow.internal_state' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'LEASED', output: null });
    expect(await step(stepId)).toMatchObject({ status: 'RUNNING', output: null });
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_trail WHERE job_id = ${jobId}::uuid AND event_type = 'SUCCEEDED'`;
    expect(row?.n).toBe(0);
  });

  it('does not reach the workflow engine for direct jobs', async () => {
    await enqueueJob(db.prisma, { jobType: 'direct', payload: {} });
    const claimed = await claim('direct');
    expect(claimed.workflowManaged).toBe(false);
    await completeJob(db.prisma, claimed);
    expect(release.calls).toEqual([]);
  });
});
