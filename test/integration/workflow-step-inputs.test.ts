/**
 * Steps see their inputs: a step's handler context carries its run, its key
 * and its prerequisites' outputs and terminal statuses, read in one
 * statement for a whole batch of jobs, however many prerequisites each has.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimJobs, completeJobSuccess, completeJobsSuccess, enqueueWorkflowRun, noOrganizationScope, listWorkflowSteps, failJob, workflow } from '../../src/index.js';
import { defineJob, type JobContext } from '../../src/worker/index.js';
import { readStepInputs } from '../../src/workflow/step-inputs.js';
import { countAllWords, countWords, sumCounts } from '../../examples/readme/fan-in.js';
import { latch, nextEvent } from '../fixtures/worker-support/latches.js';
import { countingClient } from '../harness/counting-client.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { claimAll } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

/** Claims the runnable jobs of `jobTypes` and completes them all with `output`. */
async function settleParts(jobTypes: string[], output: { [key: string]: number }): Promise<void> {
  const jobs = await claimJobs(db.prisma, { workerId: 'test-worker', jobTypes, limit: 1000, leaseSeconds: 60, markRunning: true });
  await completeJobsSuccess(db.prisma, jobs.map((lease) => ({ ...lease, output })));
}

describe('step inputs', () => {
  it("reads a join step's 20 prerequisites' outputs in one statement", async () => {
    const builder = workflow('inputs.join');
    const keys = Array.from({ length: 20 }, (_, i) => `part-${String(i).padStart(2, '0')}`);
    for (const key of keys) builder.job(key, 'inputs.part', {});
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.job('join', 'inputs.join', {}).afterSuccess('join', keys).build());
    await settleParts(['inputs.part'], { n: 1 });
    const [join] = await claimAll(db.prisma);
    expect(join?.jobType).toBe('inputs.join');

    const counting = countingClient(db);
    try {
      const before = counting.count();
      const inputs = await readStepInputs(counting.client, [join!.jobId]);
      expect(counting.count() - before).toBe(1);
      const step = inputs.get(join!.jobId)!;
      expect(step).toMatchObject({ workflowRunId, stepKey: 'join' });
      expect(step.prerequisites.keys()).toEqual(keys);
      expect(step.prerequisites.all().every((p) => p.status === 'SUCCEEDED' && p.releaseMode === 'ON_SUCCESS')).toBe(true);
      expect(step.prerequisites.all().map((p) => p.output)).toEqual(keys.map(() => ({ n: 1 })));
    } finally {
      await counting.close();
    }
  });

  it('gives an afterTerminal step the terminal status of a failed prerequisite, without an output', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('inputs.terminal').job('ok', 'inputs.ok', {}).job('bad', 'inputs.bad', {}).job('report', 'inputs.report', {}).afterTerminal('report', ['ok', 'bad']).build(),
    );
    for (const job of await claimAll(db.prisma)) {
      if (job.jobType === 'inputs.ok') await completeJobSuccess(db.prisma, { ...job, output: { fine: true } });
      else await failJob(db.prisma, { ...job, error: { code: 'x.broken', message: 'broken' }, retryable: false });
    }
    const [report] = await claimAll(db.prisma);
    const step = (await readStepInputs(db.prisma, [report!.jobId])).get(report!.jobId)!;
    expect(step.workflowRunId).toBe(workflowRunId);
    expect(step.prerequisites.get('ok')).toMatchObject({ status: 'SUCCEEDED', releaseMode: 'ON_TERMINAL', output: { fine: true } });
    expect(step.prerequisites.get('bad')).toMatchObject({ status: 'FAILED', releaseMode: 'ON_TERMINAL', output: null });
    expect(step.prerequisites.get('missing')).toBeUndefined();
  });

  it("gives a handler its run, step key and organization, and a direct job none", async () => {
    const seen: Record<string, Pick<JobContext, 'workflowRunId' | 'stepKey' | 'organizationId'> & { prerequisites: number }> = {};
    const all = latch<void>();
    const probe = defineJob('inputs.probe', z.object({ name: z.string() }), (payload, ctx) => {
      seen[payload.name] = { workflowRunId: ctx.workflowRunId, stepKey: ctx.stepKey, organizationId: ctx.organizationId, prerequisites: ctx.prerequisites.size };
      if (Object.keys(seen).length === 3) all.open();
      return null;
    });
    await startWorker({ handlers: [probe] });
    const org = '0193a0e0-0000-7000-8000-000000000001';
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('inputs.probe').organization(org).job('first', probe, { name: 'first' }).job('second', probe, { name: 'second' }).afterSuccess('second', ['first']).build(),
    );
    const { enqueueJob } = await import('../../src/index.js');
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

  it("records a retryable job.step_inputs_unavailable, without running the handler, when the step's inputs cannot be read", async () => {
    let ran = 0;
    const step = defineJob('inputs.unreadable', z.object({}), () => {
      ran += 1;
      return null;
    });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('inputs.unreadable').job('only', step, {}, { maxAttempts: 3 }).build());
    // Only the step-inputs read names this column; recording the failure does not.
    await db.prisma.$executeRaw`ALTER TABLE runledger.workflow_step_dependencies RENAME COLUMN release_mode TO release_mode_away`;
    try {
      const worker = await startWorker({ handlers: [step] });
      const failed = nextEvent(worker, 'job:failure');
      expect(await failed).toMatchObject({ code: 'job.step_inputs_unavailable', retryable: true, status: 'PENDING' });
      await worker.stop({ drainMs: 0 });
      expect(ran).toBe(0);
      const {
        items: [only],
      } = await listWorkflowSteps(db.prisma, { scope: noOrganizationScope(), workflowRunId });
      expect(only?.status).toBe('ENQUEUED');
    } finally {
      await db.prisma.$executeRaw`ALTER TABLE runledger.workflow_step_dependencies RENAME COLUMN release_mode_away TO release_mode`;
    }
  });

  it('refuses to type a prerequisite with the definition of another job type', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('inputs.mistyped').job('a', 'inputs.a', {}).job('b', 'inputs.b', {}).afterSuccess('b', ['a']).build());
    await settleParts(['inputs.a'], { words: 1 });
    const [b] = await claimAll(db.prisma);
    const step = (await readStepInputs(db.prisma, [b!.jobId])).get(b!.jobId)!;
    expect(step.workflowRunId).toBe(workflowRunId);
    expect(() => step.prerequisites.get('a', countWords)).toThrow(expect.objectContaining({ name: 'TerminalError', code: 'workflow.prerequisite_type_mismatch' }));
  });
});
