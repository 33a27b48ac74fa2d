/** Run cancellation: what it cancels, what it keeps, idempotency, notification. */
import { describe, expect, it } from 'vitest';
import {
  cancelWorkflowRun,
  claimJobs,
  completeJob,
  enqueueWorkflowRun,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  isRunledgerError,
  listJobEvents,
  organizationScope,
  workflow,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier, claimAll, useRunTerminalListener, runRunnableJobs, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const terminal = useRunTerminalListener(() => db.url);

describe('cancelWorkflowRun', () => {
  it('cancels every non-terminal step and its job, keeps finished steps, and notifies once', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('cancel')
        .job('done', 'cancel.done', {})
        .job('leased', 'cancel.leased', {})
        .job('pending', 'cancel.pending', {})
        .external('approval')
        .job('blocked', 'cancel.blocked', {})
        .afterSuccess('leased', ['done'])
        .afterSuccess('blocked', ['approval'])
        .build(),
    );
    // The roots 'done' and 'pending' run; 'done' releases 'leased', which is claimed and left running.
    for (const root of await claimJobs(db.prisma, {
      workerId: 'w0',
      jobTypes: ['cancel.done', 'cancel.pending'],
      limit: 10,
      leaseSeconds: 60,
      markRunning: true,
    })) {
      await completeJob(db.prisma, { ...root, output: 'x' });
    }
    const [running] = await claimAll(db.prisma, 'w1');
    expect(running?.jobType).toBe('cancel.leased');
    const pendingRun = await enqueueWorkflowRun(db.prisma, workflow('cancel2').job('p', 'cancel.p', {}).build());

    const run = await cancelWorkflowRun(db.prisma, { workflowRunId, scope: noOrganizationScope(), reason: 'customer request' });
    expect(run).toMatchObject({ status: 'CANCELED', statusReason: 'customer request', result: null });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.done!.status).toBe('SUCCEEDED');
    expect(steps.pending!.status).toBe('SUCCEEDED');
    for (const key of ['leased', 'approval', 'blocked']) expect(steps[key]).toMatchObject({ status: 'CANCELED', statusReason: 'customer request' });
    const leasedJob = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: running!.jobId });
    // The lease expiry stays as the quiescence marker: the handler may still be running.
    expect(leasedJob).toMatchObject({ status: 'CANCELED', leaseOwner: null });
    expect(leasedJob.leaseExpiresAt).toEqual(running!.leaseExpiresAt);
    expect((await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: running!.jobId })).items.at(-1)?.eventType).toBe('CANCELED');
    // The still-running handler's completion is refused afterwards.
    const late = await completeJob(db.prisma, { ...running!, output: 1 }).catch((e: unknown) => e);
    expect(isRunledgerError(late, 'job.lease_owner_mismatch')).toBe(true);

    const pendingSteps = await stepsByKey(db.prisma, pendingRun.workflowRunId);
    await cancelWorkflowRun(db.prisma, { workflowRunId: pendingRun.workflowRunId, scope: noOrganizationScope() });
    const pendingJob = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: pendingSteps.p!.jobId! });
    expect(pendingJob).toMatchObject({ status: 'CANCELED', leaseExpiresAt: null });

    // Idempotent on an already canceled run; notified exactly once.
    const again = await cancelWorkflowRun(db.prisma, { workflowRunId, scope: noOrganizationScope(), reason: 'again' });
    expect(again).toMatchObject({ status: 'CANCELED', statusReason: 'customer request' });
    await terminal.current.flush();
    expect(terminal.current.received.filter((n) => n.workflow_run_id === workflowRunId)).toEqual([{ workflow_run_id: workflowRunId, status: 'CANCELED' }]);
  });

  it('answers two concurrent cancellations with one canceled run and one notification', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('cancel-twice').job('a', 'twice.a', {}).external('b').build());
    const clients = [db.newClient({ max: 1 }), db.newClient({ max: 1 })];
    const start = barrier(2);
    const runs = await Promise.all(
      clients.map((client, i) =>
        (async () => {
          await start();
          return cancelWorkflowRun(client, { workflowRunId, scope: noOrganizationScope(), reason: `caller ${i}` });
        })(),
      ),
    );
    expect(runs.map((run) => run.status)).toEqual(['CANCELED', 'CANCELED']);
    expect(runs[0]!.statusReason).toBe(runs[1]!.statusReason);
    await terminal.current.flush();
    expect(terminal.current.received.filter((n) => n.workflow_run_id === workflowRunId)).toEqual([{ workflow_run_id: workflowRunId, status: 'CANCELED' }]);
  });

  it('refuses a finished run and an invisible one', async () => {
    const org = newId();
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('finished').organization(org).job('a', 'finished.a', {}).build());
    await runRunnableJobs(db.prisma);
    expect((await getWorkflowRun(db.prisma, { scope: organizationScope(org), workflowRunId })).status).toBe('SUCCEEDED');
    const finished = await cancelWorkflowRun(db.prisma, { workflowRunId, scope: organizationScope(org) }).catch((e: unknown) => e);
    expect(isRunledgerError(finished, 'workflow.run_already_finished')).toBe(true);
    const hidden = await cancelWorkflowRun(db.prisma, { workflowRunId, scope: noOrganizationScope() }).catch((e: unknown) => e);
    expect(isRunledgerError(hidden, 'workflow.run_not_found')).toBe(true);
  });
});
