import { enqueueOrGetActiveWorkflowRun, organizationScope, workflow, workflowRunHandle, type PrismaClientLike } from 'runledger';

export async function syncCustomer(prisma: PrismaClientLike, orgId: string, customerId: string) {
  const outcome = await enqueueOrGetActiveWorkflowRun(prisma, {
    ...workflow('customer.sync').job('pull', 'crm.pull', { customerId }).job('push', 'crm.push', {}).afterSuccess('push', ['pull']).build(),
    organizationId: orgId,
    activeKey: `sync:${customerId}`, // non-blank, at most 512 bytes
  });
  // 'inserted': a new run, which holds the key now; 'existing_active': another run holds it (its id);
  // 'existing_idempotent': the run an earlier request with the same idempotencyKey created.
  const run = workflowRunHandle(prisma, organizationScope(orgId), outcome.workflowRunId);
  return run.getStatus();
}
