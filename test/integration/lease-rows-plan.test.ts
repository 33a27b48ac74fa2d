/**
 * A statement that ends leases deletes each one's lease row by its primary key (expires_at, job_id). Its
 * buffers are counted, not timed: a plan that finds a row by the key's second column alone reads the whole
 * index per lease (a completion of 250 with 2,000 live leases read ~30 blocks per job and took 1.5 s on a
 * churned table).
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJobs } from '../../src/index.js';
import { completeJobsStatement } from '../../src/queue/statements/complete-jobs.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function findNodes(node: PlanNode, match: (n: PlanNode) => boolean, found: PlanNode[] = []): PlanNode[] {
  if (match(node)) found.push(node);
  for (const child of node.Plans ?? []) findNodes(child, match, found);
  return found;
}

describe('lease rows', () => {
  it('are deleted by a completion with a primary-key probe each, whatever the number of live leases', async () => {
    const total = 2_000;
    await enqueueJobs(
      db.prisma,
      Array.from({ length: total }, (_, n) => ({ jobType: 'plan.lease', payload: n })),
      { notify: false },
    );
    const claimed = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['plan.lease'], limit: 1_000, leaseSeconds: 600, markRunning: true });
    const more = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['plan.lease'], limit: 1_000, leaseSeconds: 600, markRunning: true });
    expect(claimed.length + more.length).toBe(total);
    await db.prisma.$executeRawUnsafe('ANALYZE runledger.job_leases');

    const batch = claimed.slice(0, 250).map((job) => ({
      lease: { jobId: job.jobId, runNumber: job.runNumber, attempt: job.attempt, workerId: 'w' },
      output: null,
    }));
    const statement = completeJobsStatement(batch, true);
    const plan = await db.prisma
      .$transaction(async (tx) => {
        const rows = await tx.$queryRawUnsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`,
          ...statement.values,
        );
        throw Object.assign(new Error('rollback'), { plan: rows[0]!['QUERY PLAN'][0].Plan });
      })
      .catch((error: { plan?: PlanNode }) => {
        if (!error.plan) throw error;
        return error.plan;
      });

    const deletes = findNodes(plan, (n) => n['Node Type'] === 'ModifyTable' && n['Relation Name'] === 'job_leases');
    expect(deletes).toHaveLength(1);
    const scans = findNodes(deletes[0]!, (n) => n['Relation Name'] === 'job_leases' && n['Node Type'] !== 'ModifyTable');
    expect(scans.map((n) => n['Node Type'])).toEqual(['Index Scan']);
    // Every lease of the batch found: one row per probe.
    expect((scans[0]!['Actual Rows'] ?? 0) * (scans[0]!['Actual Loops'] ?? 0)).toBe(batch.length);
    const blocks = (scans[0]!['Shared Hit Blocks'] ?? 0) + (scans[0]!['Shared Read Blocks'] ?? 0);
    // A probe of a 3-level index reads about three blocks per lease; the whole index is ~10 blocks.
    expect(blocks / batch.length).toBeLessThan(6);
  });
});
