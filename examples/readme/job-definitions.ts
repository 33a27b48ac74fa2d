import { z } from 'zod';
import { defineJob, enqueueJob, listJobDefinitions, setJobDefinitionEnabled, syncJobDefinitions, workflow, type PrismaClientLike } from 'runledger';

export const capture = defineJob('billing.capture', z.object({ invoiceId: z.string() }), async ({ invoiceId }) => ({ receipt: invoiceId }), {
  retry: { maxAttempts: 8 },
  timeoutSeconds: 60,
  priority: 5, // new: the type's default claim order
});

export async function catalog(prisma: PrismaClientLike) {
  // A worker does this at start (createWorker({ syncDefinitions: false }) to skip); a deploy step may do it first.
  await syncJobDefinitions(prisma, [capture]); // { inserted, updated, unchanged }; never touches `enabled`
  const { items } = await listJobDefinitions(prisma, { limit: 100 }); // job-type order, with defaults and payload JSON Schema

  await setJobDefinitionEnabled(prisma, { jobType: 'billing.capture', enabled: false });
  // Now refused whatever the options (job.definition_not_found_or_disabled), nothing written:
  //   await enqueueJob(prisma, capture, { invoiceId: 'inv_1' });
  await setJobDefinitionEnabled(prisma, { jobType: 'billing.capture', enabled: true });

  // Strict: also refuse a type no worker has ever synced (a typo, a handler not deployed yet).
  await enqueueJob(prisma, { jobType: 'billing.capture', payload: { invoiceId: 'inv_1' } }, { requireDefinition: true });

  // A step by name leaves priority, maxAttempts and timeoutSeconds out: the catalog's 5, 8 and 60 apply.
  return { items, run: workflow('billing.close').job('capture', 'billing.capture', { invoiceId: 'inv_2' }).build() };
}
