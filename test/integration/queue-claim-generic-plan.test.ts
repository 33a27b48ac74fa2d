/**
 * The claim sits between an enqueue's NOTIFY and the handler's start, and
 * planning its statement costs about as much as running it. On a client that
 * names prepared statements (runledger's own, or a host's with
 * `preparedStatementName`), PostgreSQL switches a statement to a generic plan
 * after five custom ones when the generic plan is costed no higher: the claim's
 * statement shapes must allow that. Read from `pg_prepared_statements` on the
 * claiming connection; no timings.
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJobs } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

interface PlanCounts {
  generic_plans: number;
  custom_plans: number;
}

describe('claim statement plans', () => {
  it.each([
    { label: 'one type', jobTypes: ['generic.a'] },
    { label: 'three types', jobTypes: ['generic.a', 'generic.b', 'generic.c'] },
  ])('a typed claim ($label) is planned once per connection, then reuses a generic plan', async ({ jobTypes }) => {
    const client = db.newClient({ max: 1 }); // one connection: every claim below uses the same prepared statement
    for (let i = 0; i < 12; i += 1) {
      await enqueueJobs(db.prisma, [{ jobType: 'generic.a', payload: i }], { notify: false });
      const jobs = await claimJobs(client, { workerId: 'w', jobTypes, limit: 10, leaseSeconds: 60, markRunning: true });
      expect(jobs).toHaveLength(1);
    }
    const plans = await client.$queryRaw<PlanCounts[]>`
      SELECT generic_plans::int, custom_plans::int FROM pg_prepared_statements WHERE statement LIKE '%WITH candidates AS%' AND statement NOT LIKE '%pg_prepared_statements%'`;
    expect(plans).toHaveLength(1);
    // Five custom plans to learn the average cost, then the generic one (7 of 12 here; bounded loosely, as
    // an autovacuum ANALYZE in between invalidates the plan and may cost it anew).
    expect(plans[0]!.generic_plans + plans[0]!.custom_plans).toBe(12);
    expect(plans[0]!.generic_plans).toBeGreaterThan(0);
  });
});
