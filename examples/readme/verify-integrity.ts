import { verifyIntegrity, type PrismaClientLike } from 'runledger';

export async function checkIntegrity(prisma: PrismaClientLike) {
  const report = await verifyIntegrity(prisma, { pageSize: 1000 });
  for (const v of report.violations) console.error(v.kind, v.workflowRunId ?? v.jobId, v.expected, v.found);
  return report.violations.length === 0;
}
