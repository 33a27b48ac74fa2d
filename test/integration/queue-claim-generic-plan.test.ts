/**
 * The claim sits between an enqueue's NOTIFY and the handler's start, and
 * planning its statement costs about as much as running it. On a client that
 * names prepared statements (runledger's own, or a host's with
 * `preparedStatementName`), PostgreSQL switches a statement to a generic plan
 * after five custom ones when the generic plan is costed no higher: the claim's
 * statement shapes must allow that, also behind a large backlog of other
 * types (the LIMIT a generic plan costs is a literal: see limitBucket). Read
 * from `pg_prepared_statements` on the claiming connection; no timings.
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJobs } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

interface PlanCounts {
  generic_plans: number;
  custom_plans: number;
}

/**
 * The text that tells each claim statement apart: the lean one (src/queue/statements/claim-lean.ts), which a
 * root client sends while no job at the head names a key, and the full one, which a transaction client sends.
 */
const SHAPES = { lean: '%WITH lean_fair_waiting AS%', full: '%WITH fair_groups AS%' } as const;

/** The claim ran as one prepared statement `calls` times on `client`'s connection, and reused its generic plan. */
async function expectGenericPlanAfter(client: ReturnType<typeof db.newClient>, calls: number, shape: keyof typeof SHAPES = 'lean'): Promise<void> {
  const plans = await client.$queryRaw<PlanCounts[]>`
    SELECT generic_plans::int, custom_plans::int FROM pg_prepared_statements WHERE statement LIKE ${SHAPES[shape]} AND statement NOT LIKE '%pg_prepared_statements%'`;
  expect(plans).toHaveLength(1);
  expect(plans[0]!.generic_plans + plans[0]!.custom_plans).toBe(calls);
  expect(plans[0]!.generic_plans).toBeGreaterThan(0);
}

