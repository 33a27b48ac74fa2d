/**
 * What a hand-written claim loop can do that a handler does through its
 * context: set a stage, record progress, and continue a long job in slices
 * (`setJobStage`, `recordJobProgress`, `continueJob`), each lease-fenced,
 * each refusing bad input by field with nothing written.
 */
import { describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJob,
  continueJob,
  enqueueJob,
  enqueueWorkflowRun,
  getJob,
  isRunledgerError,
  listJobAttempts,
  listJobEvents,
  noOrganizationScope,
  recordJobProgress,
  setJobStage,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { stepsByKey, claimOne } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const scope = noOrganizationScope();

const claim = (jobType: string, workerId = 'hand') => claimOne(db.prisma, jobType, { workerId, markRunning: true });

const eventTypes = async (jobId: string) => (await listJobEvents(db.prisma, { scope, jobId })).items.map((e) => e.eventType);
const field = (error: unknown) => (error as { field?: string }).field;

describe('a hand loop sets the stage and records progress', () => {
  it('writes each with its event, refuses bad input by field, and stops at a lost lease', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'hand.stage', payload: {} });
    const job = await claim('hand.stage');
    expect(await setJobStage(db.prisma, { ...job, stage: 'downloading' })).toEqual({ jobId, stage: 'downloading' });
    expect(await recordJobProgress(db.prisma, { ...job, processed: 3, total: 10 })).toEqual({ processed: 3, total: 10 });
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ stage: 'downloading', progress: { processed: 3, total: 10 } });

    const before = await eventTypes(jobId);
    const blank = await setJobStage(db.prisma, { ...job, stage: ' ' }).catch((e: unknown) => e);
    expect([isRunledgerError(blank, 'job.invalid_input'), field(blank)]).toEqual([true, 'stage']);
    const over = await recordJobProgress(db.prisma, { ...job, processed: 11, total: 10 }).catch((e: unknown) => e);
    expect([isRunledgerError(over, 'job.invalid_input'), field(over)]).toEqual([true, 'processed']);
    expect(await eventTypes(jobId)).toEqual(before);

    await completeJob(db.prisma, { ...job, output: null });
    const late = await setJobStage(db.prisma, { ...job, stage: 'too late' }).catch((e: unknown) => e);
    expect(isRunledgerError(late, 'job.lease_owner_mismatch')).toBe(true);
    expect(isRunledgerError(await recordJobProgress(db.prisma, { ...job, processed: 4 }).catch((e: unknown) => e), 'job.lease_owner_mismatch')).toBe(true);
    expect((await getJob(db.prisma, { scope, jobId })).stage).toBe('downloading');
    expect(before.filter((t) => t === 'STAGE_CHANGED' || t === 'PROGRESS')).toEqual(['STAGE_CHANGED', 'PROGRESS']);
  });
});

describe('a hand loop continues a long job', () => {
  it('runs it in slices: each continuation is a new run at attempt 0 with the saved checkpoint, until it completes', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'hand.slices', payload: { pages: 3 }, maxAttempts: 1 });
    for (let slice = 1; slice <= 3; slice += 1) {
      const job = await claim('hand.slices');
      expect([job.runNumber, job.attempt, job.checkpoint]).toEqual([slice, 1, slice === 1 ? null : { page: slice - 1 }]);
      if (slice === 3) {
        await completeJob(db.prisma, { ...job, output: { pages: 3 } });
        break;
      }
      // The ClaimedJob carries the checkpoint read at claim; spreading it in writes nothing back: only `save` does.
      const next = await continueJob(db.prisma, { ...job, save: { checkpoint: { page: slice } } });
      expect(next).toMatchObject({ jobId, runNumber: slice + 1 });
      expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'PENDING', runNumber: slice + 1, attempt: 0, checkpoint: { page: slice } });
    }
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'SUCCEEDED', runNumber: 3, output: { pages: 3 } });
    const attempts = (await listJobAttempts(db.prisma, { scope, jobId })).items.map((a) => a.outcome);
    expect(attempts).toEqual(['CONTINUED', 'CONTINUED', 'SUCCEEDED']);
    expect((await eventTypes(jobId)).filter((t) => t === 'REQUEUED')).toHaveLength(2);
  });

  it('delays the next slice, keeps the checkpoint when nothing is saved, and refuses a bad delay or a lost lease with nothing written', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'hand.later', payload: {} });
    const job = await claim('hand.later');
    const invalid = await continueJob(db.prisma, { ...job, delayMs: -1 }).catch((e: unknown) => e);
    expect([isRunledgerError(invalid, 'job.invalid_input'), field(invalid)]).toEqual([true, 'delayMs']);
    const stale = await continueJob(db.prisma, { ...job, runNumber: job.runNumber + 1 }).catch((e: unknown) => e);
    expect(isRunledgerError(stale, 'job.lease_owner_mismatch')).toBe(true);
    expect((await getJob(db.prisma, { scope, jobId })).status).toBe('LEASED');

    const [clock] = await db.prisma.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`;
    const next = await continueJob(db.prisma, { ...job, delayMs: 60_000 });
    expect(next.nextRunAt.getTime() - clock!.now.getTime()).toBeGreaterThanOrEqual(60_000);
    expect(next.nextRunAt.getTime() - clock!.now.getTime()).toBeLessThan(70_000);
    expect(await claimJobs(db.prisma, { workerId: 'hand', jobTypes: ['hand.later'], limit: 1, leaseSeconds: 60 })).toEqual([]);
    expect((await getJob(db.prisma, { scope, jobId })).checkpoint).toBeNull();
  });

  it('refuses a workflow job whose step did not opt in, leaving it leased; continues one whose step did, keeping the step live', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('hand.flow')
        .job('plain', 'hand.plain', {})
        .job('sliced', 'hand.sliced', {}, { allowContinuation: true })
        .job('after', 'hand.after', {})
        .afterSuccess('after', ['sliced'])
        .build(),
    );
    const plain = await claim('hand.plain');
    const refused = await continueJob(db.prisma, plain).catch((e: unknown) => e);
    expect(isRunledgerError(refused, 'job.continuation_not_enabled')).toBe(true);
    expect((await getJob(db.prisma, { scope, jobId: plain.jobId })).status).toBe('LEASED');

    const sliced = await claim('hand.sliced');
    await continueJob(db.prisma, { ...sliced, save: { progress: { processed: 1, total: 2 } } });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect([steps.sliced!.status, steps.sliced!.statusReason, steps.after!.status]).toEqual(['ENQUEUED', 'job.continued', 'BLOCKED']);
    const again = await claim('hand.sliced');
    expect([again.runNumber, again.progress]).toEqual([2, { processed: 1, total: 2 }]);
  });
});
