/**
 * The integrity checker against seeded corruption: each corruption is written
 * by hand into this file's scratch database, and the checker must name it by
 * kind and ids, with what it expected; a database the engine wrote itself is
 * clean.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { verifyIntegrity } from '../../src/index.js';
import { corrupter, only } from '../harness/corruption.js';
import { useTestDatabase } from '../harness/database.js';
import { runIntegrityWorkload, type Workload } from '../harness/integrity-workload.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let workload: Workload;

beforeAll(async () => {
  workload = await runIntegrityWorkload(db.prisma);
});

const corrupt = corrupter(db);

describe('verifyIntegrity', () => {
  it('finds nothing wrong in a database the engine wrote (every run and job kind, replays, requeues, a live lease)', async () => {
    const report = await verifyIntegrity(db.prisma);
    expect(report.violations).toEqual([]);
    expect(report.clean).toBe(true);
    expect(report.checked.runs).toBe(5);
    expect(report.checked.jobs).toBeGreaterThanOrEqual(14);
    // Paging does not change the outcome: one row per page walks every keyset boundary.
    expect(await verifyIntegrity(db.prisma, { pageSize: 1 })).toEqual(report);
  });

  it('names a dependency counter that disagrees with its edges', async () => {
    const steps = await stepsByKey(db.prisma, workload.waiting);
    expect(steps.publish!.status).toBe('BLOCKED');
    await corrupt('UPDATE runledger.workflow_steps SET dependency_count_pending = 0, dependency_count_unsatisfied = 1 WHERE id = $1', [steps.publish!.id]);

    const report = await verifyIntegrity(db.prisma);
    expect(only(report.violations, 'step.dependency_counters')).toEqual([
      expect.objectContaining({
        workflowRunId: workload.waiting,
        stepId: steps.publish!.id,
        stepKey: 'publish',
        expected: { total: 1, pending: 1, unsatisfied: 0 },
        found: { total: 1, pending: 0, unsatisfied: 1 },
      }),
    ]);
  });

  it('names a run whose status does not follow from its steps', async () => {
    await corrupt(`UPDATE runledger.workflow_runs SET status = 'SUCCEEDED', finished_at = now() WHERE id = $1`, [workload.leased]);
    const report = await verifyIntegrity(db.prisma, { workflowRunIds: [workload.leased] });
    expect(report.violations).toEqual([
      expect.objectContaining({
        kind: 'run.status_mismatch',
        workflowRunId: workload.leased,
        expected: { status: 'RUNNING' },
        found: expect.objectContaining({ status: 'SUCCEEDED', liveSteps: 2 }),
      }),
    ]);
  });

  it('names a step/job link broken on either side, and a step whose job disagrees with its status', async () => {
    const steps = await stepsByKey(db.prisma, workload.report);
    const news = steps['fetch-news']!;
    const rates = steps['fetch-rates']!;
    // fetch-news's job now claims to belong to fetch-rates.
    await corrupt('UPDATE runledger.job_queue SET workflow_step_id = $2 WHERE id = $1', [news.jobId, rates.id]);
    const report = await verifyIntegrity(db.prisma);
    expect(only(report.violations, 'step.job_link_mismatch')).toEqual([
      expect.objectContaining({
        workflowRunId: workload.report,
        stepId: news.id,
        jobId: news.jobId,
        expected: { jobWorkflowStepId: news.id },
        found: { jobWorkflowStepId: rates.id },
      }),
    ]);
    expect(only(report.violations, 'job.step_link_mismatch')).toEqual([
      expect.objectContaining({ jobId: news.jobId, stepId: rates.id, found: { workflowStepId: rates.id, stepExists: true, stepJobId: rates.jobId } }),
    ]);

    const leased = await stepsByKey(db.prisma, workload.leased);
    await corrupt(
      `UPDATE runledger.job_queue SET status = 'SUCCEEDED', lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL, finished_at = now() WHERE id = $1`,
      [leased.a!.jobId],
    );
    const after = await verifyIntegrity(db.prisma, { workflowRunIds: [workload.leased] });
    expect(only(after.violations, 'step.job_status_mismatch')).toEqual([
      expect.objectContaining({
        stepId: leased.a!.id,
        jobId: leased.a!.jobId,
        expected: { jobStatus: 'PENDING or LEASED' },
        found: { stepStatus: 'ENQUEUED', jobStatus: 'SUCCEEDED' },
      }),
    ]);
  });

  it("names a workflow job whose execution resource or backoff is not its step's", async () => {
    const leased = await stepsByKey(db.prisma, workload.leased);
    await corrupt(`UPDATE runledger.job_queue SET resource_key = 'stray-key' WHERE id = $1`, [leased.a!.jobId]);
    const report = await verifyIntegrity(db.prisma, { workflowRunIds: [workload.leased] });
    expect(only(report.violations, 'job.resource_mismatch')).toEqual([
      expect.objectContaining({ stepId: leased.a!.id, jobId: leased.a!.jobId, expected: { resourceKey: null }, found: { resourceKey: 'stray-key' } }),
    ]);
    await corrupt(`UPDATE runledger.job_queue SET resource_key = NULL WHERE id = $1`, [leased.a!.jobId]);
    await corrupt(`UPDATE runledger.job_queue SET backoff_base_ms = 10, backoff_max_ms = 20 WHERE id = $1`, [leased.a!.jobId]);
    const backoff = await verifyIntegrity(db.prisma, { workflowRunIds: [workload.leased] });
    expect(only(backoff.violations, 'job.backoff_mismatch')).toEqual([
      expect.objectContaining({
        jobId: leased.a!.jobId,
        expected: { backoffBaseMs: null, backoffMaxMs: null },
        found: { backoffBaseMs: 10, backoffMaxMs: 20 },
      }),
    ]);
    await corrupt(`UPDATE runledger.job_queue SET backoff_base_ms = NULL, backoff_max_ms = NULL WHERE id = $1`, [leased.a!.jobId]);
  });

  it('names lease columns that disagree with the job status', async () => {
    // The schema's CHECK would refuse this write; a dump restored without constraints would not.
    await db.prisma.$executeRawUnsafe('ALTER TABLE runledger.job_queue DROP CONSTRAINT job_queue_lease_columns');
    await corrupt(`UPDATE runledger.job_queue SET lease_owner = 'ghost-worker', heartbeat_at = now() WHERE id = $1`, [workload.replaySource]);
    const report = await verifyIntegrity(db.prisma);
    expect(only(report.violations, 'job.lease_columns')).toEqual([
      expect.objectContaining({
        jobId: workload.replaySource,
        expected: expect.objectContaining({ leaseOwner: null, heartbeatAt: null }),
        found: expect.objectContaining({ status: 'SUCCEEDED', leaseOwner: 'ghost-worker' }),
      }),
    ]);
  });

  it('names a replay lineage that disagrees with its jobs or is gone, and a requeued job whose run number skips', async () => {
    const [lineage] = await db.prisma.$queryRaw<{ replay_job_id: string }[]>`
      SELECT replay_job_id FROM runledger.job_replays WHERE source_job_id = ${workload.replaySource}::uuid`;
    await corrupt('UPDATE runledger.job_replays SET source_run_number = 2 WHERE replay_job_id = $1', [lineage!.replay_job_id]);
    const skewed = await verifyIntegrity(db.prisma);
    expect(only(skewed.violations, 'replay.lineage')).toEqual([
      expect.objectContaining({
        jobId: lineage!.replay_job_id,
        expected: expect.objectContaining({ sourceJobId: workload.replaySource, sourceRunNumber: 2 }),
        found: expect.objectContaining({ sourceRunNumber: 1, enqueuedEvent: expect.objectContaining({ replayedFromRunNumber: 1 }) }),
      }),
    ]);
    await corrupt('DELETE FROM runledger.job_replays WHERE replay_job_id = $1', [lineage!.replay_job_id]);
    await corrupt('UPDATE runledger.job_queue SET run_number = 3 WHERE id = $1', [workload.requeued]);
    const report = await verifyIntegrity(db.prisma);
    expect(only(report.violations, 'replay.lineage_missing')).toEqual([
      expect.objectContaining({
        jobId: lineage!.replay_job_id,
        expected: { lineage: { replayJobId: lineage!.replay_job_id, sourceJobId: workload.replaySource } },
      }),
    ]);
    expect(only(report.violations, 'job.run_number_mismatch')).toEqual([
      expect.objectContaining({ jobId: workload.requeued, expected: { runNumber: 2 }, found: { runNumber: 3 } }),
    ]);
  });

  it('narrows to some runs and to a scope, and stops at maxViolations', async () => {
    // The failed and canceled runs were never touched.
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workload.failed, workload.canceled] })).violations).toEqual([]);
    const other = await verifyIntegrity(db.prisma, { scope: { kind: 'organization', organizationId: '0193d6a0-0000-7000-8000-000000000001' } });
    expect(other).toMatchObject({ clean: true, checked: { runs: 0, jobs: 0 } });
    const capped = await verifyIntegrity(db.prisma, { maxViolations: 2 });
    expect(capped).toMatchObject({ clean: false, truncated: true });
    expect(capped.violations).toHaveLength(2);
  });

  it('refuses bad options with a coded validation error naming the field', async () => {
    await expect(verifyIntegrity(db.prisma, { pageSize: 0 })).rejects.toMatchObject({ code: 'integrity.invalid_input', field: 'pageSize' });
    await expect(verifyIntegrity(db.prisma, { workflowRunIds: ["1'; DROP TABLE x; --"] })).rejects.toMatchObject({
      code: 'integrity.invalid_input',
      field: 'workflowRunIds.0',
    });
  });

  it('joins a caller transaction and writes nothing', async () => {
    const report = await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('SET TRANSACTION READ ONLY');
      return verifyIntegrity(tx, { workflowRunIds: [workload.failed] });
    });
    expect(report.clean).toBe(true);
  });
});