describe('claim statement plans', () => {
  it.each([
    { label: 'one type', jobTypes: ['generic.a'] },
    { label: 'three types', jobTypes: ['generic.a', 'generic.b', 'generic.c'] },
  ])('a typed claim ($label) is planned once per connection, then reuses a generic plan, lean or full', async ({ jobTypes }) => {
    const client = db.newClient({ max: 1 }); // one connection: every claim below uses the same prepared statement
    for (let i = 0; i < 12; i += 1) {
      await enqueueJobs(
        db.prisma,
        [
          { jobType: 'generic.a', payload: i },
          { jobType: 'generic.a', payload: -i },
        ],
        { notify: false },
      );
      const jobs = await claimJobs(client, { workerId: 'w', jobTypes, limit: 1, leaseSeconds: 60, markRunning: true });
      // Inside a transaction the claim is always the full statement.
      const inTransaction = await client.$transaction((tx) => claimJobs(tx, { workerId: 'w', jobTypes, limit: 10, leaseSeconds: 60, markRunning: true }));
      expect([jobs.length, inTransaction.length]).toEqual([1, 1]);
    }
    // Five custom plans to learn the average cost, then the generic one (7 of 12 here; bounded loosely, as
    // an autovacuum ANALYZE in between invalidates the plan and may cost it anew).
    await expectGenericPlanAfter(client, 12, 'lean');
    await expectGenericPlanAfter(client, 12, 'full');
  });

  it.each([
    { label: 'typed', jobTypes: ['generic.one'] as string[] | undefined },
    { label: 'untyped', jobTypes: undefined },
  ])('a $label claim of one job reuses a generic plan, as larger claims do', async ({ jobTypes }) => {
    // A hand loop of claimJobs({ limit: 1 }) claims one job at a time: before, the seat count's LIMIT took the
    // claim limit, the custom plan of a claim of one was costed far below the generic one, and every such claim
    // was planned afresh (a few milliseconds, more than running it).
    await db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, payload, next_run_at)
      SELECT gen_random_uuid(), 'generic.one', '{}', now() - interval '1 minute' FROM generate_series(1, 5000)`;
    // Concurrency keys of a large limit in use elsewhere (another type's, not due): 1,000 seats a key, their
    // rows not all-visible (seats churn), so a seat count costs more the more seats it may read.
    await enqueueJobs(
      db.prisma,
      Array.from({ length: 50 }, (_, i) => ({
        jobType: 'generic.keyed',
        payload: i,
        runAt: new Date(Date.now() + 86_400_000),
        concurrency: { key: `k${i}`, limit: 1000 },
      })),
      { notify: false },
    );
    // Statistics of every table the claim reads, as autovacuum keeps them (the seat tables' included).
    await db.prisma.$executeRawUnsafe('ANALYZE runledger.job_queue, runledger.concurrency_seats, runledger.concurrency_limits');
    try {
      const client = db.newClient({ max: 1 });
      for (let i = 0; i < 12; i += 1) {
        const jobs = await claimJobs(client, { workerId: 'w', ...(jobTypes ? { jobTypes } : {}), limit: 1, leaseSeconds: 60, markRunning: true });
        expect(jobs.map((job) => job.jobType)).toEqual(['generic.one']);
      }
      await expectGenericPlanAfter(client, 12);
    } finally {
      await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE job_type IN ('generic.one', 'generic.keyed')`;
    }
  });

  it('claims of 1 to 10 jobs of one type share three statements (scan buckets 1, 8 and 64), each planned five times at most', async () => {
    const client = db.newClient({ max: 1 });
    for (let limit = 1; limit <= 10; limit += 1) {
      for (let i = 0; i < 3; i += 1) {
        await enqueueJobs(db.prisma, [{ jobType: 'generic.sizes', payload: limit }], { notify: false });
        const jobs = await claimJobs(client, { workerId: 'w', jobTypes: ['generic.sizes'], limit, leaseSeconds: 60, markRunning: true });
        expect(jobs).toHaveLength(1);
      }
    }
    const plans = await client.$queryRaw<PlanCounts[]>`
      SELECT generic_plans::int, custom_plans::int FROM pg_prepared_statements
       WHERE statement LIKE ${SHAPES.lean} AND statement NOT LIKE '%pg_prepared_statements%' ORDER BY custom_plans + generic_plans`;
    // Buckets by powers of two would be five statements (1, 2, 4, 8, 16) and 25 custom plans for these 30 claims.
    expect(plans.map((p) => p.custom_plans + p.generic_plans)).toEqual([3, 6, 21]);
    expect(plans.reduce((sum, p) => sum + p.custom_plans, 0)).toBe(3 + 5 + 5);
  });

  it.each([
    { label: 'typed', jobTypes: ['generic.big'] as string[] | undefined, limit: 7 },
    { label: 'untyped', jobTypes: undefined, limit: 7 },
    // The widest coarse bucket for its limit: a scan of 64 under LIMIT 9.
    { label: 'typed (9 of a bucket of 64)', jobTypes: ['generic.big'] as string[] | undefined, limit: 9 },
  ])('a $label claim keeps its generic plan behind a backlog of 200k jobs', async ({ jobTypes, limit }) => {
    // The claimed type's own backlog (due) and other types' (not yet due, or the untyped claim would take them).
    // Before the literal LIMIT both claims were re-planned every time here (12 custom plans): a generic plan
    // costed its LIMIT parameter as a tenth of the rows it estimated for the scan.
    await db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, payload, next_run_at)
      SELECT gen_random_uuid(), CASE WHEN g % 6 = 0 THEN 'generic.big' ELSE 'generic.other.' || (g % 5) END, '{}',
             CASE WHEN g % 6 = 0 THEN now() - interval '1 minute' ELSE now() + interval '1 day' END
        FROM generate_series(1, 240000) g`;
    await db.prisma.$executeRawUnsafe('ANALYZE runledger.job_queue');
    try {
      const client = db.newClient({ max: 1 });
      for (let i = 0; i < 12; i += 1) {
        const jobs = await claimJobs(client, { workerId: 'w', ...(jobTypes ? { jobTypes } : {}), limit, leaseSeconds: 60 });
        expect(jobs.map((job) => job.jobType)).toEqual(Array(limit).fill('generic.big'));
      }
      await expectGenericPlanAfter(client, 12);
    } finally {
      await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE job_type LIKE 'generic.%'`;
    }
  });
});
