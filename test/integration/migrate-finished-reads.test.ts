/**
 * Migration 20261229000001_finished_reads on a database with history: trails and attempts read the same
 * afterwards, the finished-job counters are backfilled equal to a count of the last 24 hours of history, no
 * index of job_queue names status or finished_at any more (the lease expiry index is the lease table's
 * migration's to drop), the table is at fillfactor 50, and the finished-by-type lists and the dead-letter
 * count still find the rows already there (a SUCCEEDED row from before the lean ledger has no attempt_seq).
 */
import { describe, expect, it } from 'vitest';
import { adminScope, countDeadLetteredJobs, getQueueMetrics, listJobs, migrate } from '../../src/index.js';
import { createPrismaClient } from '../../src/client/connect.js';
import { migrateUpTo, queryOnce, useEmptyDatabases } from '../harness/empty-database.js';

const databases = useEmptyDatabases();
const MIGRATION = '20261229000001_finished_reads';
const id = (n: number) => `01900000-0000-7000-8000-00000000000${n}`;

/** What the code before the migration wrote: finished jobs within and before the last day, live ones, an attempt. */
const HISTORY = `
  INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, lease_owner, lease_expires_at, started_at, finished_at,
                                   output, last_error_code, attempt_seq, attempt_worker_id, attempt_started_at, attempt_leased_until, attempt_closed_seq)
  VALUES ('${id(1)}', 'h.job', 'org-1', '{}', 'SUCCEEDED', 1, NULL, NULL, now() - interval '3 min', now() - interval '2 min', '1', NULL,
          nextval('runledger.job_events_seq_seq'), 'w-old', now() - interval '3 min', now() + interval '1 min', nextval('runledger.job_events_seq_seq')),
         ('${id(2)}', 'h.job', NULL, '{}', 'SUCCEEDED', 1, NULL, NULL, now() - interval '3 min', now() - interval '2 min', '2', NULL,
          NULL, NULL, NULL, NULL, NULL),
         ('${id(3)}', 'h.job', NULL, '{}', 'DEAD_LETTERED', 1, NULL, NULL, now() - interval '3 min', now() - interval '2 min', NULL, 'boom',
          NULL, NULL, NULL, NULL, NULL),
         ('${id(4)}', 'h.job', 'org-1', '{}', 'CANCELED', 0, NULL, NULL, NULL, now() - interval '90 min', NULL, 'job.canceled',
          NULL, NULL, NULL, NULL, NULL),
         ('${id(5)}', 'h.job', NULL, '{}', 'SUCCEEDED', 1, NULL, NULL, now() - interval '3 days', now() - interval '2 days', '5', NULL,
          NULL, NULL, NULL, NULL, NULL),
         ('${id(6)}', 'h.job', NULL, '{}', 'LEASED', 1, 'w-old', now() + interval '5 min', now(), NULL, NULL, NULL,
          nextval('runledger.job_events_seq_seq'), 'w-old', now(), now() + interval '5 min', NULL),
         ('${id(7)}', 'h.job', NULL, '{}', 'PENDING', 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome, error_code, error_message)
  VALUES ('${id(3)}', 1, 1, 'w-old', now() - interval '3 min', now() - interval '2 min', 'DEAD_LETTERED', 'boom', 'it failed');`;

const TRAIL = `SELECT to_jsonb(t) AS row FROM runledger.job_trail t ORDER BY t.job_id, t.position, t.event_type`;
const ATTEMPTS = `SELECT to_jsonb(a) AS row FROM runledger.job_attempt_history a ORDER BY a.job_id, a.seq`;
const COUNTED = `SELECT job_type, organization_id, status::text, workflow, sum(count)::int AS n FROM runledger.job_counts GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`;
const HISTORY_COUNT = `
  SELECT job_type, COALESCE(organization_id, '') AS organization_id, status::text, workflow_step_id IS NOT NULL AS workflow, count(*)::int AS n
    FROM runledger.job_queue WHERE status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED') AND finished_at >= now() - interval '24 hours'
   GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`;

describe(`migration ${MIGRATION}`, () => {
  it('keeps trails and attempts, backfills the counters from the last day, and leaves no index naming status or finished_at', async () => {
    const url = await databases.create();
    const pending = await migrateUpTo(url, MIGRATION);
    await queryOnce(url, `BEGIN; ${HISTORY} COMMIT;`);
    const before = { trail: await queryOnce(url, TRAIL), attempts: await queryOnce(url, ATTEMPTS), history: await queryOnce(url, HISTORY_COUNT) };
    expect(before.trail.length).toBeGreaterThan(6);
    expect(before.attempts.length).toBeGreaterThan(1);

    expect((await migrate({ connectionString: url })).applied).toEqual(pending);
    expect(pending[0]).toBe(MIGRATION);

    expect(await queryOnce(url, TRAIL)).toEqual(before.trail);
    expect(await queryOnce(url, ATTEMPTS)).toEqual(before.attempts);
    const counted = await queryOnce(url, COUNTED);
    expect(counted).toEqual(before.history);
    expect(counted).toEqual([
      { job_type: 'h.job', organization_id: '', status: 'DEAD_LETTERED', workflow: false, n: 1 },
      { job_type: 'h.job', organization_id: '', status: 'SUCCEEDED', workflow: false, n: 1 },
      { job_type: 'h.job', organization_id: 'org-1', status: 'CANCELED', workflow: false, n: 1 },
      { job_type: 'h.job', organization_id: 'org-1', status: 'SUCCEEDED', workflow: false, n: 1 },
    ]);

    const naming = await queryOnce<{ indexname: string }>(
      url,
      `SELECT indexname FROM pg_indexes WHERE schemaname = 'runledger' AND tablename = 'job_queue'
          AND indexdef ~ '\\m(status|finished_at)\\M' ORDER BY 1`,
    );
    // The lease index (the last to name status) went to job_leases in 20261229000000_job_leases.
    expect(naming.map((r) => r.indexname)).toEqual([]);
    const [options] = await queryOnce<{ reloptions: string[] }>(url, `SELECT reloptions FROM pg_class WHERE oid = 'runledger.job_queue'::regclass`);
    expect(options!.reloptions).toEqual(['fillfactor=50']);

    const prisma = createPrismaClient(url, { max: 2 });
    try {
      const succeeded = await listJobs(prisma, { scope: adminScope(), jobType: 'h.job', status: 'SUCCEEDED', limit: 10 });
      expect(succeeded.items.map((j) => j.id)).toEqual([id(5), id(2), id(1)]);
      const rare = await listJobs(prisma, { scope: adminScope(), jobType: 'h.job', status: ['DEAD_LETTERED', 'CANCELED'], limit: 10 });
      expect(rare.items.map((j) => j.id)).toEqual([id(4), id(3)]);
      expect(await countDeadLetteredJobs(prisma, { scope: adminScope(), filter: { jobType: 'h.job' } })).toMatchObject({ count: 1 });
      const metrics = await getQueueMetrics(prisma, { scope: adminScope() });
      expect(metrics.jobs.finishedRecently).toEqual({ succeeded: 2, deadLettered: 1, canceled: 0 });
      expect(metrics.deadLetteredLast24h).toBe(1);
    } finally {
      await prisma.$disconnect();
    }
  });
});
