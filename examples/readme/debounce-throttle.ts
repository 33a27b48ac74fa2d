import { z } from 'zod';
import { defineJob, enqueueJob, type Db } from 'runledger';

export const reindex = defineJob('search.reindex', z.object({ customerId: z.string(), fields: z.array(z.string()) }), async (payload) => payload.customerId);
export const welcome = defineJob('email.welcome', z.object({ userId: z.string() }), async () => undefined);

// In the host's transaction (tx), as any enqueue.
export async function onCustomerChanged(tx: Db, customerId: string, fields: string[]) {
  // Re-index this customer at most once per 30 s of quiet, with the latest change; a steady stream of changes still
  // runs within 2 minutes of the first one.
  const { jobId, disposition } = await enqueueJob(tx, reindex, { customerId, fields }, { debounce: { key: customerId, windowMs: 30_000, maxWaitMs: 120_000 } });
  return { jobId, joined: disposition === 'debounced' };
}

export async function onSignUp(tx: Db, userId: string) {
  // One welcome e-mail per user per day, however many times sign-up is retried: the first request wins.
  return enqueueJob(tx, welcome, { userId }, { throttle: { key: userId, windowMs: 24 * 60 * 60 * 1000 } });
}
