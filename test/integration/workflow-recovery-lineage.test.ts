/**
 * Recovery lineage kept whole: retention deletes a source and its recoveries
 * together or not at all (also while a recovery is being made), and the
 * integrity checker names seeded corruption of lineage rows and carried steps.
 */
import { describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeJob,
  enqueueWorkflowRun,
  failJob,
  noOrganizationScope,
  purgeFinished,
  recoverWorkflowRun,
  verifyIntegrity,
  workflow,
} from '../../src/index.js';
import { corrupter, only } from '../harness/corruption.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const scope = noOrganizationScope();
const OLD = new Date('2020-01-01T00:00:00Z');
const CUTOFF = new Date('2021-01-01T00:00:00Z');

/** Runs the pending jobs of `jobType`: fails them or completes them. */
async function settle(jobType: string, ok: boolean): Promise<void> {
  for (const job of await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 100, leaseSeconds: 60, markRunning: true })) {
    if (ok) await completeJob(db.prisma, { ...job, output: { ok: true } });
    else await failJob(db.prisma, { ...job, error: { code: 'x.failed', message: 'no' }, retryable: false });
  }
}

/** A two-step chain whose second step failed: a -> b. */
async function failedChain(tag: string): Promise<string> {
  const { workflowRunId } = await enqueueWorkflowRun(
    db.prisma,
    workflow(`lin.${tag}`).job('a', `${tag}.a`, {}).job('b', `${tag}.b`, {}).afterSuccess('b', ['a']).build(),
  );
  await settle(`${tag}.a`, true);
  await settle(`${tag}.b`, false);
  return workflowRunId;
}

async function recover(sourceRunId: string, key = 'k'): Promise<string> {
  return (await recoverWorkflowRun(db.prisma, { sourceRunId, scope, requestKey: key, reason: 'again', mode: 'failed_only' })).recoveryRunId;
}

/** Moves the runs' finish to OLD and their steps', jobs' and attempts' times back by as much, so time still follows cause. */
async function backdate(ids: string[]): Promise<void> {
  await db.prisma.$transaction([
    db.prisma.$executeRaw`
      WITH shift AS (SELECT id, finished_at - ${OLD}::timestamptz AS by FROM runledger.workflow_runs WHERE id = ANY(${ids}::uuid[])),
      steps AS (
        UPDATE runledger.workflow_steps ws
           SET released_at = ws.released_at - s.by, started_at = ws.started_at - s.by, finished_at = ws.finished_at - s.by
          FROM shift s WHERE ws.workflow_run_id = s.id
        RETURNING ws.job_id, s.by
      ),
      jobs AS (
        UPDATE runledger.job_queue jq
           SET created_at = jq.created_at - st.by, next_run_at = jq.next_run_at - st.by,
               started_at = jq.started_at - st.by, finished_at = jq.finished_at - st.by
          FROM steps st WHERE jq.id = st.job_id
      ),
      attempts AS (
        UPDATE runledger.job_attempts a
           SET started_at = a.started_at - st.by, finished_at = a.finished_at - st.by
          FROM steps st WHERE a.job_id = st.job_id
      )
      UPDATE runledger.workflow_runs r SET finished_at = ${OLD} FROM shift s WHERE r.id = s.id`,
  ]);
}

async function existing(ids: string[]): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_runs WHERE id = ANY(${ids}::uuid[])`;
  return row!.n;
}

const corrupt = corrupter(db);

describe('recovery lineage under retention', () => {
  it('deletes a source and its recoveries together once all are finished and old, and never half of them', async () => {
    const source = await failedChain('p1');
    const first = await recover(source);
    await settle('p1.b', false);
    const second = await recover(first);
    await backdate([source, first]);
    // The second recovery still runs: the whole lineage stays, whatever the batch size.
    expect(await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 1 })).toMatchObject({ workflowRuns: 0 });
    expect(await existing([source, first, second])).toBe(3);

    await settle('p1.b', true);
    // Finished, but recently: still kept.
    expect(await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 1 })).toMatchObject({ workflowRuns: 0 });
    await backdate([second]);
    expect(await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 1, dryRun: true })).toMatchObject({ workflowRuns: 3 });
    expect(await purgeFinished(db.prisma, { olderThan: CUTOFF, batchSize: 1 })).toMatchObject({ workflowRuns: 3 });
    expect(await existing([source, first, second])).toBe(0);
    const [links] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_recoveries`;
    expect(links!.n).toBe(0);
  });

  it('keeps a source whose recovery is being made in a concurrent transaction, and then keeps both', async () => {
    const source = await failedChain('p2');
    await backdate([source]);
    let recovered!: () => void;
    const inside = new Promise<void>((resolve) => (recovered = resolve));
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const recovering = db.prisma.$transaction(async (tx) => {
      const result = await recoverWorkflowRun(tx, { sourceRunId: source, scope, requestKey: 'k', reason: 'again' });
      recovered();
      await gate;
      return result.recoveryRunId;
    });
    await inside;
    // The recovery holds the source's row: the purge skips it (it never waits).
    expect(await purgeFinished(db.prisma, { olderThan: CUTOFF })).toMatchObject({ workflowRuns: 0 });
    finish();
    const recoveryRunId = await recovering;
    expect(await purgeFinished(db.prisma, { olderThan: CUTOFF })).toMatchObject({ workflowRuns: 0 });
    expect(await existing([source, recoveryRunId])).toBe(2);
  });

  it('refuses to delete one run of a lineage by hand (both runs are RESTRICTed)', async () => {
    const source = await failedChain('p3');
    const recoveryRunId = await recover(source);
    for (const id of [source, recoveryRunId]) {
      await expect(db.prisma.$executeRaw`DELETE FROM runledger.workflow_runs WHERE id = ${id}::uuid`).rejects.toThrow();
    }
  });
});

