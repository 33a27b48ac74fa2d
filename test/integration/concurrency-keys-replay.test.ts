/**
 * A replay repeats the same work against the same resource (src/replay/replay.ts keeps the source's
 * resource_key): it should hold the source's concurrency key too, or a replayed job runs beside its key's
 * limit.
 * (Found by the chaos run's handler-side check: a replay without the key ran beside its limit.)
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, compareAndReplaySucceededJob, completeJobs, enqueueJob, noOrganizationScope } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

describe('a replay of a keyed job', () => {
  it('keeps the source job’s concurrency key, so it waits for the key’s slot', async () => {
    const type = 'replay.keyed';
    const key = `replay-key-${Date.now()}`;
    const source = await enqueueJob(db.prisma, { jobType: type, payload: { n: 1 }, concurrency: { key, limit: 1 } });
    const [claimed] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [type], limit: 1, leaseSeconds: 60, markRunning: true });
    await completeJobs(db.prisma, [{ ...claimed! }]);
    const result = await compareAndReplaySucceededJob(db.prisma, {
      scope: noOrganizationScope(),
      sourceJobId: source.jobId,
      expectedRunNumber: 1,
      replayRequestKey: `${key}-replay`,
      reason: 'replay test',
    });
    expect(result.kind).toBe('replayed');
    // Another job of the key, enqueued after the replay: with the limit at 1, one claim of ten takes one of them.
    await enqueueJob(db.prisma, { jobType: type, payload: { n: 2 }, concurrency: { key, limit: 1 } });
    const [row] = await db.prisma.$queryRaw<{ concurrency_key: string | null }[]>`
      SELECT jq.concurrency_key FROM runledger.job_queue jq
        JOIN runledger.job_replays r ON r.replay_job_id = jq.id
       WHERE r.source_job_id = ${source.jobId}::uuid`;
    const both = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [type], limit: 10, leaseSeconds: 60, markRunning: true });
    expect({ replayKey: row?.concurrency_key ?? null, claimedAtOnce: both.length }).toEqual({ replayKey: key, claimedAtOnce: 1 });
  });
});
