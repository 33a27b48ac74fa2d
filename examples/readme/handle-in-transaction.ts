import { enqueueWorkflowRunHandle, workflow } from 'runledger';
import { prisma } from './prisma-client.js';

const fulfilment = (order: { id: string }) => workflow('shop.fulfil', { orderId: order.id }).job('ship', 'shop.ship', { orderId: order.id }).build();

export async function placeOrder(data: { id: string; customer: string; total: number }) {
  const run = await prisma.$transaction(async (tx) => {
    const order = await tx.order.create({ data });
    return enqueueWorkflowRunHandle(tx, fulfilment(order), { readWith: prisma }); // commits with the order
  });
  await run.getResult({ timeoutMs: 60_000 }); // after the commit; workflow.run_not_found had it rolled back
}
