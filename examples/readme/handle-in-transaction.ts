import { enqueueWorkflowRunHandle, workflow, type PrismaClientLike, type PrismaTransactionLike } from 'runledger';

/** Your generated client, as far as this example uses it. */
export interface AppPrisma extends PrismaClientLike {
  $transaction<R>(fn: (tx: AppTx) => Promise<R>): Promise<R>;
}
export interface AppTx extends PrismaTransactionLike {
  order: { create(args: { data: { customer: string } }): Promise<{ id: string }> };
}

const fulfilment = (order: { id: string }) => workflow('shop.fulfil', { orderId: order.id }).job('ship', 'shop.ship', { orderId: order.id }).build();

export async function placeOrder(prisma: AppPrisma, data: { customer: string }) {
  const run = await prisma.$transaction(async (tx) => {
    const order = await tx.order.create({ data });
    return enqueueWorkflowRunHandle(tx, fulfilment(order), { readWith: prisma }); // commits with the order
  });
  await run.getResult({ timeoutMs: 60_000 }); // after the commit; workflow.run_not_found had it rolled back
}
