import { claimJobs, completeJob, heartbeatJob, type PrismaClientLike } from 'runledger';

export async function runOnce(prisma: PrismaClientLike) {
  for (const job of await claimJobs(prisma, { workerId: 'w1', limit: 10, leaseSeconds: 60, markRunning: true })) {
    await heartbeatJob(prisma, { ...job, save: { progress: { done: 1, of: 2 } } });
    await completeJob(prisma, { ...job, output: { receiptId: 'r_1' } });
    // or: failJob(prisma, { ...job, error: { code: 'smtp.down', message: 'SMTP unavailable' }, retryable: true })
    // or: releaseJob(prisma, { ...job, reason: 'job.worker_shutdown' })
  }
}
