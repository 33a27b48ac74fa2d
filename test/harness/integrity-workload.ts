/**
 * A demo-like workload for the integrity tests: every kind of run and job
 * the engine produces, driven through the public API to its resting states.
 */
import {
  cancelWorkflowRun,
  compareAndReplaySucceededJob,
  compareAndRequeueJob,
  completeExternalWorkflowStep,
  enqueueJob,
  enqueueWorkflowRun,
  noOrganizationScope,
  workflow,
  type Db,
} from '../../src/index.js';
import { claimAll, runRunnableJobs } from './workflow-helpers.js';

export interface Workload {
  /** Fan-in + on-terminal audit + external approval + result step, SUCCEEDED. */
  report: string;
  /** A failed fetch: the fan-in is canceled (dependency unsatisfied), the audit runs: COMPLETED_WITH_ERRORS. */
  failed: string;
  /** Waiting for its approval; publish BLOCKED behind it. */
  waiting: string;
  /** Canceled while its first step was leased. */
  canceled: string;
  /** A chain a -> b -> c with a's job left leased (a live lease). */
  leased: string;
  /** Direct jobs: succeeded and replayed; dead-lettered and requeued. */
  replaySource: string;
  requeued: string;
}

function report(type: string, ratesFail = false) {
  return workflow(type, { region: 'EMEA' })
    .job('fetch-news', 'market.fetch_feed', { feed: 'news' })
    .job('fetch-rates', 'market.fetch_feed', { feed: 'rates', fail: ratesFail })
    .job('summarize', 'market.summarize', {})
    .afterSuccess('summarize', ['fetch-news', 'fetch-rates'])
    .job('audit', 'market.audit', {})
    .afterTerminal('audit', ['fetch-news', 'fetch-rates'])
    .external('approval')
    .afterSuccess('approval', ['summarize'])
    .job('publish', 'report.publish', {})
    .afterSuccess('publish', ['approval'])
    .resultStep('publish')
    .build();
}

export async function runIntegrityWorkload(db: Db): Promise<Workload> {
  const ok = await enqueueWorkflowRun(db, report('reports.ok'));
  const failed = await enqueueWorkflowRun(db, report('reports.failed', true));
  const waiting = await enqueueWorkflowRun(db, report('reports.waiting'));
  await runRunnableJobs(db, (job) => ((job.payload as { fail?: boolean }).fail ? { ok: false } : { ok: true, output: { n: 1 } }));
  await completeExternalWorkflowStep(db, {
    workflowRunId: ok.workflowRunId,
    stepKey: 'approval',
    scope: noOrganizationScope(),
    outcome: { status: 'succeeded', output: { by: 'editor' } },
  });
  await runRunnableJobs(db, () => ({ ok: true, output: { url: 'https://example.test/r' } }));

  const canceled = await enqueueWorkflowRun(db, workflow('chain.canceled').job('a', 'chain.a', {}).job('b', 'chain.b', {}).afterSuccess('b', ['a']).build());
  await claimAll(db, 'canceled-worker');
  await cancelWorkflowRun(db, { workflowRunId: canceled.workflowRunId, scope: noOrganizationScope(), reason: 'operator' });
  const leased = await enqueueWorkflowRun(db, workflow('chain.leased').job('a', 'chain.a2', {}).job('b', 'chain.b', {}).afterSuccess('b', ['a']).build());
  await claimAll(db, 'live-worker');

  const source = await enqueueJob(db, { jobType: 'direct.mail', payload: { to: 'a@example.test' } });
  const doomed = await enqueueJob(db, { jobType: 'direct.doomed', payload: {}, maxAttempts: 1 });
  await runRunnableJobs(db, (job) => (job.jobType === 'direct.doomed' ? { ok: false } : { ok: true, output: 'sent' }));
  const replayRequest = { scope: noOrganizationScope(), sourceJobId: source.jobId, expectedRunNumber: 1, replayRequestKey: 'ticket-1', reason: 'mail lost' };
  await compareAndReplaySucceededJob(db, replayRequest);
  await compareAndReplaySucceededJob(db, replayRequest);
  await compareAndRequeueJob(db, {
    scope: noOrganizationScope(),
    jobId: doomed.jobId,
    expectedStatus: 'DEAD_LETTERED',
    expectedRunNumber: 1,
    statePolicy: 'reset_progress_and_checkpoint',
  });
  await runRunnableJobs(db, () => ({ ok: true, output: 'ok' }));

  return {
    report: ok.workflowRunId,
    failed: failed.workflowRunId,
    waiting: waiting.workflowRunId,
    canceled: canceled.workflowRunId,
    leased: leased.workflowRunId,
    replaySource: source.jobId,
    requeued: doomed.jobId,
  };
}
