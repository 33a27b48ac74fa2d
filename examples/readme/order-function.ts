import { z } from 'zod';
import { defineFunction, enqueueWorkflowRunHandle } from 'runledger';
import { prisma } from './prisma-client.js';
import type { OrderApis } from './order-dag.js';

/** Where the host records a person's approval (its own table or service). */
export interface Approvals {
  isApproved(orderId: string): Promise<boolean>;
}

// The same flow as a durable function: ordinary code, each step recorded once and replayed after that.
export function orderFunction(apis: OrderApis, approvals: Approvals) {
  const fulfil = defineFunction(
    'orders.fulfil_fn',
    z.object({ orderId: z.string() }),
    async ({ orderId }, ctx) => {
      const { total } = await ctx.step('load', () => prisma.order.findUniqueOrThrow({ where: { id: orderId } }));
      const { chargeId } = await ctx.step('charge', ({ idempotencyKey, signal }) => apis.charge(orderId, total, { idempotencyKey, signal }), {
        retry: { maxAttempts: 3 },
      });
      // The host's write commits with the step's record: exactly once.
      await ctx.transactionalStep('reserve', async (tx) => {
        await tx.$executeRaw`INSERT INTO stock_reservations (order_id) VALUES (${orderId}::uuid)`;
      });
      // No signals yet: check hourly; each sleep ends the attempt and holds no worker slot.
      while (!(await ctx.step('approved?', () => approvals.isApproved(orderId)))) await ctx.sleep(3_600_000);
      const { trackingId } = await ctx.step('ship', ({ idempotencyKey, signal }) => apis.ship(orderId, { idempotencyKey, signal }));
      return { chargeId, trackingId };
    },
    { transaction: prisma, version: 1 },
  );
  const start = (orderId: string) => enqueueWorkflowRunHandle(prisma, fulfil.run({ orderId }, { idempotencyKey: `fulfil:${orderId}` }));
  return { handlers: [fulfil], start };
}
