/**
 * The lean claim (src/queue/statements/claim-lean.ts): a root client's claim is one small statement while no
 * job at the queue's head names a fairness, concurrency or rate key; otherwise it leases only the prefix the
 * full claim would lease first and the full statement takes the rest in the same call. Statements are counted
 * at the driver (one connection), so "lean alone" and "lean, then full" are told apart; the order and what is
 * leased must be the full claim's either way.
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJobs, type ClaimedJob } from '../../src/index.js';
import { countingClient, countingPoolDb } from '../harness/counting-client.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const payloads = (jobs: readonly ClaimedJob[]) => jobs.map((job) => job.payload);

async function pendingPayloads(jobType: string): Promise<unknown[]> {
  const rows = await db.prisma.$queryRaw<{ payload: unknown }[]>`
    SELECT payload FROM runledger.job_queue WHERE job_type = ${jobType} AND status = 'PENDING' ORDER BY priority DESC, id`;
  return rows.map((row) => row.payload);
}

/** A counting client that has made its session settings and read its isolation level (statements of their own, once). */
async function warmClient(): Promise<ReturnType<typeof countingPoolDb>> {
  const counting = countingPoolDb(db);
  expect(await claimJobs(counting.client, { workerId: 'w', jobTypes: ['lean.none'], limit: 1, leaseSeconds: 60 })).toEqual([]);
  return counting;
}

