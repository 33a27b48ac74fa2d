/**
 * Stages and progress: a stage label at enqueue (direct job or workflow
 * step), changed by the handler with `ctx.setStage`, numeric progress with
 * `ctx.progress`; both lease-fenced, each with its event, shown by reads.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  appendWorkflowSteps,
  enqueueJob,
  enqueueWorkflowRun,
  getJob,
  isRunledgerError,
  listJobEvents,
  listWorkflowSteps,
  noOrganizationScope,
  reapExpiredLeases,
  recordJobProgress,
  setJobStage,
  workflow,
} from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { latch, nextEvent } from '../fixtures/worker-support/latches.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';
import { claimOne } from '../harness/workflow-helpers.js';
import { useWorkers } from '../harness/workers.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const scope = noOrganizationScope();

const claim = (jobType: string, workerId = 'w') => claimOne(db.prisma, jobType, { workerId });

const events = async (jobId: string) => (await listJobEvents(db.prisma, { scope, jobId })).items;

describe('stages and progress', () => {
  it('keeps the stage given at enqueue and refuses a blank or too long one, naming the field', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'stage.direct', payload: {}, stage: 'queued for import' });
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ stage: 'queued for import' });
    expect((await claim('stage.direct')).stage).toBe('queued for import');
    for (const stage of ['  ', 'é'.repeat(65)]) {
      const error = await enqueueJob(db.prisma, { jobType: 'stage.bad', payload: {}, stage }).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'job.invalid_input') && (error as { field?: string }).field).toBe('stage');
    }
    const [count] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = 'stage.bad'`;
    expect(count!.n).toBe(0);
  });

  it('writes stage and progress from the handler with their events, and the reads show them', async () => {
    const written = latch();
    const proceed = latch();
    const handler = defineJob('stage.worker', z.object({}), async (_payload, ctx) => {
      await ctx.setStage('download');
      await ctx.progress(3, 10);
      await ctx.setStage('download'); // unchanged: no second event
      await ctx.setStage('transform');
      await ctx.progress(7);
      expect(ctx).toMatchObject({ stage: 'transform', lastProgress: { processed: 7, total: null } });
      const invalid = await ctx.progress(11, 10).catch((e: unknown) => e);
      expect(isRunledgerError(invalid, 'job.invalid_input') && (invalid as { field?: string }).field).toBe('processed');
      expect(isRunledgerError(await ctx.progress(-1).catch((e: unknown) => e), 'job.invalid_input')).toBe(true);
      expect(isRunledgerError(await ctx.progress(1.5).catch((e: unknown) => e), 'job.invalid_input')).toBe(true);
      expect(isRunledgerError(await ctx.setStage(' ').catch((e: unknown) => e), 'job.invalid_input')).toBe(true);
      written.open();
      await proceed.promise;
      return null;
    });
    const worker = await startWorker({ handlers: [handler] });
    const succeeded = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'stage.worker', payload: {} });
    await written.promise;
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'LEASED', stage: 'transform', progress: { processed: 7, total: null } });
    proceed.open();
    await succeeded;
    const trail = (await events(jobId)).filter((e) => e.eventType === 'STAGE_CHANGED' || e.eventType === 'PROGRESS');
    expect(trail.map((e) => [e.eventType, e.payload])).toEqual([
      ['STAGE_CHANGED', { stage: 'download', previousStage: null }],
      ['PROGRESS', { processed: 3, total: 10 }],
      ['STAGE_CHANGED', { stage: 'transform', previousStage: 'download' }],
      ['PROGRESS', { processed: 7, total: null }],
    ]);
  });

  it('refuses a write under a lost lease and writes nothing', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'stage.lost', payload: {}, stage: 'first' });
    const lease = await claim('stage.lost', 'old');
    await expireLeases(db.prisma, jobId);
    expect(isRunledgerError(await setJobStage(db.prisma, { ...lease, stage: 'second' }).catch((e: unknown) => e), 'job.lease_owner_mismatch')).toBe(true);
    await reapExpiredLeases(db.prisma, { limit: 10 });
    await claim('stage.lost', 'new');
    expect(
      isRunledgerError(await recordJobProgress(db.prisma, { ...lease, processed: 1, total: 2 }).catch((e: unknown) => e), 'job.lease_owner_mismatch'),
    ).toBe(true);
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ stage: 'first', progress: null });
    expect((await events(jobId)).filter((e) => e.eventType === 'STAGE_CHANGED' || e.eventType === 'PROGRESS')).toEqual([]);
  });

  it("carries a workflow step's stage to its job, and step reads show the job's live stage and progress", async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('stage.wf').job('a', 'stage.wf.a', {}, { stage: 'waiting' }).job('b', 'stage.wf.b', {}, { stage: 'later' }).afterSuccess('b', ['a']).build(),
    );
    await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope,
      mutationKey: 'more',
      steps: [{ key: 'c', kind: 'job', jobType: 'stage.wf.c', payload: {}, stage: 'appended' }],
      edges: [],
    });
    const lease = await claim('stage.wf.a');
    expect(lease.stage).toBe('waiting');
    await setJobStage(db.prisma, { ...lease, stage: 'crawling' });
    await recordJobProgress(db.prisma, { ...lease, processed: 2, total: 4 });
    const steps = Object.fromEntries((await listWorkflowSteps(db.prisma, { workflowRunId, scope })).items.map((s) => [s.stepKey, s]));
    expect(steps.a).toMatchObject({ stage: 'crawling', progress: { processed: 2, total: 4 } });
    expect(steps.b).toMatchObject({ stage: 'later', progress: null });
    expect(steps.c).toMatchObject({ stage: 'appended' });
    expect((await claim('stage.wf.c')).stage).toBe('appended');

    // The CLI shows the job's stage and progress, and each step's.
    const job = await runCli(db.url, 'jobs', 'show', lease.jobId);
    expect(job.stdout).toMatch(/LEASED\s+run 1\s+attempt 1\/\d+\s+stage crawling\s+2\/4/);
    const run = await runCli(db.url, 'runs', 'show', workflowRunId);
    expect(run.stdout).toMatch(/ a\s+RUNNING\s+job stage\.wf\.a \(id [^)]+\)\s+stage crawling\s+2\/4/);
  });
});
