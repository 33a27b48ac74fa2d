/**
 * Step rows leave room on their pages (fillfactor 70, migration
 * 20261220000000) so that the claim's RUNNING and the outcome's terminal
 * update are HOT: no index entry written. Counted by PostgreSQL for the
 * transaction itself (pg_stat_get_xact_tuples_hot_updated), over enough
 * steps to fill many pages: at the default fillfactor most of them would
 * move to another page instead.
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, completeJobs, enqueueWorkflowRuns, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const RUNS = 400;

describe('workflow_steps storage', () => {
  it('writes no step row when its job is claimed, and updates it in place (HOT) when it ends', async () => {
    const runs = Array.from({ length: RUNS }, (_, i) =>
      workflow('hot.chain', { i })
        .job('a', 'hot.a', { i, pad: 'x'.repeat(200) })
        .job('b', 'hot.b', { i })
        .afterSuccess('b', ['a'])
        .build(),
    );
    for (let start = 0; start < RUNS; start += 100) await enqueueWorkflowRuns(db.prisma, runs.slice(start, start + 100));
    const [size] = await db.prisma.$queryRaw<{ pages: number }[]>`
      SELECT (pg_relation_size('runledger.workflow_steps') / current_setting('block_size')::int)::int AS pages`;
    expect(size!.pages).toBeGreaterThan(10);

    const counts = await db.prisma.$transaction(async (tx) => {
      const claimed = await claimJobs(tx, { workerId: 'hot', jobTypes: ['hot.a'], limit: RUNS, leaseSeconds: 60, markRunning: true });
      const [afterClaim] = await tx.$queryRaw<{ hot: number; all: number }[]>`
        SELECT pg_stat_get_xact_tuples_hot_updated('runledger.workflow_steps'::regclass)::int AS hot,
               pg_stat_get_xact_tuples_updated('runledger.workflow_steps'::regclass)::int AS all`;
      await completeJobs(tx, claimed);
      const [afterOutcome] = await tx.$queryRaw<{ hot: number; all: number }[]>`
        SELECT pg_stat_get_xact_tuples_hot_updated('runledger.workflow_steps'::regclass)::int AS hot,
               pg_stat_get_xact_tuples_updated('runledger.workflow_steps'::regclass)::int AS all`;
      return { claimed: claimed.length, afterClaim: afterClaim!, afterOutcome: afterOutcome! };
    });
    expect(counts.claimed).toBe(RUNS);
    // A claim writes no step row (the step reads as RUNNING from its job: src/coordination/step-state.ts). Rows padded
    // to ~400 bytes: at fillfactor 100 none of the outcome's updates is HOT; at 70, 200 of the 800 here (the
    // steps' own, as room allows; a release sets job_id, indexed, so the dependent's never is).
    expect(counts.afterClaim).toEqual({ hot: 0, all: 0 });
    expect(counts.afterOutcome.all).toBe(2 * RUNS);
    expect(counts.afterOutcome.hot).toBeGreaterThan(RUNS / 4);
  });
});
