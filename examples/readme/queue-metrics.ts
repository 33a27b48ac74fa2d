import { adminScope, getQueueMetrics, organizationScope, type PrismaClientLike } from 'runledger';

export async function queueHealth(prisma: PrismaClientLike, orgId: string) {
  const all = await getQueueMetrics(prisma, { scope: adminScope() }); // or noOrganizationScope()
  const mine = await getQueueMetrics(prisma, { scope: organizationScope(orgId) }); // only this organization's rows
  // all.jobs: { pending, runnable, leased, debounceWaiting, finishedRecently: { succeeded, deadLettered, canceled } }
  // all.byType: [{ jobType, kind: 'direct' | 'workflow', pending, runnable, leased, debounceWaiting, finishedRecently }]
  // all.waitTimeMs / all.runTimeMs: { samples, p50, p95 } over jobs finished in the last hour
  const behind = all.oldestRunnableAgeMs !== null && all.oldestRunnableAgeMs > 60_000;
  return { behind, deadLettered: all.deadLetteredLast24h, runs: all.workflowRuns, mine: mine.jobs };
}
