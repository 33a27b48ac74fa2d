/**
 * The start times the chaos run and the rate_limit bench check rate limits with (test/harness/rate-ledger.ts),
 * on a real ledger: every attempt of a rate-keyed job is one start (a success, a retried failure and its retry,
 * a released attempt and its re-claim, one still leased), none counted twice, in sequence order, each with a
 * bucket time no earlier than its recorded start.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimJobs, completeJobs, enqueueJobs, failJob, releaseJob, type ClaimedJob } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { ledgerRateStarts, maxInWindow } from '../harness/rate-ledger.js';

const db = useTestDatabase();
let pool: pg.Pool;

beforeAll(() => {
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
});
afterAll(async () => {
  await pool.end();
});

async function claim(jobType: string, limit: number): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds: 60, markRunning: true });
}

/** Claims until one job comes back (a retry due in a millisecond), polling the condition. */
async function claimOne(jobType: string): Promise<ClaimedJob> {
  for (let i = 0; i < 500; i += 1) {
    const [job] = await claim(jobType, 1);
    if (job) return job;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no job became claimable');
}

describe('rate-keyed starts read from the ledger', () => {
  it('counts every attempt once, archived or on the job row, in sequence order', async () => {
    const type = `rate-ledger.t${Date.now()}`;
    const key = `rate-ledger-${Date.now()}`;
    // Tokens enough for every start here: the ledger is read, the limit is not what is tested.
    const rateLimit = { key, limit: 100, periodMs: 60_000, burst: 20 };
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 4 }, (_, n) => ({ jobType: type, payload: { n }, rateLimit, backoff: { baseDelayMs: 1, maxDelayMs: 1 } })),
    );
    const [succeeds, fails, released, open] = await claim(type, 4);
    expect(open).toBeDefined();
    await completeJobs(db.prisma, [{ ...succeeds! }]);
    await failJob(db.prisma, { ...fails!, error: { code: 'x.fail', message: 'boom' }, retryable: true });
    await releaseJob(db.prisma, { ...released! });
    // The retry and the released job start again: two more starts.
    const again = [await claimOne(type), await claimOne(type)];
    expect(new Set(again.map((j) => j.jobId))).toEqual(new Set([fails!.jobId, released!.jobId]));
    await completeJobs(
      db.prisma,
      again.map((j) => ({ ...j })),
    );

    const starts = (await ledgerRateStarts(pool, [key])).get(key) ?? [];
    expect(starts).toHaveLength(6);
    expect(new Set(starts.map((s) => s.id)).size).toBe(6);
    const attempts = (jobId: string) => starts.filter((s) => s.id.startsWith(jobId)).map((s) => /#(\d+\.\d+)@/.exec(s.id)![1]);
    expect(attempts(fails!.jobId)).toEqual(['1.1', '1.2']);
    // A released attempt's number is given back: its re-claim is attempt 1 again, a second start.
    expect(attempts(released!.jobId)).toEqual(['1.1', '1.1']);
    for (let i = 1; i < starts.length; i += 1) {
      expect(starts[i]!.seq).toBeGreaterThan(starts[i - 1]!.seq);
      expect(starts[i]!.bucketAt).toBeGreaterThanOrEqual(starts[i - 1]!.bucketAt);
    }
    for (const start of starts) expect(start.bucketAt).toBeGreaterThanOrEqual(start.at);
    // Only the key asked for; and the window count sees all six inside one period.
    expect([...(await ledgerRateStarts(pool, [key])).keys()]).toEqual([key]);
    expect(
      maxInWindow(
        starts.map((s) => s.at),
        rateLimit.periodMs,
      ).max,
    ).toBe(6);
  });
});
