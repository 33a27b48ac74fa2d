import { enqueueJob, isRunledgerError, jobHandle, organizationScope, type PrismaClientLike } from 'runledger';
import type { billingJobs } from './typed-jobs.js';

export async function captureAndWait(prisma: PrismaClientLike, { captureInvoice }: ReturnType<typeof billingJobs>, invoiceId: string, organizationId: string) {
  const { jobId } = await enqueueJob(prisma, captureInvoice, { invoiceId }, { organizationId });
  const capture = jobHandle(prisma, captureInvoice, { jobId, scope: organizationScope(organizationId) });
  try {
    const receipt = await capture.getResult({ timeoutMs: 60_000, signal: AbortSignal.timeout(120_000) });
    return receipt.receiptId; // typed by the handler's return: { receiptId: string; capturedAt: string }
  } catch (error) {
    // The job dead-lettered: its last error code and message are in the details.
    if (isRunledgerError(error, 'job.result_dead_lettered')) throw new Error(`capture failed: ${String(error.details.lastErrorCode)}`);
    throw error; // job.result_canceled, job.result_wait_timeout, job.result_wait_aborted, job.not_found
  }
}
