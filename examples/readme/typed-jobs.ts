import { z } from 'zod';
import { createWorker, defineJob, enqueueJob, RetryableError, TerminalError, type PrismaClientLike } from 'runledger';

/** The host's payment client (whatever it uses). */
export interface Payments {
  capture(invoiceId: string, options: { signal: AbortSignal }): Promise<{ id: string; declined: boolean; retryAt?: Date; capturedAt: Date }>;
}

export function billingJobs(payments: Payments) {
  const captureInvoice = defineJob(
    'billing.capture',
    z.object({ invoiceId: z.string() }), // any Standard Schema: zod 3 or 4, valibot, arktype
    async (payload, ctx) => {
      const receipt = await payments.capture(payload.invoiceId, { signal: ctx.signal }); // aborted on timeout / shutdown
      if (receipt.declined) throw new TerminalError('card declined', { code: 'billing.declined' }); // dead-letters
      if (receipt.retryAt) throw new RetryableError('provider busy', { retryNotBefore: receipt.retryAt }); // retried with backoff
      return { receiptId: receipt.id, capturedAt: receipt.capturedAt }; // stored as JSON: capturedAt as an ISO string
    },
    { retry: { maxAttempts: 8, backoff: { baseDelayMs: 5_000, maxDelayMs: 600_000 } }, timeoutSeconds: 60 },
  );
  return { captureInvoice };
}

export async function runBilling(prisma: PrismaClientLike, payments: Payments) {
  const { captureInvoice } = billingJobs(payments);
  // listenConnectionString: woken by NOTIFY when a job commits; without it a `db` worker only polls (pollIntervalMs, 1 s).
  const worker = createWorker({ db: prisma, listenConnectionString: process.env.DATABASE_URL, handlers: [captureInvoice], concurrency: 10 });
  await worker.start();

  // The compiler checks the payload against the schema: { invoiceId: 42 } does not compile.
  await enqueueJob(prisma, captureInvoice, { invoiceId: 'inv_1' }, { idempotencyKey: 'capture:inv_1' });
  // Without importing the handler: by name, the payload is `unknown` to the compiler (checked when claimed).
  await enqueueJob(prisma, { jobType: 'billing.capture', payload: { invoiceId: 'inv_2' } });
  return worker;
}
