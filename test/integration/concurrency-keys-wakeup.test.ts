/**
 * A worker whose claim came back short because a concurrency key was full must claim the key's next job when
 * one of the key's leases ends, not at its next poll: no NOTIFY announces a freed slot. An execution resource
 * (the N = 1 case) does so (src/worker/worker.ts, `finished`: a resource job's outcome asks for one more claim).
 * A concurrency-keyed job's does too (found by the concurrency_keys bench: before, the key's next job waited
 * for the poll, about (jobs - 1) x pollIntervalMs).
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueueJobs } from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { countdown, within } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

const POLL_MS = 3_000;
const JOBS = 3;

let counter = 0;
/**
 * Runs JOBS jobs that can only run one at a time (`limited` names how), on one worker polling every POLL_MS;
 * returns the time from the first handler's start to the last success (worker start-up left out).
 */
async function drainOneAtATime(limited: (key: string) => { concurrency: { key: string; limit: number } } | { resource: string }): Promise<number> {
  counter += 1;
  const type = `wake.t${counter}`;
  const key = `wake-key-${counter}-${Date.now()}`;
  let firstStart = Number.NaN;
  const handler = defineJob(type, z.object({ n: z.number() }), async () => {
    if (Number.isNaN(firstStart)) firstStart = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
  });
  // Before the worker starts, without NOTIFY: its first claim finds them, and nothing announces them again.
  await enqueueJobs(
    db.prisma,
    Array.from({ length: JOBS }, (_, n) => ({ jobType: type, payload: { n }, ...limited(key) })),
    { notify: false },
  );
  const done = countdown(JOBS);
  const worker = await startWorker({ handlers: [handler], concurrency: 4, pollIntervalMs: POLL_MS, completionBatchMs: 0 });
  worker.on('job:success', done.arrive);
  await within(done.promise, 30_000, `${JOBS} successes`);
  return performance.now() - firstStart;
}

describe('a full key frees its slot: the worker claims its next job at once', () => {
  it('for an execution resource (the N = 1 case)', async () => {
    expect(await drainOneAtATime((key) => ({ resource: key }))).toBeLessThan(POLL_MS);
  });

  it('for a concurrency key', async () => {
    expect(await drainOneAtATime((key) => ({ concurrency: { key, limit: 1 } }))).toBeLessThan(POLL_MS);
  });
});
