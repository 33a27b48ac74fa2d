import { z } from 'zod';
import {
  defineJob,
  enqueueJob,
  isRunledgerError,
  listJobDefinitions,
  setJobDefinitionEnabled,
  syncJobDefinitions,
  workflow,
  type PrismaClientLike,
} from 'runledger';

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
  const refused = await enqueueJob(prisma, capture, { invoiceId: 'inv_1' }).then(
    () => false,
    (error: unknown) => isRunledgerError(error, 'job.definition_not_found_or_disabled'), // whatever the options; nothing written
  );
  await setJobDefinitionEnabled(prisma, { jobType: 'billing.capture', enabled: true });

  // Strict: also refuse a type no worker has ever synced (a typo, a handler not deployed yet).
  await enqueueJob(prisma, { jobType: 'billing.capture', payload: { invoiceId: 'inv_1' } }, { requireDefinition: true });

  // A step by name leaves priority, maxAttempts and timeoutSeconds out: the catalog's 5, 8 and 60 apply.
  return { items, refused, run: workflow('billing.close').job('capture', 'billing.capture', { invoiceId: 'inv_2' }).build() };
}
