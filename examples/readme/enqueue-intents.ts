import { adminScope, getEnqueueIntentStats, recordJobEnqueueIntent, type PrismaClientLike, type PrismaTransactionLike } from 'runledger';

/** Your generated client, as far as this example uses it. */
export interface AppPrisma extends PrismaClientLike {
  $transaction<R>(fn: (tx: AppTx) => Promise<R>): Promise<R>;
}
export interface AppTx extends PrismaTransactionLike {
  order: { update(args: { where: { id: string }; data: { status: string } }): Promise<unknown> };
}

export async function markPaid(prisma: AppPrisma, orderId: string) {
  await prisma.$transaction(async (tx) => {
    await tx.order.update({ where: { id: orderId }, data: { status: 'paid' } });
    // Commits (or rolls back) with the order; no job row yet, no catalog read, whether or not a worker knows the type.
    await recordJobEnqueueIntent(tx, { jobType: 'invoice.send', payload: { orderId }, idempotencyKey: `invoice:${orderId}` });
  });
  // For alerts: { pending, oldestPendingAgeMs, maxPendingAttempts, failing, conflicts }
  return getEnqueueIntentStats(prisma, { scope: adminScope() });
}