describe('integrity of recoveries', () => {
  it('is clean after recoveries, and names a lineage row that disagrees with its runs', async () => {
    const source = await failedChain('i1');
    const recoveryRunId = await recover(source);
    expect((await verifyIntegrity(db.prisma)).violations).toEqual([]);

    await corrupt(`UPDATE runledger.workflow_runs SET workflow_type = 'lin.other' WHERE id = $1`, [recoveryRunId]);
    expect(only((await verifyIntegrity(db.prisma, { workflowRunIds: [source] })).violations, 'recovery.lineage')).toEqual([
      expect.objectContaining({
        workflowRunId: recoveryRunId,
        expected: expect.objectContaining({ sourceRunId: source }),
        found: expect.objectContaining({ sourceType: 'lin.i1', recoveryType: 'lin.other' }),
      }),
    ]);
    await corrupt(`UPDATE runledger.workflow_runs SET workflow_type = 'lin.i1' WHERE id = $1`, [recoveryRunId]);

    // A source reopened (never done by runledger).
    await corrupt(`UPDATE runledger.workflow_runs SET status = 'RUNNING', finished_at = NULL WHERE id = $1`, [source]);
    expect(only((await verifyIntegrity(db.prisma, { workflowRunIds: [recoveryRunId] })).violations, 'recovery.lineage')).toEqual([
      expect.objectContaining({ found: expect.objectContaining({ sourceStatus: 'RUNNING' }) }),
    ]);
    await corrupt(`UPDATE runledger.workflow_runs SET status = 'COMPLETED_WITH_ERRORS', finished_at = now() WHERE id = $1`, [source]);

    // The source gone without its lineage row (foreign keys off).
    await corrupt(`DELETE FROM runledger.workflow_runs WHERE id = $1`, [source]);
    expect(only((await verifyIntegrity(db.prisma, { workflowRunIds: [recoveryRunId] })).violations, 'recovery.lineage')).toEqual([
      expect.objectContaining({ workflowRunId: recoveryRunId, found: expect.objectContaining({ sourceExists: false, recoveryExists: true }) }),
    ]);
  });

  it('names a carried step whose output or recovery mode disagrees with its source', async () => {
    const source = await failedChain('i2');
    const recoveryRunId = await recover(source);
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [source, recoveryRunId] })).violations).toEqual([]);

    await corrupt(`UPDATE runledger.workflow_steps SET output = '{"forged":true}' WHERE workflow_run_id = $1 AND step_key = 'a'`, [recoveryRunId]);
    expect(only((await verifyIntegrity(db.prisma, { workflowRunIds: [recoveryRunId] })).violations, 'recovery.carried_step')).toEqual([
      expect.objectContaining({
        workflowRunId: recoveryRunId,
        stepKey: 'a',
        expected: expect.objectContaining({ output: { ok: true } }),
        found: expect.objectContaining({ output: { forged: true } }),
      }),
    ]);
    await corrupt(`UPDATE runledger.workflow_steps SET output = '{"ok":true}' WHERE workflow_run_id = $1 AND step_key = 'a'`, [recoveryRunId]);

    await corrupt(`UPDATE runledger.workflow_recoveries SET mode = 'FULL' WHERE recovery_run_id = $1`, [recoveryRunId]);
    expect(only((await verifyIntegrity(db.prisma, { workflowRunIds: [recoveryRunId] })).violations, 'recovery.carried_step')).toEqual([
      expect.objectContaining({ stepKey: 'a', found: expect.objectContaining({ recoveryMode: 'FULL' }) }),
    ]);
    // A SUCCEEDED job step without a job and without the carried mark is still step.job_missing.
    await corrupt(`UPDATE runledger.workflow_steps SET status_reason = NULL WHERE workflow_run_id = $1 AND step_key = 'a'`, [recoveryRunId]);
    expect(only((await verifyIntegrity(db.prisma, { workflowRunIds: [recoveryRunId] })).violations, 'step.job_missing')).toEqual([
      expect.objectContaining({ stepKey: 'a' }),
    ]);
  });
});
