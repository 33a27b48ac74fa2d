/**
 * Steps see their inputs: a step's handler context carries its run, its key
 * and its prerequisites' outputs and terminal statuses, read by the claim
 * statement itself for a whole batch of jobs, however many prerequisites each
 * has.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimJobs, completeJob, completeJobs, enqueueJob, enqueueWorkflowRun, failJob, workflow } from '../../src/index.js';
import { defineJob, type JobContext } from '../../src/worker/index.js';
import { stepInputsOf } from '../../src/job/step-inputs.js';
import { countAllWords, countWords, sumCounts } from '../../examples/readme/fan-in.js';
import { latch } from '../fixtures/worker-support/latches.js';
import { countingClient } from '../harness/counting-client.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { claimAll } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

/** Claims the runnable jobs of `jobTypes` and completes them all with `output`. */
async function settleParts(jobTypes: string[], output: { [key: string]: number }): Promise<void> {
  const jobs = await claimJobs(db.prisma, { workerId: 'test-worker', jobTypes, limit: 1000, leaseSeconds: 60, markRunning: true });
  await completeJobs(
    db.prisma,
    jobs.map((lease) => ({ ...lease, output })),
  );
}

describe('step inputs', () => {
  it("hands a join step its 20 prerequisites' outputs in the claim statement itself", async () => {
    const builder = workflow('inputs.join');
    const keys = Array.from({ length: 20 }, (_, i) => `part-${String(i).padStart(2, '0')}`);
    for (const key of keys) builder.job(key, 'inputs.part', {});
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.job('join', 'inputs.join', {}).afterSuccess('join', keys).build());
    await settleParts(['inputs.part'], { n: 1 });

    const counting = countingClient(db);
    try {
      // The client's first statement also asks its isolation once (src/client/transaction.ts); then: claims only.
      await claimJobs(counting.client, { workerId: 'test-worker', jobTypes: ['inputs.none'], limit: 1, leaseSeconds: 60 });
      const before = counting.count();
      const [join] = await claimJobs(counting.client, { workerId: 'test-worker', limit: 10, leaseSeconds: 60, markRunning: true });
      expect(counting.count() - before).toBe(1);
      expect(join?.jobType).toBe('inputs.join');
      const step = stepInputsOf(join!)!;
      expect(step).toMatchObject({ workflowRunId, stepKey: 'join' });
      expect(step.prerequisites.keys()).toEqual(keys);
      expect(step.prerequisites.all().every((p) => p.status === 'SUCCEEDED' && p.releaseMode === 'ON_SUCCESS')).toBe(true);
      expect(step.prerequisites.all().map((p) => p.output)).toEqual(keys.map(() => ({ n: 1 })));
    } finally {
      await counting.close();
    }
  });

  it('gives a claimed step with no prerequisites its run and key, and a direct job of the same claim no step', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('inputs.root').job('root', 'inputs.mixed', { n: 1 }).build());
    const { jobId: directId } = await enqueueJob(db.prisma, { jobType: 'inputs.mixed', payload: { n: 2 } });
    const claimed = await claimJobs(db.prisma, { workerId: 'test-worker', jobTypes: ['inputs.mixed'], limit: 10, leaseSeconds: 60 });
    expect(claimed).toHaveLength(2);
    const direct = claimed.find((job) => job.jobId === directId)!;
    const root = claimed.find((job) => job.jobId !== directId)!;
    expect(direct.step).toBeNull();
    expect(stepInputsOf(direct)).toBeUndefined();
    expect(root.step).toEqual({ workflowRunId, stepKey: 'root', prerequisites: [] });
    expect(stepInputsOf(root)!.prerequisites.size).toBe(0);
  });

  it('gives an afterTerminal step the terminal status of a failed prerequisite, without an output', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('inputs.terminal')
        .job('ok', 'inputs.ok', {})
        .job('bad', 'inputs.bad', {})
        .job('report', 'inputs.report', {})
        .afterTerminal('report', ['ok', 'bad'])
        .build(),
    );
    for (const job of await claimAll(db.prisma)) {
      if (job.jobType === 'inputs.ok') await completeJob(db.prisma, { ...job, output: { fine: true } });
      else await failJob(db.prisma, { ...job, error: { code: 'x.broken', message: 'broken' }, retryable: false });
    }
    const [report] = await claimAll(db.prisma);
    const step = stepInputsOf(report!)!;
    expect(step.workflowRunId).toBe(workflowRunId);
    expect(step.prerequisites.get('ok')).toMatchObject({ status: 'SUCCEEDED', releaseMode: 'ON_TERMINAL', output: { fine: true } });
    expect(step.prerequisites.get('bad')).toMatchObject({ status: 'FAILED', releaseMode: 'ON_TERMINAL', output: null });
    expect(step.prerequisites.get('missing')).toBeUndefined();
  });

  it('gives a handler its run, step key and organization, and a direct job none', async () => {
    const seen: Record<string, Pick<JobContext, 'workflowRunId' | 'stepKey' | 'organizationId'> & { prerequisites: number }> = {};
    const all = latch<void>();
    const probe = defineJob('inputs.probe', z.object({ name: z.string() }), (payload, ctx) => {
      seen[payload.name] = {
        workflowRunId: ctx.workflowRunId,
        stepKey: ctx.stepKey,
        organizationId: ctx.organizationId,
        prerequisites: ctx.prerequisites.size,
      };
      if (Object.keys(seen).length === 3) all.open();
      return null;
    });
    await startWorker({ handlers: [probe] });
    const org = '0193a0e0-0000-7000-8000-000000000001';
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('inputs.probe')
        .organization(org)
        .job('first', probe, { name: 'first' })
        .job('second', probe, { name: 'second' })
        .afterSuccess('second', ['first'])
        .build(),
    );
    await enqueueJob(db.prisma, probe, { name: 'direct' });
    await all.promise;
    expect(seen.first).toEqual({ workflowRunId, stepKey: 'first', organizationId: org, prerequisites: 0 });
    expect(seen.second).toEqual({ workflowRunId, stepKey: 'second', organizationId: org, prerequisites: 1 });
    expect(seen.direct).toEqual({ workflowRunId: null, stepKey: null, organizationId: null, prerequisites: 0 });
  });

  it("runs the README's fan-out/fan-in example: the join step sums its inputs", async () => {
    await startWorker({ handlers: [countWords, sumCounts] });
    const result = await countAllWords(db.prisma, ['one two three', 'four five', '', 'six']);
    expect(result).toMatchObject({ total: 6, parts: 4 });
    expect(typeof result.run).toBe('string');
  });

  it('refuses to type a prerequisite with the definition of another job type', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('inputs.mistyped').job('a', 'inputs.a', {}).job('b', 'inputs.b', {}).afterSuccess('b', ['a']).build(),
    );
    await settleParts(['inputs.a'], { words: 1 });
    const [b] = await claimAll(db.prisma);
    const step = stepInputsOf(b!)!;
    expect(step.workflowRunId).toBe(workflowRunId);
    expect(() => step.prerequisites.get('a', countWords)).toThrow(
      expect.objectContaining({ name: 'TerminalError', code: 'workflow.prerequisite_type_mismatch' }),
    );
  });
});
