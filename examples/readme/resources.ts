import { z } from 'zod';
import { defineJob, enqueueJob, workflow, type PrismaClientLike } from 'runledger';

export const syncCrm = defineJob('crm.sync', z.object({ customerId: z.string() }), async (payload) => ({ synced: payload.customerId }));

export async function requestSyncs(prisma: PrismaClientLike, accountId: string) {
  // Never two calls against this provider account at once, whichever job type or organization asks.
  await enqueueJob(prisma, syncCrm, { customerId: 'c_1' }, { resource: `crm-account:${accountId}` });
  // The same for a workflow step's job.
  return workflow('crm.onboard')
    .job('sync', syncCrm, { customerId: 'c_2' }, { resource: `crm-account:${accountId}` })
    .build();
}
