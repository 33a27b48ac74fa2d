import { noOrganizationScope, recoverWorkflowRun, type PrismaClientLike } from 'runledger';

export async function retryFromFailedStep(prisma: PrismaClientLike, sourceRunId: string) {
  return recoverWorkflowRun(prisma, {
    sourceRunId,
    scope: noOrganizationScope(),
    requestKey: `fork:${sourceRunId}`,
    reason: 'payment provider fixed',
    mode: 'failed_only', // add fromCallIndex: n to reuse only the calls before n
  });
}
