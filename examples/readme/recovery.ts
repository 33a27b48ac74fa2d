import { listWorkflowRecoveries, organizationScope, recoverWorkflowRun, workflowRunHandle, type PrismaClientLike } from 'runledger';

export async function resumeFailedImport(prisma: PrismaClientLike, orgId: string, failedRunId: string) {
  const scope = organizationScope(orgId);
  const recovery = await recoverWorkflowRun(prisma, {
    sourceRunId: failedRunId, // a finished run (SUCCEEDED, COMPLETED_WITH_ERRORS or CANCELED); it is never modified
    scope,
    requestKey: `resume:${failedRunId}:1`, // retrying with the same key and request returns the same recovery
    reason: 'warehouse API outage',
    mode: 'failed_only', // steps that succeeded keep their outputs and do not run again; 'full' (default) runs every step
  });
  // recovery.outcome: 'inserted' | 'existing'; recovery.carriedStepKeys: the steps carried over as SUCCEEDED

  const run = await workflowRunHandle(prisma, scope, recovery.recoveryRunId).getRun();
  // run.recoveredFrom: { sourceRunId, requestKey, reason, mode, createdAt, recoveryStatus }
  const { items } = await listWorkflowRecoveries(prisma, { runId: failedRunId, scope }); // every recovery of the source, a page at a time
  return { recovery, run, items };
}
