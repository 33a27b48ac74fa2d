import { claimJobs, completeJob, continueJob, recordJobProgress, setJobStage, type PrismaClientLike } from 'runledger';

/** One slice of at most 100 pages per lease; a job of any size takes as many slices as it needs. */
export async function crawlSlice(prisma: PrismaClientLike, crawl: (from: number, to: number) => Promise<number>) {
  for (const job of await claimJobs(prisma, { workerId: 'crawler-1', jobTypes: ['site.crawl'], limit: 10, leaseSeconds: 120, markRunning: true })) {
    const from = (job.checkpoint as { page?: number } | null)?.page ?? 0;
    await setJobStage(prisma, { ...job, stage: 'crawling' });
    const pages = (job.payload as { pages: number }).pages;
    const to = Math.min(from + 100, pages);
    await crawl(from, to);
    await recordJobProgress(prisma, { ...job, processed: to, total: pages });
    if (to < pages) await continueJob(prisma, { ...job, save: { checkpoint: { page: to } } });
    else await completeJob(prisma, { ...job, output: { pages } });
  }
}
