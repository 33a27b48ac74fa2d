/** External steps: completion, idempotent retries, conflicts with stable codes. */
import { describe, expect, it } from 'vitest';
import {
  completeExternalWorkflowStep,
  enqueueWorkflowRun,
  getWorkflowRun,
  noOrganizationScope,
  organizationScope,
  workflow,
  type CompleteExternalWorkflowStepInput,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs, stepsByKey } from '../harness/workflow-helpers.js';
import { runledgerErrorOf as errorOf } from '../harness/errors.js';

const db = useTestDatabase();

async function approvalRun(organizationId: string | null = null) {
  const { workflowRunId, status } = await enqueueWorkflowRun(
    db.prisma,
    workflow('approval')
      .organization(organizationId)
      .external('approve')
      .job('ship', 'approval.ship', {})
      .afterSuccess('ship', ['approve'])
      .resultStep('ship')
      .build(),
  );
  return { workflowRunId, status };
}

describe('external steps', () => {
  it('waits for an external root, completes it with output and releases its dependent', async () => {
    const { workflowRunId, status } = await approvalRun();
    // A BLOCKED step counts as active (seed rule), so the run is RUNNING, not WAITING_FOR_EXTERNAL.
    expect(status).toBe('RUNNING');
    const lone = await enqueueWorkflowRun(db.prisma, workflow('lone').external('sign').build());
    expect(lone.status).toBe('WAITING_FOR_EXTERNAL');
    expect((await stepsByKey(db.prisma, workflowRunId)).approve!.status).toBe('WAITING_FOR_EXTERNAL');
    const step = await completeExternalWorkflowStep(db.prisma, {
      workflowRunId,
      stepKey: 'approve',
      scope: noOrganizationScope(),
      outcome: { status: 'succeeded', output: { by: 'ana' } },
      statusReason: 'approved in UI',
    });
    expect(step).toMatchObject({ status: 'SUCCEEDED', output: { by: 'ana' }, statusReason: 'approved in UI' });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.ship).toMatchObject({ status: 'ENQUEUED' });
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('RUNNING');
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: 'shipped' }));
    expect(await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).toMatchObject({ status: 'SUCCEEDED', result: 'shipped' });
  });

  it('returns the stored step for an identical retry and refuses every different one with a stable code', async () => {
    const { workflowRunId } = await approvalRun();
    const input: CompleteExternalWorkflowStepInput = {
      workflowRunId,
      stepKey: 'approve',
      scope: noOrganizationScope(),
      outcome: { status: 'succeeded', output: { by: 'ana', at: [1, 2] } },
      statusReason: 'ok',
    };
    const first = await completeExternalWorkflowStep(db.prisma, input);
    const again = await completeExternalWorkflowStep(db.prisma, { ...input, outcome: { status: 'succeeded', output: { at: [1, 2], by: 'ana' } } });
    expect(again).toEqual(first);
    expect((await errorOf(completeExternalWorkflowStep(db.prisma, { ...input, outcome: { status: 'succeeded', output: { by: 'bob' } } }))).code).toBe(
      'workflow.external_step_conflicting_output_retry',
    );
    expect((await errorOf(completeExternalWorkflowStep(db.prisma, { ...input, statusReason: 'other' }))).code).toBe(
      'workflow.external_step_conflicting_completion_retry',
    );
    expect((await errorOf(completeExternalWorkflowStep(db.prisma, { ...input, outcome: { status: 'failed' } }))).code).toBe(
      'workflow.external_step_conflicting_completion_retry',
    );
    expect((await stepsByKey(db.prisma, workflowRunId)).approve).toMatchObject({ status: 'SUCCEEDED', output: { by: 'ana', at: [1, 2] }, statusReason: 'ok' });
  });

  it('fails an external step, cancels its ON_SUCCESS dependent and ends the run with errors', async () => {
    const { workflowRunId } = await approvalRun();
    await completeExternalWorkflowStep(db.prisma, {
      workflowRunId,
      stepKey: 'approve',
      scope: noOrganizationScope(),
      outcome: { status: 'failed' },
      errorCode: 'approval.rejected',
      errorMessage: 'Rejected by reviewer',
    });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.approve).toMatchObject({ status: 'FAILED', lastErrorCode: 'approval.rejected', output: null });
    expect(steps.ship).toMatchObject({ status: 'CANCELED', statusReason: 'workflow.dependency_unsatisfied' });
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('COMPLETED_WITH_ERRORS');
  });

  it('names what is wrong: unknown step, job step, step not waiting, other organization', async () => {
    const org = newId();
    const { workflowRunId } = await approvalRun(org);
    const base = { workflowRunId, scope: organizationScope(org), outcome: { status: 'succeeded' as const } };
    expect(await errorOf(completeExternalWorkflowStep(db.prisma, { ...base, stepKey: 'nope' }))).toMatchObject({
      code: 'workflow.external_step_not_found',
      category: 'not_found',
    });
    expect((await errorOf(completeExternalWorkflowStep(db.prisma, { ...base, stepKey: 'ship' }))).code).toBe('workflow.external_step_not_external');
    expect((await errorOf(completeExternalWorkflowStep(db.prisma, { ...base, stepKey: 'approve', scope: organizationScope(newId()) }))).code).toBe(
      'workflow.external_step_not_found',
    );
    expect((await errorOf(completeExternalWorkflowStep(db.prisma, { ...base, stepKey: 'approve', scope: noOrganizationScope() }))).code).toBe(
      'workflow.external_step_not_found',
    );

    const blocked = await enqueueWorkflowRun(db.prisma, workflow('blocked').job('a', 'blocked.a', {}).external('later').afterSuccess('later', ['a']).build());
    expect(
      await errorOf(
        completeExternalWorkflowStep(db.prisma, {
          workflowRunId: blocked.workflowRunId,
          stepKey: 'later',
          scope: noOrganizationScope(),
          outcome: { status: 'canceled' },
        }),
      ),
    ).toMatchObject({ code: 'workflow.external_step_not_waiting', category: 'conflict' });
  });

  it('refuses output on a failed or canceled outcome, in the type and at run time', async () => {
    const { workflowRunId } = await approvalRun();
    const bad: CompleteExternalWorkflowStepInput = {
      workflowRunId,
      stepKey: 'approve',
      scope: noOrganizationScope(),
      // @ts-expect-error output is only allowed with status 'succeeded'
      outcome: { status: 'failed', output: { x: 1 } },
    };
    const error = await errorOf(completeExternalWorkflowStep(db.prisma, bad));
    expect(error).toMatchObject({ code: 'workflow.external_output_not_allowed', category: 'validation', field: 'outcome.output' });
    expect((await stepsByKey(db.prisma, workflowRunId)).approve!.status).toBe('WAITING_FOR_EXTERNAL');
  });

  it('refuses a caller transaction that is not READ COMMITTED before taking a lock', async () => {
    const { workflowRunId } = await approvalRun();
    const error = await errorOf(
      db.prisma.$transaction(
        (tx) => completeExternalWorkflowStep(tx, { workflowRunId, stepKey: 'approve', scope: noOrganizationScope(), outcome: { status: 'succeeded' } }),
        { isolationLevel: 'Serializable' },
      ),
    );
    expect(error).toMatchObject({ code: 'workflow.external_completion_unsupported_isolation', category: 'validation' });
    expect((await stepsByKey(db.prisma, workflowRunId)).approve!.status).toBe('WAITING_FOR_EXTERNAL');
  });
});
