import { adminScope, getEnqueueIntentStats, recordJobEnqueueIntent } from 'runledger';
import { prisma } from './prisma-client.js';

export async function repriceOrder(orderId: string, total: number) {
  await prisma.$transaction(async (tx) => {
    await tx.order.update({ where: { id: orderId }, data: { total } });
    // Commits (or rolls back) with the order; no job row yet, no catalog read, whether or not a worker knows the type.
    await recordJobEnqueueIntent(tx, { jobType: 'invoice.send', payload: { orderId, total }, idempotencyKey: `invoice:${orderId}:${total}` });
  });
  // For alerts: { pending, oldestPendingAgeMs, maxPendingAttempts, failing, conflicts }
  return getEnqueueIntentStats(prisma, { scope: adminScope() });
}
