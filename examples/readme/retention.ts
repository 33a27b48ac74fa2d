import { purgeFinished, type PrismaClientLike } from 'runledger';

export async function purgeMonthOld(prisma: PrismaClientLike) {
  const result = await purgeFinished(prisma, {
    olderThan: new Date(Date.now() - 30 * 24 * 3600 * 1000),
    statuses: ['SUCCEEDED', 'CANCELED'], // direct jobs; default all three terminal statuses
    batchSize: 500, // jobs or runs per transaction
    // dryRun: true counts and deletes nothing
  });
  return result; // { jobs, workflowRuns, workflowJobs, batches, dryRun }
}
