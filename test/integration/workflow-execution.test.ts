/**
 * Workflows run to completion through the real queue: release order, ON_SUCCESS
 * vs ON_TERMINAL, the breadth-first cancel cascade, retries, run status and
 * the run-terminal notification.
 */
import { describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  listWorkflowStepDependencies,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { claimAll, useRunTerminalListener, runRunnableJobs, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const terminal = useRunTerminalListener(() => db.url);

describe('workflow execution', () => {
  it('runs a diamond: d only after b and c succeed, result = d output', async () => {
    const { workflowRunId, status } = await enqueueWorkflowRun(
      db.prisma,
      workflow('diamond')
        .job('a', 'diamond.a', { n: 1 })
        .job('b', 'diamond.b', {})
        .job('c', 'diamond.c', {})
        .job('d', 'diamond.d', {})
        .afterSuccess('b', ['a'])
        .afterSuccess('c', ['a'])
        .afterSuccess('d', ['b', 'c'])
        .resultStep('d')
        .build(),
    );
    expect(status).toBe('RUNNING');
    let steps = await stepsByKey(db.prisma, workflowRunId);
    expect(Object.fromEntries(Object.entries(steps).map(([k, s]) => [k, s.status]))).toEqual({ a: 'ENQUEUED', b: 'BLOCKED', c: 'BLOCKED', d: 'BLOCKED' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: steps.a!.jobId! })).payload).toEqual({ n: 1 });

    const order: string[] = [];
    // Wave 1: a; wave 2: b and c; wave 3: d. Claiming only what is runnable proves the order.
    for (const expected of [['diamond.a'], ['diamond.b', 'diamond.c'], ['diamond.d']]) {
      const jobs = await claimAll(db.prisma);
      expect(jobs.map((j) => j.jobType).sort()).toEqual(expected);
      steps = await stepsByKey(db.prisma, workflowRunId);
      for (const job of jobs) {
        const key = job.jobType.split('.')[1]!;
        expect(steps[key]!.status).toBe('RUNNING');
        order.push(key);
      }
      await runRunnableJobs(db.prisma); // nothing new is runnable until these complete
      for (const job of jobs) {
        await completeJob(db.prisma, { ...job, output: { from: job.jobType } });
      }
    }
    expect(order[0]).toBe('a');
    expect(order.slice(1, 3).sort()).toEqual(['b', 'c']);
    expect(order[3]).toBe('d');
    const run = await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.result).toEqual({ from: 'diamond.d' });
    expect(run.finishedAt).toBeInstanceOf(Date);
    steps = await stepsByKey(db.prisma, workflowRunId);
    expect(Object.values(steps).every((s) => s.status === 'SUCCEEDED' && s.dependencyCountPending === 0)).toBe(true);
    await terminal.current.flush();
    expect(terminal.current.received.filter((n) => n.workflow_run_id === workflowRunId)).toEqual([{ workflow_run_id: workflowRunId, status: 'SUCCEEDED' }]);
  });

  it('cancels ON_SUCCESS dependents of a failed step breadth-first but releases ON_TERMINAL ones', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('mixed')
        .job('fetch', 'mixed.fetch', {})
        .job('parse', 'mixed.parse', {})
        .job('index', 'mixed.index', {})
        .job('report', 'mixed.report', {})
        .afterSuccess('parse', ['fetch'])
        .afterSuccess('index', ['parse'])
        .afterTerminal('report', ['fetch'])
        .build(),
    );
    await runRunnableJobs(db.prisma, (job) => (job.jobType === 'mixed.fetch' ? { ok: false, code: 'fetch.http_500' } : { ok: true, output: 'ok' }));
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.fetch).toMatchObject({ status: 'FAILED', lastErrorCode: 'fetch.http_500', output: null });
    expect(steps.parse).toMatchObject({
      status: 'CANCELED',
      statusReason: 'workflow.dependency_unsatisfied',
      lastErrorCode: 'workflow.dependency_unsatisfied',
      jobId: null,
    });
    expect(steps.index).toMatchObject({
      status: 'CANCELED',
      statusReason: 'workflow.dependency_unsatisfied',
      dependencyCountUnsatisfied: 1,
      dependencyCountPending: 0,
    });
    expect(steps.report).toMatchObject({ status: 'SUCCEEDED', output: 'ok', dependencyCountUnsatisfied: 0 });
    const run = await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId });
    expect(run).toMatchObject({ status: 'COMPLETED_WITH_ERRORS', result: null });
    await terminal.current.flush();
    expect(terminal.current.received.filter((n) => n.workflow_run_id === workflowRunId)).toEqual([
      { workflow_run_id: workflowRunId, status: 'COMPLETED_WITH_ERRORS' },
    ]);
  });

  it('keeps a retried step ENQUEUED with its first start time, and finishes it on the next attempt', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('retry').job('flaky', 'retry.flaky', {}, { maxAttempts: 3 }).resultStep('flaky').build(),
    );
    const [first] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['retry.flaky'], markRunning: true });
    const started = (await stepsByKey(db.prisma, workflowRunId)).flaky!.startedAt;
    await failJob(db.prisma, { ...first!, error: { code: 'net.reset', message: 'reset' }, retryable: true, retryNotBefore: new Date(Date.now() - 1000) });
    let step = (await stepsByKey(db.prisma, workflowRunId)).flaky!;
    expect(step).toMatchObject({ status: 'ENQUEUED', lastErrorCode: 'net.reset', finishedAt: null });
    expect(step.startedAt).toEqual(started);
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('RUNNING');
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${first!.jobId}::uuid`;
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: { attempt: 2 } }));
    step = (await stepsByKey(db.prisma, workflowRunId)).flaky!;
    expect(step).toMatchObject({ status: 'SUCCEEDED', output: { attempt: 2 } });
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).result).toEqual({ attempt: 2 });
  });

  it('releases a wide fan-out with one batched job insert and records the edges', async () => {
    const builder = workflow('fanout').job('root', 'fan.root', {});
    for (let i = 0; i < 50; i += 1) builder.job(`leaf-${i}`, 'fan.leaf', { i }).afterSuccess(`leaf-${i}`, ['root']);
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.build());
    const edges = (await listWorkflowStepDependencies(db.prisma, { scope: noOrganizationScope(), workflowRunId, limit: 500 })).items;
    expect(edges).toHaveLength(50);
    expect(edges.every((e) => e.prerequisiteStepKey === 'root' && e.releaseMode === 'ON_SUCCESS')).toBe(true);
    await runRunnableJobs(db.prisma, (job) => (job.jobType === 'fan.root' ? { ok: true } : { ok: false, retryable: true }));
    const steps = await stepsByKey(db.prisma, workflowRunId);
    const leaves = Object.values(steps).filter((s) => s.stepKey.startsWith('leaf-'));
    expect(leaves.every((s) => s.status === 'ENQUEUED' && s.jobId !== null)).toBe(true);
    expect(new Set(leaves.map((s) => s.jobId)).size).toBe(50);
  });

  it('sends no notification when the completing transaction rolls back', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('rollback').job('only', 'rollback.only', {}).build());
    const [job] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['rollback.only'], markRunning: true });
    const marker = new Error('host rolls back');
    await expect(
      db.prisma.$transaction(async (tx) => {
        await completeJob(tx, { ...job!, output: 1 });
        expect((await tx.workflowRun.findUniqueOrThrow({ where: { id: workflowRunId } })).status).toBe('SUCCEEDED');
        throw marker;
      }),
    ).rejects.toBe(marker);
    await terminal.current.flush();
    expect(terminal.current.received.filter((n) => n.workflow_run_id === workflowRunId)).toEqual([]);
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('RUNNING');
    await completeJob(db.prisma, { ...job!, output: 1 });
    await terminal.current.flush();
    expect(terminal.current.received.filter((n) => n.workflow_run_id === workflowRunId)).toEqual([{ workflow_run_id: workflowRunId, status: 'SUCCEEDED' }]);
  });
});
