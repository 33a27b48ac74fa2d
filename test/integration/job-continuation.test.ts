/**
 * Continuation with checkpoints: a handler ends a slice with continueNow /
 * continueAfter; the same job runs again as the next run from its
 * checkpoint, never using up its failure budget; workflow steps only when
 * they opted in.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  claimJobs,
  compareAndReplaySucceededJob,
  completeJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  getWorkflowRun,
  listJobAttempts,
  listJobEvents,
  noOrganizationScope,
  verifyIntegrity,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import { continueJobs } from '../../src/queue/continue.js';
import { continueAfter, continueNow, defineJob } from '../../src/worker/index.js';
import { nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const scope = noOrganizationScope();

async function claim(jobType: string): Promise<ClaimedJob | undefined> {
  const [claimed] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60 });
  return claimed;
}

const events = async (jobId: string) => (await listJobEvents(db.prisma, { scope, jobId, limit: 500 })).items;

describe('continuation', () => {
  it('runs a 10-slice job under one id to SUCCEEDED at run 10, its checkpoints in its events', async () => {
    const seen: { runNumber: number; attempt: number; checkpoint: unknown; payload: unknown }[] = [];
    const slices = defineJob('cont.slices', z.object({ total: z.number() }), async (payload, ctx) => {
      seen.push({ runNumber: ctx.runNumber, attempt: ctx.attempt, checkpoint: ctx.checkpoint, payload });
      expect(ctx.deadline.getTime()).toBeGreaterThan(Date.now());
      expect(ctx.remainingMs()).toBeGreaterThan(0);
      expect(ctx.remainingMs()).toBeLessThanOrEqual(30_000);
      const done = ((ctx.checkpoint as { slice: number } | null)?.slice ?? 0) + 1;
      if (done < payload.total) return continueNow({ checkpoint: { slice: done }, progress: { processed: done, total: payload.total } });
      return { slices: done };
    });
    const worker = await startWorker({ handlers: [slices] });
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cont.slices', payload: { total: 10 }, timeoutSeconds: 30 });
    const success = await nextEvent(worker, 'job:success', (e) => e.job.jobId === jobId);
    expect(success.job.runNumber).toBe(10);
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({
      status: 'SUCCEEDED',
      runNumber: 10,
      attempt: 1,
      output: { slices: 10 },
      payload: { total: 10 },
      checkpoint: { slice: 9 },
      progress: { processed: 9, total: 10 },
    });
    expect(seen.map((s) => s.runNumber)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(seen.every((s) => s.attempt === 1)).toBe(true);
    expect(seen.map((s) => s.checkpoint)).toEqual([null, ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((slice) => ({ slice }))]);
    expect(seen.every((s) => (s.payload as { total: number }).total === 10)).toBe(true);
    const requeued = (await events(jobId)).filter((e) => e.eventType === 'REQUEUED');
    expect(requeued.map((e) => [e.runNumber, e.attempt, (e.payload as { kind: string }).kind, (e.payload as { checkpoint: unknown }).checkpoint])).toEqual(
      [2, 3, 4, 5, 6, 7, 8, 9, 10].map((run) => [run, 0, 'HANDLER_CONTINUATION', { slice: run - 1 }]),
    );
    const attempts = (await listJobAttempts(db.prisma, { scope, jobId })).items;
    expect(attempts.map((a) => `${a.runNumber}:${a.outcome}`)).toEqual([...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((r) => `${r}:CONTINUED`), '10:SUCCEEDED']);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);

    // A replay starts over: a new job at run 1 without the source's checkpoint.
    const replay = await compareAndReplaySucceededJob(db.prisma, {
      scope,
      sourceJobId: jobId,
      expectedRunNumber: 10,
      replayRequestKey: 'again',
      reason: 'rerun',
    });
    expect(replay.kind).toBe('replayed');
    if (replay.kind !== 'replayed') return;
    expect(await getJob(db.prisma, { scope, jobId: replay.replay.jobId })).toMatchObject({ runNumber: 1, checkpoint: null, status: 'PENDING' });
  });

  it('schedules the next slice after continueAfter and keeps a checkpoint saved mid-slice', async () => {
    const handler = defineJob('cont.after', z.object({}), async (_payload, ctx) => {
      await ctx.saveCheckpoint({ cursor: 'c-7' });
      return continueAfter(3_600_000);
    });
    const worker = await startWorker({ handlers: [handler] });
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cont.after', payload: {} });
    const continued = await nextEvent(worker, 'job:continued', (e) => e.job.jobId === jobId);
    expect(continued.runNumber).toBe(2);
    const job = await getJob(db.prisma, { scope, jobId });
    expect(job).toMatchObject({ status: 'PENDING', runNumber: 2, attempt: 0, checkpoint: { cursor: 'c-7' }, leaseOwner: null });
    expect(job.nextRunAt.getTime() - job.updatedAt.getTime()).toBe(3_600_000);
    const [event] = (await events(jobId)).filter((e) => e.eventType === 'REQUEUED');
    expect(event!.payload).toMatchObject({ kind: 'HANDLER_CONTINUATION', delayMs: 3_600_000, checkpoint: { cursor: 'c-7' }, previousRunNumber: 1 });
    expect(() => continueAfter(-1)).toThrow(expect.objectContaining({ code: 'worker.invalid_continuation' }));
    expect(() => continueAfter(1.5)).toThrow(expect.objectContaining({ code: 'worker.invalid_continuation' }));
  });

  it('gives every slice the whole failure budget', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cont.budget', payload: {}, maxAttempts: 2 });
    const first = (await claim('cont.budget'))!;
    await failJob(db.prisma, { ...first, error: { code: 'x', message: 'y' }, retryable: true });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
    const second = (await claim('cont.budget'))!;
    expect(second.attempt).toBe(2);
    expect(await continueJobs(db.prisma, [{ lease: second, delayMs: 0, checkpoint: { page: 2 } }])).toEqual([
      expect.objectContaining({ jobId, outcome: 'continued', runNumber: 2 }),
    ]);
    const next = (await claim('cont.budget'))!;
    expect(next).toMatchObject({ runNumber: 2, attempt: 1, checkpoint: { page: 2 } });
    expect((await failJob(db.prisma, { ...next, error: { code: 'x', message: 'y' }, retryable: true })).status).toBe('PENDING');
    // The old lease is fenced out.
    expect(await continueJobs(db.prisma, [{ lease: second, delayMs: 0 }])).toEqual([{ jobId, outcome: 'lease_owner_mismatch' }]);
  });

  it('releases the execution resource on continuation', async () => {
    const a = await enqueueJob(db.prisma, { jobType: 'cont.res', payload: { n: 'a' }, resource: 'acct-1' });
    const b = await enqueueJob(db.prisma, { jobType: 'cont.res', payload: { n: 'b' }, resource: 'acct-1' });
    const leaseA = (await claim('cont.res'))!;
    expect(leaseA.jobId).toBe(a.jobId);
    expect(await claim('cont.res')).toBeUndefined();
    await continueJobs(db.prisma, [{ lease: leaseA, delayMs: 0 }]);
    // B waited longer than A's next slice: the key goes to B, oldest first.
    expect((await claim('cont.res'))?.jobId).toBe(b.jobId);
    expect(await claim('cont.res')).toBeUndefined();
  });

  it('fails a workflow step that did not opt in, terminally', async () => {
    const handler = defineJob('cont.wf.plain', z.object({}), () => continueNow({ checkpoint: 1 }));
    const worker = await startWorker({ handlers: [handler] });
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('cont.wf.plain').job('a', 'cont.wf.plain', {}).job('b', 'cont.wf.other', {}).afterSuccess('b', ['a']).build(),
    );
    const failure = await nextEvent(worker, 'job:failure');
    expect(failure).toMatchObject({ code: 'job.workflow_handler_continuation_not_enabled', status: 'DEAD_LETTERED', retryable: false });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.a).toMatchObject({ status: 'FAILED', lastErrorCode: 'job.workflow_handler_continuation_not_enabled' });
    expect(await getJob(db.prisma, { scope, jobId: steps.a!.jobId! })).toMatchObject({ status: 'DEAD_LETTERED', runNumber: 1 });
    expect(steps.b!.status).toBe('CANCELED');
  });

  it('keeps an opted-in step ENQUEUED between slices, its dependents blocked until the job ends', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('cont.wf').job('a', 'cont.wf.a', {}, { allowContinuation: true }).job('b', 'cont.wf.b', {}).afterSuccess('b', ['a']).build(),
    );
    for (let slice = 1; slice <= 3; slice += 1) {
      const lease = (await claim('cont.wf.a'))!;
      expect(lease).toMatchObject({ runNumber: slice, attempt: 1 });
      expect((await stepsByKey(db.prisma, workflowRunId)).a!.status).toBe('RUNNING');
      if (slice < 3) {
        expect(await continueJobs(db.prisma, [{ lease, delayMs: 0, checkpoint: { slice } }])).toEqual([
          expect.objectContaining({ outcome: 'continued', runNumber: slice + 1 }),
        ]);
        const steps = await stepsByKey(db.prisma, workflowRunId);
        expect(steps.a).toMatchObject({ status: 'ENQUEUED', statusReason: 'job.continued', allowContinuation: true });
        expect(steps.b!.status).toBe('BLOCKED');
        expect((await getWorkflowRun(db.prisma, { scope, workflowRunId })).status).toBe('RUNNING');
      } else {
        await completeJob(db.prisma, { ...lease, output: { slices: 3 } });
      }
    }
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.a).toMatchObject({ status: 'SUCCEEDED', output: { slices: 3 } });
    expect(steps.b!.status).toBe('ENQUEUED');
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
  });

  it('refuses a continuation of a workflow job whose step did not opt in, leaving it leased', async () => {
    await enqueueWorkflowRun(db.prisma, workflow('cont.wf.low').job('a', 'cont.wf.low', {}).build());
    const lease = (await claim('cont.wf.low'))!;
    expect(await continueJobs(db.prisma, [{ lease, delayMs: 0 }])).toEqual([{ jobId: lease.jobId, outcome: 'not_enabled' }]);
    expect(await getJob(db.prisma, { scope, jobId: lease.jobId })).toMatchObject({ status: 'LEASED', runNumber: 1 });
  });
});
