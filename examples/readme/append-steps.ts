import { appendWorkflowSteps, completeExternalWorkflowStep, enqueueWorkflowRun, organizationScope, workflow, type PrismaClientLike } from 'runledger';

export async function reviewContract(prisma: PrismaClientLike, orgId: string, contractId: string) {
  const { workflowRunId } = await enqueueWorkflowRun(
    prisma,
    workflow('contract.review').organization(orgId).job('draft', 'contract.draft', { contractId }).external('intake').build(),
  );

  const appended = await appendWorkflowSteps(prisma, {
    workflowRunId,
    scope: organizationScope(orgId),
    mutationKey: `legal-review:${contractId}`, // the same request again returns 'already_applied'
    window: 'intake', // refused once 'intake' has been completed
    steps: [
      { kind: 'external', key: 'legal' },
      { kind: 'job', key: 'notify', jobType: 'mail.send', payload: { to: 'legal@example.com' } },
    ],
    edges: [
      { prerequisite: 'draft', dependent: 'legal' },
      { prerequisite: 'legal', dependent: 'notify', mode: 'on_terminal' },
    ],
  });
  // appended.outcome === 'appended'; appended.steps: each new step's id and status

  // Later: no more appends; the run ends once its other steps have.
  await completeExternalWorkflowStep(prisma, { workflowRunId, stepKey: 'intake', scope: organizationScope(orgId), outcome: { status: 'succeeded' } });
  return appended;
}
