/**
 * A host application's code: an order is written and its fulfilment workflow
 * enqueued in ONE transaction of the host's own Prisma client, so both exist
 * or neither does.
 */
import { z } from 'zod';
import { defineJob, enqueueWorkflowRun, workflow } from 'runledger';
import type { PrismaClient } from '../../test/fixtures/host-app/generated/client.js';

export const reserveStock = defineJob('shop.reserve_stock', z.object({ orderId: z.string() }), async ({ orderId }) => ({ orderId, reserved: true }));
export const chargeCard = defineJob('shop.charge_card', z.object({ orderId: z.string(), total: z.number().int() }), async ({ total }) => ({ charged: total }));
export const shipOrder = defineJob('shop.ship', z.object({ orderId: z.string() }), async ({ orderId }) => ({ trackingNumber: `TRK-${orderId.slice(0, 8)}` }));
export const handlers = [reserveStock, chargeCard, shipOrder];

export async function placeOrder(prisma: PrismaClient, order: { id: string; customer: string; total: number }, options: { failAfterEnqueue?: boolean } = {}) {
  return prisma.$transaction(async (tx) => {
    await tx.order.create({ data: order });
    const run = await enqueueWorkflowRun(
      tx,
      workflow('shop.fulfil', { orderId: order.id })
        .job('reserve', reserveStock, { orderId: order.id })
        .job('charge', chargeCard, { orderId: order.id, total: order.total })
        .job('ship', shipOrder, { orderId: order.id })
        .afterSuccess('ship', ['reserve', 'charge'])
        .resultStep('ship')
        .idempotencyKey(`order:${order.id}`)
        .build(),
    );
    if (options.failAfterEnqueue) throw new Error('payment provider said no before commit');
    return run;
  });
}
