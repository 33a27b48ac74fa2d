import { enqueueJob } from 'runledger';
import { prisma } from './prisma-client.js';
import type { billingJobs } from './typed-jobs.js';

export async function placeOrder({ captureInvoice }: ReturnType<typeof billingJobs>, order: { id: string; customer: string; total: number }) {
  await prisma.$transaction(async (tx) => {
    await tx.order.create({ data: order });
    await enqueueJob(tx, captureInvoice, { invoiceId: order.id }, { idempotencyKey: `capture:${order.id}` });
  }); // the order and its job commit together, or neither exists
}
