/**
 * The step-changed channel: one NOTIFY (payload: the run id) per run whose
 * steps a transaction settled, appended to, or completed externally; none
 * for a rolled-back transaction, none for a claim.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendWorkflowSteps,
  completeExternalWorkflowStep,
  completeJob,
  enqueueWorkflowRun,
  failJob,
  noOrganizationScope,
  workflow,
  WORKFLOW_STEP_CHANGED_CHANNEL,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { claimAll, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let listener: pg.Client;
const received: string[] = [];

beforeAll(async () => {
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (message) => {
    if (message.channel === WORKFLOW_STEP_CHANGED_CHANNEL) received.push(message.payload ?? '');
  });
  await listener.query(`LISTEN ${WORKFLOW_STEP_CHANGED_CHANNEL}`);
});
afterAll(() => listener.end());

/** Every notification committed so far, then forgets them: a round trip on the listening connection delivers them all. */
async function drain(): Promise<string[]> {
  await listener.query('SELECT 1');
  return received.splice(0);
}

describe('step-changed notifications', () => {
  it('names the run once per settling transaction, and not for an enqueue or a claim', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('notify.chain').job('a', 'notify.a', {}).job('b', 'notify.b', {}).job('c', 'notify.c', {}).afterSuccess('c', ['a', 'b']).build(),
    );
    // A new run has no page open yet: its enqueue sends nothing here (job-available wakes the workers).
    expect(await drain()).toEqual([]);
    const claimed = await claimAll(db.prisma);
    expect(claimed).toHaveLength(2);
    expect(await drain()).toEqual([]);
    // Both prerequisites in one transaction: PostgreSQL folds the identical notifications into one.
    await db.prisma.$transaction(async (tx) => {
      for (const job of claimed) await completeJob(tx, { ...job, output: { ok: true } });
    });
    expect(await drain()).toEqual([workflowRunId]);
    expect((await stepsByKey(db.prisma, workflowRunId)).c!.status).toBe('ENQUEUED');
  });

  it('sends nothing when the settling transaction rolls back, nor for a retry that leaves the step live', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('notify.retry').job('a', 'notify.r', {}, { maxAttempts: 3 }).build());
    await drain();
    const [job] = await claimAll(db.prisma);
    await expect(
      db.prisma.$transaction(async (tx) => {
        await completeJob(tx, { ...job!, output: null });
        throw new Error('host rollback');
      }),
    ).rejects.toThrow('host rollback');
    await failJob(db.prisma, { ...job!, error: { code: 'test.flaky', message: 'try again' }, retryable: true });
    expect(await drain()).toEqual([]);
    expect((await stepsByKey(db.prisma, workflowRunId)).a!.status).not.toMatch(/SUCCEEDED|FAILED/);
  });

  it('names the run for an external completion and an append', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('notify.ext').external('gate').external('later').build());
    await drain();
    await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'add',
      window: 'gate',
      steps: [{ key: 'extra', kind: 'external' as const }],
    });
    expect(await drain()).toEqual([workflowRunId]);
    await completeExternalWorkflowStep(db.prisma, { scope: noOrganizationScope(), workflowRunId, stepKey: 'gate', outcome: { status: 'succeeded' } });
    expect(await drain()).toEqual([workflowRunId]);
  });
});
