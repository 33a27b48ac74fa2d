import { runUntilIdle } from 'runledger/testing';
import type { AnyJobDefinition, PrismaClientLike } from 'runledger';

export async function runThroughRetries(prisma: PrismaClientLike, handlers: readonly AnyJobDefinition[]) {
  // Retries waiting out their backoff run now, in the order they fall due: no sleeping through a backoff.
  const result = await runUntilIdle(prisma, handlers, { includeDelayed: true });
  // Or only what falls due within the next hour of test time (a job delayed by a day stays PENDING).
  await runUntilIdle(prisma, handlers, { includeDelayed: { withinMs: 3_600_000 } });
  return result.jobs.map((job) => `${job.jobType} attempt ${job.attempt}: ${job.outcome}`);
}
