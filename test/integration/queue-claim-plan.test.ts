/**
 * A typed claim reads its own type's index, whatever other types' backlog
 * sits ahead of it in priority order and however much history the table
 * holds: its cost does not grow with either. Checked with the transaction's
 * own index statistics (pg_stat_get_xact_numscans / _tuples_returned), not with timings.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { claimJobs } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

beforeAll(async () => {
  // History, then a high-priority backlog of other types, then a few jobs of the wanted type.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload, status, finished_at, output)
    SELECT gen_random_uuid(), 'plan.target', '{}', 'SUCCEEDED', now(), '{}' FROM generate_series(1, 20000)`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload, priority)
    SELECT gen_random_uuid(), 'plan.other' || (g % 3), '{}', 5 FROM generate_series(1, 20000) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload) SELECT gen_random_uuid(), 'plan.target', '{}' FROM generate_series(1, 50)`;
  await db.prisma.$executeRaw`ANALYZE runledger.job_queue`;
});

/** The leases the loops below hand back by hand end their attempts too, as every engine transition does. */
async function closeOpenAttempts(): Promise<void> {
  await db.prisma.$executeRaw`UPDATE runledger.job_attempts SET finished_at = now(), outcome = 'RELEASED' WHERE finished_at IS NULL`;
}

interface IndexUse {
  indexrelname: string;
  idx_scan: number;
  idx_tup_read: number;
}

/**
 * Entries a claim may read in iteration `i`: about `limit`, plus the 10 dead entries each earlier reset left
 * (an UPDATE of the claimed rows). Those are pruned once no snapshot can see them, which another backend of the
 * server (one starting up, on a busy machine) can delay: the bound is far below the 40,000 other rows either way.
 */
const entriesBound = (i: number) => 30 + 10 * i;

async function claimAndIndexUse(jobTypes: string[] | undefined): Promise<{ claimed: number; use: Record<string, IndexUse> }> {
  return db.prisma.$transaction(async (tx) => {
    // The xact counters hold this backend's not yet flushed statistics, earlier transactions included:
    // the claim's own use is the difference around it.
    const read = () => tx.$queryRaw<IndexUse[]>`
      SELECT c.relname::text AS indexrelname, pg_stat_get_xact_numscans(c.oid)::int AS idx_scan,
             pg_stat_get_xact_tuples_returned(c.oid)::int AS idx_tup_read
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'runledger' AND c.relname IN ('job_queue_claim_idx', 'job_queue_claim_by_type_idx')
      UNION ALL
      -- For the table itself, numscans counts its sequential scans.
      SELECT 'job_queue (seq)', pg_stat_get_xact_numscans('runledger.job_queue'::regclass)::int, 0`;
    const before = new Map((await read()).map((row) => [row.indexrelname, row]));
    const jobs = await claimJobs(tx, { workerId: 'w', ...(jobTypes ? { jobTypes } : {}), limit: 10, leaseSeconds: 60 });
    const after = await read();
    const use = after.map((row) => ({
      indexrelname: row.indexrelname,
      idx_scan: row.idx_scan - (before.get(row.indexrelname)?.idx_scan ?? 0),
      idx_tup_read: row.idx_tup_read - (before.get(row.indexrelname)?.idx_tup_read ?? 0),
    }));
    return { claimed: jobs.length, use: Object.fromEntries(use.map((row) => [row.indexrelname, row])) };
  });
}

describe('claim plans', () => {
  it('a typed claim scans its type index only, reading about `limit` entries, past a larger backlog of other types', async () => {
    for (let i = 0; i < 7; i += 1) {
      // Seven times: prepared statements switch to a generic plan after five executions.
      const { claimed, use } = await claimAndIndexUse(['plan.target']);
      expect(claimed).toBe(10);
      expect(use.job_queue_claim_idx?.idx_scan ?? 0).toBe(0);
      expect(use.job_queue_claim_by_type_idx?.idx_scan).toBeGreaterThan(0);
      expect(use.job_queue_claim_by_type_idx?.idx_tup_read).toBeLessThanOrEqual(entriesBound(i));
      expect(use['job_queue (seq)']?.idx_scan ?? 0).toBe(0);
      await db.prisma
        .$executeRaw`UPDATE runledger.job_queue SET status = 'PENDING', attempt = 0, lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL
                                   WHERE job_type = 'plan.target' AND status = 'LEASED'`;
      await db.prisma.$executeRaw`DELETE FROM runledger.job_leases`;
      await closeOpenAttempts();
    }
  });

  it('an untyped claim reads about `limit` entries of the priority-ordered index and never the type index', async () => {
    for (let i = 0; i < 7; i += 1) {
      // Seven times, as above: the generic plan too. On PostgreSQL 18 the index predicate used to be unusable
      // (its \`IS NOT NULL\` was folded away from the query) and every untyped claim sorted the whole backlog.
      const { claimed, use } = await claimAndIndexUse(undefined);
      expect(claimed).toBe(10);
      expect(use.job_queue_claim_idx?.idx_scan).toBeGreaterThan(0);
      expect(use.job_queue_claim_idx?.idx_tup_read ?? 0).toBeLessThanOrEqual(entriesBound(i));
      expect(use.job_queue_claim_by_type_idx?.idx_scan ?? 0).toBe(0);
      expect(use['job_queue (seq)']?.idx_scan ?? 0).toBe(0);
      await db.prisma
        .$executeRaw`UPDATE runledger.job_queue SET status = 'PENDING', attempt = 0, lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL
                                   WHERE status = 'LEASED'`;
      await db.prisma.$executeRaw`DELETE FROM runledger.job_leases`;
      await closeOpenAttempts();
    }
  });
});
