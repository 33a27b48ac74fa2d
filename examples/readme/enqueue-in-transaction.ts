import { enqueueJob, type PrismaClientLike, type PrismaTransactionLike } from 'runledger';
import type { billingJobs } from './typed-jobs.js';

/** Your generated client, as far as this example uses it. */
export interface AppPrisma extends PrismaClientLike {
  $transaction<R>(fn: (tx: AppTx) => Promise<R>): Promise<R>;
}
export interface AppTx extends PrismaTransactionLike {
  invoice: { create(args: { data: { customerId: string } }): Promise<{ id: string }> };
}

export async function createInvoice(prisma: AppPrisma, { captureInvoice }: ReturnType<typeof billingJobs>, data: { customerId: string }) {
  await prisma.$transaction(async (tx) => {
    const invoice = await tx.invoice.create({ data });
    await enqueueJob(tx, captureInvoice, { invoiceId: invoice.id }, { idempotencyKey: `capture:${invoice.id}` });
  }); // the invoice and its job commit together, or neither exists
}
