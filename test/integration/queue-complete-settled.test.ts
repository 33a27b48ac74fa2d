/**
 * On a root client a completion batch is two steps when it holds a
 * workflow-managed job: one autocommit statement for the direct jobs, then a
 * transaction for the rest. A failure of the second step must not misreport
 * what the first one committed (the worker's batcher relies on
 * `completeJobsSuccessSettled` for that).
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ConflictError,
  InternalError,
  claimJobs,
  completeJobsSuccess,
  enqueueJob,
  enqueueWorkflowRun,
  getJob,
  globalScope,
  listJobEvents,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { completeJobsSuccessSettled } from '../../src/queue/lifecycle.js';
import { CompletionBatcher } from '../../src/worker/completion-batcher.js';
import type { WorkflowJobTerminalTransition } from '../../src/workflow/job-hooks.js';
import { useTestDatabase } from '../harness/database.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

// The workflow engine's terminal processing runs for real unless a failure is injected.
const inject = vi.hoisted(() => ({ failures: [] as Error[] }));
vi.mock('../../src/workflow/terminal.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/workflow/terminal.js')>();
  return {
    ...actual,
    processWorkflowStepTerminalByJobId: async (tx: never, transition: WorkflowJobTerminalTransition) => {
      const failure = inject.failures.shift();
      if (failure) throw failure;
      return actual.processWorkflowStepTerminalByJobId(tx, transition);
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
  const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow(name).job('a', `${name}.a`, {}).build());
  return { direct: await claimOne(`${name}.direct`), managed: await claimOne(`${name}.a`), workflowRunId };
}

async function succeededEvents(jobId: string): Promise<number> {
  return (await listJobEvents(db.prisma, globalScope, jobId)).filter((event) => event.eventType === 'SUCCEEDED').length;
}

describe('completion of a mixed batch when the workflow step fails', () => {
  it('settled: the direct job is reported succeeded, the workflow job as the error, and the workflow job is untouched', async () => {
    const { direct, managed, workflowRunId } = await directAndWorkflowLeases('settled');
    const injected = new InternalError('workflow.internal_state', 'injected failure');
    inject.failures.push(injected);
    const outcomes = await completeJobsSuccessSettled(db.prisma, [{ lease: direct }, { lease: managed }]);
    expect(outcomes).toEqual([
      { jobId: direct.jobId, outcome: 'succeeded', finishedAt: expect.any(Date) },
      { jobId: managed.jobId, outcome: 'error', error: injected },
    ]);
    expect(await getJob(db.prisma, globalScope, direct.jobId)).toMatchObject({ status: 'SUCCEEDED' });
    expect(await getJob(db.prisma, globalScope, managed.jobId)).toMatchObject({ status: 'LEASED', output: null });
    expect((await stepsByKey(db.prisma, workflowRunId)).a).toMatchObject({ status: 'RUNNING' });
    expect(await succeededEvents(managed.jobId)).toBe(0);
  });

  it('completeJobsSuccess throws the error; the direct job stays completed, once', async () => {
    const { direct, managed } = await directAndWorkflowLeases('thrown');
    inject.failures.push(new InternalError('workflow.internal_state', 'injected failure'));
    await expect(completeJobsSuccess(db.prisma, [{ lease: direct }, { lease: managed }])).rejects.toMatchObject({ code: 'workflow.internal_state' });
    expect(await getJob(db.prisma, globalScope, direct.jobId)).toMatchObject({ status: 'SUCCEEDED' });
    expect(await getJob(db.prisma, globalScope, managed.jobId)).toMatchObject({ status: 'LEASED' });
    // Called again: the workflow job completes now; the direct one is refused by the fence, not completed twice.
    expect((await completeJobsSuccess(db.prisma, [{ lease: direct }, { lease: managed }])).map((o) => o.outcome)).toEqual([
      'lease_owner_mismatch',
      'succeeded',
    ]);
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