describe('lean claim', () => {
  it('claims a queue without keys in one statement, in claim order', async () => {
    const type = 'lean.plain';
    await enqueueJobs(
      db.prisma,
      [1, 5, 3, 9, 7].map((priority) => ({ jobType: type, payload: priority, priority })),
      { notify: false },
    );
    const { client, count } = await warmClient();
    const before = count();
    const jobs = await claimJobs(client, { workerId: 'w', jobTypes: [type], limit: 3, leaseSeconds: 60 });
    expect(count() - before).toBe(1);
    expect(payloads(jobs)).toEqual([9, 7, 5]);
    expect(await pendingPayloads(type)).toEqual([3, 1]);
  });

  it('leases the jobs before the first concurrency-keyed one, and the full claim admits the rest in order, in the same call', async () => {
    const type = 'lean.keyed';
    const concurrency = { key: 'lean-key', limit: 1 };
    await enqueueJobs(
      db.prisma,
      [
        { jobType: type, payload: 'u9', priority: 9 },
        { jobType: type, payload: 'k8', priority: 8, concurrency },
        { jobType: type, payload: 'k7', priority: 7, concurrency },
        { jobType: type, payload: 'u6', priority: 6 },
        { jobType: type, payload: 'u5', priority: 5 },
      ],
      { notify: false },
    );
    const { client, count } = await warmClient();
    let before = count();
    const jobs = await claimJobs(client, { workerId: 'w', jobTypes: [type], limit: 4, leaseSeconds: 60 });
    expect(count() - before).toBe(2);
    // k7 waits for its key's one seat, which k8 holds: the full claim passes over it.
    expect(payloads(jobs)).toEqual(['u9', 'k8', 'u6', 'u5']);
    expect(jobs.find((job) => job.payload === 'k8')?.concurrencyKey).toBe('lean-key');
    expect(await pendingPayloads(type)).toEqual(['k7']);

    // The next claims of the same types from this client go straight to the full statement for a while.
    await enqueueJobs(db.prisma, [{ jobType: type, payload: 'u4', priority: 4 }], { notify: false });
    before = count();
    expect(payloads(await claimJobs(client, { workerId: 'w', jobTypes: [type], limit: 4, leaseSeconds: 60 }))).toEqual(['u4']);
    expect(count() - before).toBe(1);
  });

  it('stops before a rate-keyed job as well', async () => {
    const type = 'lean.rated';
    const rateLimit = { key: 'lean-rate', limit: 1, periodMs: 3_600_000 };
    await enqueueJobs(
      db.prisma,
      [
        { jobType: type, payload: 'u3', priority: 3 },
        { jobType: type, payload: 'r2', priority: 2, rateLimit },
        { jobType: type, payload: 'r1', priority: 1, rateLimit },
        { jobType: type, payload: 'u0', priority: 0 },
      ],
      { notify: false },
    );
    const { client, count } = await warmClient();
    const before = count();
    const jobs = await claimJobs(client, { workerId: 'w', jobTypes: [type], limit: 4, leaseSeconds: 60 });
    expect(count() - before).toBe(2);
    // One token in the bucket: r2 starts, r1 waits for the refill.
    expect(payloads(jobs)).toEqual(['u3', 'r2', 'u0']);
    expect(await pendingPayloads(type)).toEqual(['r1']);
  });

  it('leases nothing while a job of its types names a fairness key: the full claim gives the turns', async () => {
    const type = 'lean.fair';
    await enqueueJobs(
      db.prisma,
      [
        { jobType: type, payload: 'u1' },
        { jobType: type, payload: 'u2' },
        { jobType: type, payload: 'f1', fairness: { key: 'tenant-a' } },
      ],
      { notify: false },
    );
    const { client, count } = await warmClient();
    const before = count();
    const jobs = await claimJobs(client, { workerId: 'w', jobTypes: [type], limit: 2, leaseSeconds: 60 });
    expect(count() - before).toBe(2);
    // The unkeyed jobs take one turn as one more key: one of them, and the key's job.
    expect(payloads(jobs).sort()).toEqual(['f1', 'u1']);
    // An untyped claim checks every type's fairness index (the other tests' jobs out of its way).
    await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE status = 'PENDING' AND job_type <> ${type}`;
    await enqueueJobs(db.prisma, [{ jobType: `${type}.other`, payload: 'f2', fairness: { key: 'tenant-b' } }], { notify: false });
    const other = await warmClient();
    const otherBefore = other.count();
    const untyped = await claimJobs(other.client, { workerId: 'w', limit: 2, leaseSeconds: 60 });
    expect(other.count() - otherBefore).toBe(2);
    expect(payloads(untyped).sort()).toEqual(['f2', 'u2']);
  });

  it('tests execution resources itself: one lease per resource key, in one statement', async () => {
    const type = 'lean.resource';
    await enqueueJobs(
      db.prisma,
      [
        { jobType: type, payload: 'a1', priority: 3, resource: 'lean-res' },
        { jobType: type, payload: 'a2', priority: 2, resource: 'lean-res' },
        { jobType: type, payload: 'u1', priority: 1 },
      ],
      { notify: false },
    );
    const { client, count } = await warmClient();
    const before = count();
    const jobs = await claimJobs(client, { workerId: 'w', jobTypes: [type], limit: 3, leaseSeconds: 60 });
    expect(count() - before).toBe(1);
    expect(payloads(jobs)).toEqual(['a1', 'u1']);
    expect(await pendingPayloads(type)).toEqual(['a2']);
  });

  it('is never sent inside a transaction: there the claim is the full statement alone', async () => {
    const type = 'lean.tx';
    await enqueueJobs(db.prisma, [{ jobType: type, payload: 1 }], { notify: false });
    const counting = countingClient(db);
    try {
      const jobs = await counting.client.$transaction((tx) => claimJobs(tx, { workerId: 'w', jobTypes: [type], limit: 5, leaseSeconds: 60 }));
      expect(payloads(jobs)).toEqual([1]);
      const shapes = await counting.client.$queryRaw<{ lean: boolean }[]>`
        SELECT statement LIKE '%lean_fair_waiting%' AS lean FROM pg_prepared_statements
         WHERE statement LIKE '%claimed AS (%' AND statement NOT LIKE '%pg_prepared_statements%'`;
      expect(shapes).toEqual([{ lean: false }]);
    } finally {
      await counting.close();
    }
  });
});
