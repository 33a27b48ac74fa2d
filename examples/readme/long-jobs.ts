import { z } from 'zod';
import { continueNow, defineJob, enqueueJob, listJobAttempts, noOrganizationScope, workflow, type PrismaClientLike } from 'runledger';

const PAGE = 500;

export const reindex = defineJob('search.reindex', z.object({ pages: z.number().int() }), async (payload, ctx) => {
  const from = (ctx.checkpoint as { page: number } | null)?.page ?? 0;
  await ctx.setStage('indexing');
  let page = from;
  // Work until the attempt's deadline comes near, then hand the rest to the next slice of the same job.
  while (page < payload.pages && ctx.remainingMs() > 10_000) {
    await indexPage(page, PAGE);
    page += 1;
    await ctx.progress(page, payload.pages);
  }
  if (page < payload.pages) return continueNow({ checkpoint: { page } });
  return { pages: page };
});

async function indexPage(page: number, size: number): Promise<void> {
  void page;
  void size;
}

export async function reindexAll(prisma: PrismaClientLike) {
  const { jobId } = await enqueueJob(prisma, reindex, { pages: 40_000 }, { stage: 'queued' });
  // Every lease of the job: who ran it, how it ended, when it ran again and why.
  const { items } = await listJobAttempts(prisma, { scope: noOrganizationScope(), jobId });
  // A workflow step must opt in: its dependents wait until a slice ends the job.
  const run = workflow('search.rebuild').job('reindex', reindex, { pages: 40_000 }, { allowContinuation: true, stage: 'queued' }).build();
  return { items, run };
}
