import { z } from 'zod';
import { adminScope, defineJob, enqueueJob, listRateLimits, setRateLimit, type PrismaClientLike } from 'runledger';

// At most 100 calls to Stripe a minute, 10 at once, across every worker process.
export const charge = defineJob('billing.charge', z.object({ invoiceId: z.string() }), async (payload) => payload.invoiceId, {
  rateLimit: { key: 'stripe', limit: 100, periodMs: 60_000, burst: 10 },
});

export async function shapeCalls(prisma: PrismaClientLike) {
  await enqueueJob(prisma, charge, { invoiceId: 'in_1' });
  // A key from the payload: 5 exports a second per tenant.
  await enqueueJob(prisma, { jobType: 'reports.export', payload: {}, rateLimit: { key: 'export:t_1', limit: 5, periodMs: 1_000 } });
  // An operator halves Stripe's rate while jobs run; enqueues no longer change it until `limit: null`.
  await setRateLimit(prisma, { key: 'stripe', limit: { limit: 50, periodMs: 60_000, burst: 5 } });
  const { items } = await listRateLimits(prisma, { scope: adminScope() });
  return items.map((k) => `${k.key}: ${k.tokens.toFixed(1)}/${k.burst} tokens, ${k.waiting} waiting`);
}
