import { z } from 'zod';
import { adminScope, defineJob, enqueueJob, listConcurrencyLimits, setConcurrencyLimit, workflow, type PrismaClientLike } from 'runledger';

// At most 5 calls to the model provider per tenant at once, across every worker process.
export const summarize = defineJob('docs.summarize', z.object({ tenantId: z.string(), docId: z.string() }), async (payload) => ({ doc: payload.docId }), {
  concurrency: { key: (payload) => `llm:${payload.tenantId}`, limit: 5 },
});

export async function shapeWork(prisma: PrismaClientLike) {
  // The definition's key, computed from this payload: llm:t_1.
  await enqueueJob(prisma, summarize, { tenantId: 't_1', docId: 'd_1' });
  // An enqueue (or a workflow step) may name its own key and limit.
  await enqueueJob(prisma, { jobType: 'crm.sync', payload: {}, concurrency: { key: 'crm-api', limit: 3 } });
  const run = workflow('docs.ingest').job('summary', summarize, { tenantId: 't_2', docId: 'd_2' }).build();
  // An operator raises a key's limit while jobs run; enqueues no longer change it until `limit: null`.
  await setConcurrencyLimit(prisma, { key: 'llm:t_1', limit: 10 });
  const { items } = await listConcurrencyLimits(prisma, { scope: adminScope() });
  return { run, keys: items.map((k) => `${k.key}: ${k.leased}/${k.limit} leased, ${k.waiting} waiting`) };
}
