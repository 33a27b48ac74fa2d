import { z } from 'zod';
import { createWorker, defineFunction, enqueueWorkflowRunHandle } from 'runledger';
import { prisma } from './prisma-client.js';

/** The host's payment provider: deduplicates by the key it is given. */
export interface PaymentApi {
  charge(orderId: string, total: number, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ chargeId: string }>;
}

export function checkoutFunction(payments: PaymentApi) {
  return defineFunction(
    'orders.checkout',
    z.object({ orderId: z.string() }),
    async (input, ctx) => {
      // Recorded once; a re-execution returns the recorded order without reading it again.
      const order = await ctx.step('load', () => prisma.order.findUniqueOrThrow({ where: { id: input.orderId } }));
      // An external effect: at least once, so the provider deduplicates by the step's stable key.
      const charge = await ctx.step('charge', ({ idempotencyKey, signal }) => payments.charge(order.id, order.total, { idempotencyKey, signal }), {
        retry: { maxAttempts: 3, baseDelayMs: 1_000 },
        timeoutMs: 10_000,
      });
      // The host's write commits with the step's record: exactly once.
      await ctx.transactionalStep('mark-paid', async (tx) => {
        await tx.order.update({ where: { id: order.id }, data: { customer: order.customer.trim() } });
      });
      await ctx.sleep(24 * 3_600_000); // holds no worker slot
      await ctx.step('follow-up', () => ({ sent: true }));
      return { chargeId: charge.chargeId };
    },
    { transaction: prisma, version: 1 },
  );
}

export async function startCheckout(payments: PaymentApi, orderId: string) {
  const checkout = checkoutFunction(payments);
  const worker = createWorker({ db: prisma, handlers: [checkout] });
  await worker.start();
  // A workflow run: inside your transaction too (enqueueWorkflowRunHandle(tx, ..., { readWith: prisma })).
  const run = await enqueueWorkflowRunHandle(prisma, checkout.run({ orderId }, { idempotencyKey: `checkout:${orderId}` }));
  return run; // run.getResult() resolves to { chargeId } once the run succeeded
}
