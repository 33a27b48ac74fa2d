/**
 * A rich job history written through the public API (retries, a reaped
 * lease, a release, stages and progress, continuation, cancellation,
 * dead-letter and requeue, replay, an intent, a workflow chain), and each
 * job's trail as `listJobEvents` returns it, normalised so two runs compare:
 * ids become `<id:N>` in order of first appearance, instants `<time>`,
 * measured delays `<ms>`. test/fixtures/trail/golden.json holds what the
 * code before the derived trail (migration 20261222000000) returned for it.
 */
import { z } from 'zod';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import {
  cancelJob,
  defineJob,
  syncJobDefinitions,
  claimJobs,
  compareAndReplaySucceededJob,
  compareAndRequeueJob,
  completeJob,
  continueJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  heartbeatJob,
  listJobEvents,
  markJobRunning,
  noOrganizationScope,
  promoteEnqueueIntents,
  reapExpiredLeases,
  recordJobEnqueueIntent,
  recordJobProgress,
  releaseJob,
  setJobStage,
  type ClaimedJob,
  workflow,
  type JobEvent,
} from '../../src/index.js';
import { expireLeases } from './leases.js';

export type NormalisedEvent = [type: string, runNumber: number, attempt: number, payload: unknown];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/;

export async function recordRichHistory(prisma: PrismaClient): Promise<Record<string, NormalisedEvent[]>> {
  const scope = noOrganizationScope();
  const claim = async (jobType: string, markRunning = false): Promise<ClaimedJob> => {
    const [job] = await claimJobs(prisma, { workerId: `w-${jobType}`, jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning });
    if (!job) throw new Error(`nothing of ${jobType} to claim`);
    return job;
  };
  const due = (jobId: string) => prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
  const jobs: Record<string, string> = {};

  // Retried, reaped after starting, then stages, progress, a heartbeat and success; then replayed.
  jobs.retried = (await enqueueJob(prisma, { jobType: 'trail.retried', payload: { n: 1 }, maxAttempts: 4 })).jobId;
  const r1 = await claim('trail.retried');
  await markJobRunning(prisma, r1);
  await failJob(prisma, { ...r1, error: { code: 'flaky', message: 'try again' }, retryable: true });
  await due(jobs.retried);
  await claim('trail.retried', true);
  await expireLeases(prisma, jobs.retried);
  await reapExpiredLeases(prisma, { limit: 10 });
  const r3 = await claim('trail.retried', true);
  await setJobStage(prisma, { ...r3, stage: 'upload' });
  await recordJobProgress(prisma, { ...r3, processed: 5, total: 10 });
  await heartbeatJob(prisma, r3);
  await completeJob(prisma, { ...r3, output: { ok: true } });
  const replay = await compareAndReplaySucceededJob(prisma, {
    scope,
    sourceJobId: jobs.retried,
    expectedRunNumber: 1,
    replayRequestKey: 'trail-replay',
    reason: 'send again',
  });
  if (replay.kind !== 'replayed') throw new Error('replay refused');
  jobs.replay = replay.replay.jobId;
  await completeJob(prisma, { ...(await claim('trail.retried', true)), output: 2 });

  // Released, then claimed again and canceled while leased.
  jobs.released = (await enqueueJob(prisma, { jobType: 'trail.released', payload: {} })).jobId;
  await releaseJob(prisma, { ...(await claim('trail.released', true)), reason: 'shutting down' });
  await claim('trail.released');
  await cancelJob(prisma, { scope, jobId: jobs.released, reason: 'not needed' });

  // A lease that expired before it started, dead-lettered, requeued and completed in run 2.
  jobs.requeued = (await enqueueJob(prisma, { jobType: 'trail.requeued', payload: {}, maxAttempts: 1 })).jobId;
  await claim('trail.requeued');
  await expireLeases(prisma, jobs.requeued);
  await reapExpiredLeases(prisma, { limit: 10 });
  await failJob(prisma, { ...(await claim('trail.requeued', true)), error: { code: 'fatal', message: 'no' }, retryable: false });
  const requeue = await compareAndRequeueJob(prisma, {
    scope,
    jobId: jobs.requeued,
    expectedStatus: 'DEAD_LETTERED',
    expectedRunNumber: 1,
    statePolicy: 'preserve_progress_and_checkpoint',
  });
  if (requeue.kind !== 'requeued') throw new Error(`requeue refused: ${requeue.kind}`);
  await completeJob(prisma, { ...(await claim('trail.requeued', true)), output: null });

  // Continued twice, then completed.
  jobs.continued = (await enqueueJob(prisma, { jobType: 'trail.continued', payload: {} })).jobId;
  await continueJob(prisma, { ...(await claim('trail.continued', true)), save: { checkpoint: { page: 1 } } });
  await continueJob(prisma, { ...(await claim('trail.continued', true)), save: { checkpoint: { page: 2 } } });
  await completeJob(prisma, { ...(await claim('trail.continued', true)), output: 'done' });

  // Enqueued through an intent (promoted once its type has an enabled catalog row).
  await syncJobDefinitions(prisma, [defineJob('trail.intent', z.object({}), async () => undefined)]);
  await prisma.$transaction(async (tx) => {
    await recordJobEnqueueIntent(tx, { jobType: 'trail.intent', payload: {}, idempotencyKey: 'trail-intent' });
  });
  await promoteEnqueueIntents(prisma, { jobTypes: ['trail.intent'], limit: 10 });
  const [intentJob] = await prisma.$queryRaw<{ id: string }[]>`SELECT id FROM runledger.job_queue WHERE job_type = 'trail.intent'`;
  jobs.intent = intentJob!.id;

  // A workflow chain: the root's job is enqueued with the run, the next one released by its completion.
  const run = await enqueueWorkflowRun(
    prisma,
    workflow('trail.flow').job('a', 'trail.step', { s: 'a' }).job('b', 'trail.step', { s: 'b' }).afterSuccess('b', ['a']).build(),
  );
  await completeJob(prisma, { ...(await claim('trail.step', true)), output: 'a' });
  await completeJob(prisma, { ...(await claim('trail.step')), output: 'b' });
  const steps = await prisma.$queryRaw<{ step_key: string; job_id: string }[]>`
    SELECT step_key, job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${run.workflowRunId}::uuid ORDER BY step_key`;
  for (const step of steps) jobs[`step.${step.step_key}`] = step.job_id;

  const ids = new Map<string, string>();
  const normalise = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (UUID.test(value)) {
        const key = value.toLowerCase();
        if (!ids.has(key)) ids.set(key, `<id:${ids.size}>`);
        return ids.get(key);
      }
      return INSTANT.test(value) ? '<time>' : value;
    }
    if (Array.isArray(value)) return value.map(normalise);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === 'delayMs' ? '<ms>' : normalise(v)]));
    }
    return value;
  };
  const trails: Record<string, NormalisedEvent[]> = {};
  for (const [role, jobId] of Object.entries(jobs)) {
    normalise(jobId);
    trails[role] = (await readTrail(prisma, jobId)).map((e) => [e.eventType, e.runNumber, e.attempt, normalise(e.payload)]);
  }
  return trails;
}

/** Every event of the job, read one page of one event at a time (so the cursor is exercised too). */
export async function readTrail(prisma: PrismaClient, jobId: string, limit = 1): Promise<JobEvent[]> {
  const events: JobEvent[] = [];
  let cursor: string | undefined;
  do {
    const page = await listJobEvents(prisma, { scope: noOrganizationScope(), jobId, limit, ...(cursor ? { cursor } : {}) });
    events.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return events;
}
