/**
 * A continuation this worker wrote with a delay (continueAfter, a durable function's sleep) is claimed when
 * it falls due, not at the next poll: the worker below polls once a minute and has no LISTEN connection,
 * so only its due wake can start the next slice within the bounds asserted.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJob, getJob, noOrganizationScope } from '../../src/index.js';
import { continueAfter, defineJob } from '../../src/worker/index.js';
import { nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const scope = noOrganizationScope();
const DELAY_MS = 400;

describe('due wakes', () => {
  it('starts the next slice of a delayed continuation when it falls due, not at the next poll', async () => {
    const sliceStarts: number[] = [];
    const slices = defineJob('due.slices', z.object({}), async (_payload, ctx) => {
      sliceStarts.push(Date.now());
      return ctx.runNumber < 3 ? continueAfter(DELAY_MS) : { slices: ctx.runNumber };
    });
    // Enqueued first: the worker's claim at start runs the first slice (no LISTEN); the next two only by
    // their due wakes.
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'due.slices', payload: {} });
    const worker = await startWorker({ handlers: [slices], listen: false, pollIntervalMs: 60_000 });
    const success = await nextEvent(worker, 'job:success', (e) => e.job.jobId === jobId, 30_000);
    expect(success.job.runNumber).toBe(3);
    expect(sliceStarts).toHaveLength(3);
    for (let i = 1; i < sliceStarts.length; i += 1) {
      const gap = sliceStarts[i]! - sliceStarts[i - 1]!;
      // Never before the delay; far sooner than the minute's poll (bounded loosely for a loaded machine).
      expect(gap).toBeGreaterThanOrEqual(DELAY_MS);
      expect(gap).toBeLessThan(20_000);
    }
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'SUCCEEDED', runNumber: 3 });
  });
});
