import { z } from 'zod';
import { defineJob, enqueueJob, type PrismaClientLike } from 'runledger';

// One turn per tenant: a tenant's 200,000-job import does not hold back another tenant's ten jobs.
export const sync = defineJob('contacts.sync', z.object({ contactId: z.string() }), async (payload) => payload.contactId, {
  fairness: { key: (_payload, job) => job.organizationId ?? 'none' },
});

export async function enqueueFairly(prisma: PrismaClientLike) {
  await enqueueJob(prisma, sync, { contactId: 'c_1' }, { organizationId: 'org-a' });
  // A paying tier takes 3 turns a round; a job without a definition names its key itself.
  await enqueueJob(prisma, sync, { contactId: 'c_2' }, { organizationId: 'org-b', fairness: { key: 'org-b', weight: 3 } });
  await enqueueJob(prisma, { jobType: 'reports.export', payload: {}, organizationId: 'org-a', fairness: { key: 'org-a' } });
}
