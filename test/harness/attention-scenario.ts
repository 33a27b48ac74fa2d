/**
 * The conditions the overview's "Needs attention" must catch, planted through
 * the library (and the registry's own heartbeat), with only times moved back
 * by SQL: a stuck type (runnable, no live worker), a saturated type (3 of 3
 * slots busy, 4 jobs waiting 3.9 min), a failing type (4 dead-lettered of 5),
 * five RUNNING runs waiting on a person (an external step with a blocked
 * dependent) beside one WAITING_FOR_EXTERNAL run and one that waits on
 * nobody, and a stale worker (its last heartbeat 450 s ago, every 200 s). Runs
 * and jobs belong to `organizationId` (default none).
 */
import { claimJobs, completeJob, enqueueJob, enqueueWorkflowRun, failJob, workflow } from '../../src/index.js';
import { heartbeatWorkerRegistration } from '../../src/worker/registry.js';
import type { TestDatabase } from './database.js';

export interface AttentionScenario {
  /** The five RUNNING runs that wait on a person. */
  runningWaiting: string[];
  /** A run whose status is WAITING_FOR_EXTERNAL. */
  statusWaiting: string;
  /** A RUNNING run with no external step. */
  notWaiting: string;
  /** The jobs the saturated type's worker holds. */
  heldJobIds: string[];
}

export const STUCK_TYPE = 'att.orphan';
export const SATURATED_TYPE = 'media.transcode';
export const FAILING_TYPE = 'att.flaky';
export const FAILING_CODE = 'flaky.timeout';
export const SATURATED_WORKER = 'w-media';
export const STALE_WORKER = 'w-stale';

export async function plantAttentionScenario(db: TestDatabase, organizationId: string | null = null): Promise<AttentionScenario> {
  const prisma = db.prisma;
  // Stuck: runnable, and no worker handles the type.
  await enqueueJob(prisma, { jobType: STUCK_TYPE, organizationId, payload: {} });

  // Saturated: one live worker with 3 slots holds 3 jobs; 4 more have waited 3.9 minutes.
  await heartbeatWorkerRegistration(prisma, { workerId: SATURATED_WORKER, jobTypes: [SATURATED_TYPE], concurrency: 3, inFlight: 3, ttlMs: 600_000 });
  for (let n = 0; n < 7; n += 1) await enqueueJob(prisma, { jobType: SATURATED_TYPE, organizationId, payload: { n } });
  const held = await claimJobs(prisma, { workerId: SATURATED_WORKER, jobTypes: [SATURATED_TYPE], limit: 3, leaseSeconds: 600, markRunning: true });
  await prisma.$executeRaw`
    UPDATE runledger.job_queue SET next_run_at = now() - interval '234 seconds'
     WHERE job_type = ${SATURATED_TYPE} AND status = 'PENDING'`;

  // Failing: 4 dead-lettered and 1 succeeded in the last hour.
  for (let n = 0; n < 5; n += 1) await enqueueJob(prisma, { jobType: FAILING_TYPE, organizationId, payload: { n } });
  const flaky = await claimJobs(prisma, { workerId: 'w-flaky', jobTypes: [FAILING_TYPE], limit: 5, leaseSeconds: 60, markRunning: true });
  for (const [index, lease] of flaky.entries()) {
    if (index === 0) await completeJob(prisma, { ...lease, output: null });
    else await failJob(prisma, { ...lease, error: { code: FAILING_CODE, message: `upstream timed out after ${index}0 s` }, retryable: false });
  }

  // Five runs waiting on a person while RUNNING: the external step's dependent is BLOCKED.
  const runningWaiting: string[] = [];
  for (let n = 0; n < 5; n += 1) {
    const run = workflow('att.review')
      .organization(organizationId)
      .external('approve')
      .job('publish', 'att.publish', { n })
      .afterSuccess('publish', ['approve']);
    runningWaiting.push((await enqueueWorkflowRun(prisma, run.build())).workflowRunId);
  }
  const statusWaiting = (await enqueueWorkflowRun(prisma, workflow('att.sign').organization(organizationId).external('sign').build())).workflowRunId;
  const notWaiting = (await enqueueWorkflowRun(prisma, workflow('att.batch').organization(organizationId).job('load', 'att.load', {}).build())).workflowRunId;

  // Stale: heartbeats every 200 s (a 600 s row), last seen 450 s ago: past two intervals, expiring in 150 s.
  await heartbeatWorkerRegistration(prisma, { workerId: STALE_WORKER, jobTypes: ['att.other'], concurrency: 2, inFlight: 0, ttlMs: 600_000 });
  await prisma.$executeRaw`
    UPDATE runledger.workers SET last_seen_at = now() - interval '450 seconds', expires_at = now() + interval '150 seconds' WHERE id = ${STALE_WORKER}`;

  return { runningWaiting, statusWaiting, notWaiting, heldJobIds: held.map((lease) => lease.jobId) };
}
