/**
 * A completion batch that holds a workflow-managed job is one transaction for
 * the whole batch (direct jobs included). If it fails, `completeJobs`
 * throws and nothing of the batch is kept; `completeJobsSettled` (the
 * worker's batcher) gives each item a transaction of its own, so one item's
 * trouble does not fail, and re-run, the others' work.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ConflictError,
  InternalError,
  claimJobs,
  completeJobs,
  enqueueJob,
  enqueueWorkflowRun,
  getJob,
  noOrganizationScope,
  listJobEvents,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { completeJobsSettled } from '../../src/queue/complete.js';
import { CompletionBatcher } from '../../src/worker/completion-batcher.js';
import type { TerminalStep } from '../../src/coordination/dependency-release.js';
import { useTestDatabase } from '../harness/database.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

// The workflow engine's release runs for real unless a failure is injected.
const inject = vi.hoisted(() => ({ failures: [] as Error[] }));
vi.mock('../../src/coordination/dependency-release.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/coordination/dependency-release.js')>();
  return {
    ...actual,
    releaseDependents: async (tx: never, locks: never, steps: readonly TerminalStep[]) => {
      const failure = inject.failures.shift();
      if (failure) throw failure;
      return actual.releaseDependents(tx, locks, steps);
    },
  };
});

const db = useTestDatabase();

beforeEach(() => {
  inject.failures.length = 0;
});

async function claimOne(jobType: string): Promise<ClaimedJob> {
  const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
  return job!;
}

async function directAndWorkflowLeases(name: string): Promise<{ direct: ClaimedJob; managed: ClaimedJob; workflowRunId: string }> {
  await enqueueJob(db.prisma, { jobType: `${name}.direct`, payload: {} });
  // A dependent, so that completing `a` goes through the release (where failures are injected).
  const { workflowRunId } = await enqueueWorkflowRun(
    db.prisma,
    workflow(name).job('a', `${name}.a`, {}).job('b', `${name}.b`, {}).afterSuccess('b', ['a']).build(),
  );
  return { direct: await claimOne(`${name}.direct`), managed: await claimOne(`${name}.a`), workflowRunId };
}

async function succeededEvents(jobId: string): Promise<number> {
  return (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId })).items.filter((event) => event.eventType === 'SUCCEEDED').length;
}

describe('completion of a mixed batch when the workflow step fails', () => {
  it('settled: the direct job is reported succeeded, the workflow job as the error, and the workflow job is untouched', async () => {
    const { direct, managed, workflowRunId } = await directAndWorkflowLeases('settled');
    const injected = new InternalError('workflow.internal_state', 'injected failure');
    // The batch's transaction fails, then the workflow job's own transaction fails too.
    inject.failures.push(injected, injected);
    const outcomes = await completeJobsSettled(db.prisma, [{ lease: direct }, { lease: managed }]);
    expect(outcomes).toEqual([
      { jobId: direct.jobId, outcome: 'succeeded', finishedAt: expect.any(Date) },
      { jobId: managed.jobId, outcome: 'error', error: injected },
    ]);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: direct.jobId })).toMatchObject({ status: 'SUCCEEDED' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: managed.jobId })).toMatchObject({ status: 'LEASED', output: null });
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'RUNNING' });
    expect(await succeededEvents(managed.jobId)).toBe(0);
  });

  it('completeJobs throws the error and keeps nothing of the batch; called again, both complete once', async () => {
    const { direct, managed } = await directAndWorkflowLeases('thrown');
    inject.failures.push(new InternalError('workflow.internal_state', 'injected failure'));
    await expect(completeJobs(db.prisma, [direct, managed])).rejects.toMatchObject({ code: 'workflow.internal_state' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: direct.jobId })).toMatchObject({ status: 'LEASED' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: managed.jobId })).toMatchObject({ status: 'LEASED' });
    expect((await completeJobs(db.prisma, [direct, managed])).map((o) => o.outcome)).toEqual(['succeeded', 'succeeded']);
    expect(await succeededEvents(direct.jobId)).toBe(1);
    expect(await succeededEvents(managed.jobId)).toBe(1);
  });

  it('the worker batcher retries only the failed step after a transient failure and reports both jobs succeeded', async () => {
    const { direct, managed, workflowRunId } = await directAndWorkflowLeases('batcher');
    inject.failures.push(new ConflictError('database.transaction_conflict', 'injected conflict'));
    const batcher = new CompletionBatcher(db.prisma, 0, 10);
    const results = await Promise.all([batcher.complete(direct, 'd'), batcher.complete(managed, 'm')]);
    expect(results.map((result) => result.outcome)).toEqual(['succeeded', 'succeeded']);
    expect(inject.failures).toEqual([]);
    expect(await succeededEvents(direct.jobId)).toBe(1);
    expect(await succeededEvents(managed.jobId)).toBe(1);
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'SUCCEEDED', output: 'm' });
  });
});
