/**
 * The reconstruction the chaos run and the concurrency_keys bench check concurrency keys with
 * (test/harness/concurrency-ledger.ts), on a real ledger: every way a lease ends is placed on job_events'
 * sequence, back-to-back leases do not read as overlapping, a canceled lease holds to its run-out bound, and
 * the check does fail when more leases than the limit held a key.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cancelJob,
  claimJobs,
  completeJobs,
  enqueueJobs,
  failJob,
  noOrganizationScope,
  reapExpiredLeases,
  releaseJob,
  setConcurrencyLimit,
  type ClaimedJob,
} from '../../src/index.js';
import { ledgerLeaseIntervals, maxOverlapByKey } from '../harness/concurrency-ledger.js';
import { useTestDatabase } from '../harness/database.js';
import { expireLeases } from '../harness/leases.js';

const db = useTestDatabase();
let pool: pg.Pool;
const SAMPLES = 'ledger_probe.seq_clock';

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ledger_probe;
    CREATE TABLE IF NOT EXISTS ${SAMPLES} (at timestamptz NOT NULL, seq bigint NOT NULL)`);
});
afterAll(async () => {
  await pool.end();
});

let counter = 0;
const fresh = (): { type: string; key: string } => {
  counter += 1;
  return { type: `ledger.t${counter}`, key: `ledger-key-${counter}-${Date.now()}` };
};

async function claim(jobType: string, limit = 10): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds: 60, markRunning: true });
}

/** The sequence read with the clock, as the chaos controller samples it. */
async function sample(): Promise<void> {
  await pool.query(`INSERT INTO ${SAMPLES} (at, seq) SELECT clock_timestamp(), last_value FROM runledger.job_events_seq_seq`);
}

async function overlapOf(key: string, runOutSamples?: string): Promise<{ max: number; attempts: number; missing: number; open: number }> {
  const { intervals, missing } = await ledgerLeaseIntervals(pool, runOutSamples ? { runOutSamples } : {});
  const mine = intervals.filter((i) => i.key === key);
  return {
    max: maxOverlapByKey(mine).get(key)?.max ?? 0,
    attempts: mine.length,
    missing: missing.filter((m) => m.key === key).length,
    open: mine.filter((i) => i.end === null).length,
  };
}

describe('concurrency keys reconstructed from the ledger', () => {
  it('places every way a lease ends, and back-to-back leases of a limit-1 key never overlap', async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 6 }, (_, n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 1 } })),
    );
    const take = async () => {
      const claimed = await claim(type);
      expect(claimed).toHaveLength(1);
      return claimed[0]!;
    };
    await completeJobs(db.prisma, [{ ...(await take()) }]);
    await failJob(db.prisma, {
      ...(await take()),
      error: { code: 'x.fail', message: 'boom' },
      retryable: true,
      retryNotBefore: new Date(Date.now() + 3_600_000),
    });
    await releaseJob(db.prisma, { ...(await take()) });
    const reaped = await take();
    await expireLeases(db.prisma, reaped.jobId);
    await reapExpiredLeases(db.prisma, { limit: 100 });
    const canceled = await take();
    await cancelJob(db.prisma, { jobId: canceled.jobId, scope: noOrganizationScope() });
    await expireLeases(db.prisma, canceled.jobId);
    await reapExpiredLeases(db.prisma, { limit: 100 });
    const open = await take();
    // Succeeded, retried, released, reaped, canceled, and one still open: six attempts, none over the limit.
    expect(await overlapOf(key)).toEqual({ max: 1, attempts: 6, missing: 0, open: 1 });
    await completeJobs(db.prisma, [{ ...open }]);
    expect(await overlapOf(key)).toMatchObject({ max: 1, open: 0 });
  });

  it('holds a canceled lease to its run-out bound, and sees the overlap if its slot was freed before', async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      [1, 2].map((n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 1 } })),
    );
    const [first] = await claim(type);
    await cancelJob(db.prisma, { jobId: first!.jobId, scope: noOrganizationScope() });
    // The canceled lease keeps the slot: nothing is claimed while it lives.
    expect(await claim(type)).toEqual([]);
    await sample(); // read before its lease ran out (its 60 s are far ahead): the interval reaches at least here
    await expireLeases(db.prisma, first!.jobId);
    await reapExpiredLeases(db.prisma, { limit: 100 });
    expect(await claim(type)).toHaveLength(1);
    expect(await overlapOf(key, SAMPLES)).toMatchObject({ max: 1, attempts: 2, missing: 0 });
    // A sample after the second claim, still before the first lease's granted expiry: as if the reaper had freed the
    // slot before the lease ran out. The reconstruction now holds the canceled lease past the second claim.
    await sample();
    expect(await overlapOf(key, SAMPLES)).toMatchObject({ max: 2 });
    // Without the run-out bound the canceled lease ends at its CANCELED event.
    expect(await overlapOf(key)).toMatchObject({ max: 1 });
  });

  it('reports more leases than the limit when more held the key (a limit lowered under live leases)', async () => {
    const { type, key } = fresh();
    await enqueueJobs(
      db.prisma,
      [1, 2, 3, 4].map((n) => ({ jobType: type, payload: { n }, concurrency: { key, limit: 3 } })),
    );
    const held = await claim(type);
    expect(held).toHaveLength(3);
    // No lease is taken back when the limit drops: three hold a key whose limit is now 1.
    await setConcurrencyLimit(db.prisma, { key, limit: 1 });
    await completeJobs(
      db.prisma,
      held.map((j) => ({ ...j })),
    );
    const { rows } = await pool.query<{ max_leased: number }>('SELECT max_leased FROM runledger.concurrency_limits WHERE key = $1', [key]);
    const overlap = await overlapOf(key);
    expect(overlap.max).toBe(3);
    expect(overlap.max).toBeGreaterThan(rows[0]!.max_leased);
  });
});
