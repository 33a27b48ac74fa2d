import { z } from 'zod';
import { defineJob, enqueueJob } from 'runledger';
import { prisma } from './prisma-client.js';

/** The host's payment provider: deduplicates by the key it is given. */
export interface PaymentApi {
  charge(orderId: string, total: number, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ chargeId: string }>;
}

export function orderJobs(payments: PaymentApi) {
  const sendReceipt = defineJob('orders.send_receipt', z.object({ orderId: z.string() }), async () => 'sent');

  // Every attempt runs in one transaction of `prisma`; ctx.tx is its own transaction client.
  const settleOrder = defineJob(
    'orders.settle',
    z.object({ orderId: z.string() }),
    async (payload, ctx) => {
      const order = await ctx.tx.order.findUniqueOrThrow({ where: { id: payload.orderId } });
      // External effect: at least once, so the provider deduplicates by a key stable across attempts.
      const { chargeId } = await payments.charge(order.id, order.total, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal });
      await ctx.tx.order.update({ where: { id: order.id }, data: { customer: order.customer.trim() } });
      await enqueueJob(ctx.tx, sendReceipt, { orderId: order.id }); // exists only if this attempt commits
      return { chargeId }; // the job's output commits with the writes above, or nothing does
    },
    { transaction: prisma, timeoutSeconds: 30 },
  );
  return { settleOrder, sendReceipt };
}
