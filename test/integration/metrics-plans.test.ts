/**
 * The metrics stay cheap on a large history: every metrics statement, on a
 * table of 200k finished jobs and 20k finished runs (generated set-based,
 * with time-ordered ids and the finished-job counters the terminal
 * statements would have added), reads job_queue, job_counts and
 * workflow_runs through indexes only, and the rows its scans return are
 * bounded by the backlog and the windows, not the history.
 * Checked with EXPLAIN ANALYZE, in both custom and generic plan modes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { adminScope, noOrganizationScope, organizationScope } from '../../src/index.js';
import { METRICS_QUERIES } from '../../src/metrics/queries.js';
import type { Scope } from '../../src/db/scope.js';
import { useTestDatabase } from '../harness/database.js';
import { countFinishedHistory } from '../harness/finished-history.js';
import { explainScans, rowsRead, type PlanNode } from '../harness/plans.js';

const db = useTestDatabase();
const NOW = new Date('2027-03-01T12:00:00Z');

beforeAll(async () => {
  const now = NOW;
  // History: finished long before every window.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at, output)
    SELECT (lpad(to_hex(floor(extract(epoch FROM ${now}::timestamptz - interval '3 days') * 1000)::bigint + g), 12, '0') || substr(md5('h' || g), 1, 20))::uuid,
           'hist.' || (g % 5), CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 50 = 0 THEN 'DEAD_LETTERED' WHEN g % 70 = 0 THEN 'CANCELED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           ${now}::timestamptz - interval '3 days', ${now}::timestamptz - interval '3 days',
           ${now}::timestamptz - interval '3 days' + interval '1 second', ${now}::timestamptz - interval '2 days' - make_interval(secs => g),
           CASE WHEN g % 50 <> 0 AND g % 70 <> 0 THEN '{}'::jsonb END
      FROM generate_series(1, 200000) g`;
  // Recent: finished inside the last hour, some dead-lettered in the last day.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at)
    SELECT (lpad(to_hex(floor(extract(epoch FROM ${now}::timestamptz - interval '50 minutes') * 1000)::bigint + g), 12, '0') || substr(md5('r' || g), 1, 20))::uuid,
           'recent', CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 10 = 0 THEN 'DEAD_LETTERED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           ${now}::timestamptz - interval '50 minutes', ${now}::timestamptz - interval '50 minutes',
           ${now}::timestamptz - interval '49 minutes', ${now}::timestamptz - make_interval(secs => g)
      FROM generate_series(1, 300) g`;
  // Backlog: pending at several priorities, a few leased.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, priority, next_run_at, created_at)
    SELECT (lpad(to_hex(floor(extract(epoch FROM ${now}::timestamptz - make_interval(secs => g)) * 1000)::bigint), 12, '0') || substr(md5('l' || g), 1, 20))::uuid,
           'live.' || (g % 3), CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}', g % 4, ${now}::timestamptz - make_interval(secs => g), ${now}::timestamptz - make_interval(secs => g)
      FROM generate_series(1, 200) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, lease_owner, lease_expires_at, started_at)
    SELECT (lpad(to_hex(floor(extract(epoch FROM ${now}::timestamptz) * 1000)::bigint + g), 12, '0') || substr(md5('x' || g), 1, 20))::uuid,
           'live.0', '{}', 'LEASED', 1, 'w', ${now}::timestamptz + interval '1 minute', ${now}::timestamptz
      FROM generate_series(1, 10) g`;
  // Keyed backlog: 60 due jobs over 5 concurrency keys, and 4 leases holding keys (migration 20270101000000).
  await db.prisma.$executeRaw`
    INSERT INTO runledger.concurrency_limits (key, max_leased, seats) SELECT 'key.' || k, 2, 2 FROM generate_series(0, 4) k`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.concurrency_seats (key, seat) SELECT 'key.' || k, s FROM generate_series(0, 4) k, generate_series(1, 2) s`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, concurrency_key, next_run_at, created_at)
    SELECT (lpad(to_hex(floor(extract(epoch FROM ${now}::timestamptz - make_interval(secs => 300 + g)) * 1000)::bigint), 12, '0') || substr(md5('k' || g), 1, 20))::uuid,
           'live.keyed', CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}', 'key.' || (g % 5), ${now}::timestamptz - make_interval(secs => g), ${now}::timestamptz - make_interval(secs => g)
      FROM generate_series(1, 60) g`;
  await db.prisma.$executeRaw`
    UPDATE runledger.job_queue jq SET concurrency_key = 'key.' || (n.rn - 1)
      FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM runledger.job_queue WHERE status = 'LEASED' ORDER BY id LIMIT 4) n
     WHERE jq.id = n.id`;
  // Their lease rows, as the claim writes them (migration 20261229000000_job_leases).
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_leases (expires_at, job_id, concurrency_key, concurrency_seat)
    SELECT lease_expires_at, id, concurrency_key, CASE WHEN concurrency_key IS NOT NULL THEN 1 END FROM runledger.job_queue WHERE status = 'LEASED'`;
  await db.prisma.$executeRaw`
    DELETE FROM runledger.concurrency_seats s USING runledger.job_leases l
     WHERE l.concurrency_key = s.key AND l.concurrency_seat = s.seat`;
  // Rate-keyed backlog: 40 of the due jobs over 4 rate keys (migration 20270101000002).
  await db.prisma.$executeRaw`
    INSERT INTO runledger.rate_limits (key, max_starts, period_ms, burst, tokens) SELECT 'rate.' || k, 10, 1000, 10, 0 FROM generate_series(0, 3) k`;
  await db.prisma.$executeRaw`
    UPDATE runledger.job_queue jq SET rate_key = 'rate.' || (n.rn % 4)
      FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM runledger.job_queue
             WHERE status = 'PENDING' AND job_type LIKE 'live.%' ORDER BY id LIMIT 40) n
     WHERE jq.id = n.id`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, created_at, finished_at)
    SELECT gen_random_uuid(), 'wf', CASE WHEN g % 2 = 0 THEN 'org-a' END,
           (CASE WHEN g % 9 = 0 THEN 'COMPLETED_WITH_ERRORS' ELSE 'SUCCEEDED' END)::runledger.workflow_run_status,
           ${now}::timestamptz - interval '3 days', ${now}::timestamptz - interval '2 days' - make_interval(secs => g)
      FROM generate_series(1, 20000) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.workflow_runs (id, workflow_type, status, created_at)
    SELECT gen_random_uuid(), 'wf', 'RUNNING', ${now}::timestamptz - interval '1 minute' FROM generate_series(1, 20) g`;
  // Debounce windows: 20k closed ones (their jobs ran long ago) and 20 still open over backlog jobs.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.enqueue_windows (job_type, organization_key, kind, window_key, job_id, opened_at, waiting_until)
    SELECT job_type, COALESCE(organization_id, ''), 'DEBOUNCE', id::text, id, created_at, created_at
      FROM runledger.job_queue WHERE status = 'SUCCEEDED' LIMIT 20000`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.enqueue_windows (job_type, organization_key, kind, window_key, job_id, opened_at, waiting_until)
    SELECT job_type, COALESCE(organization_id, ''), 'DEBOUNCE', id::text, id, created_at, ${now}::timestamptz + interval '1 minute'
      FROM runledger.job_queue WHERE status = 'PENDING' LIMIT 20`;
  await countFinishedHistory(db.prisma);
  await db.prisma.$executeRaw`ANALYZE runledger.job_queue`;
  await db.prisma.$executeRaw`ANALYZE runledger.job_counts`;
  await db.prisma.$executeRaw`ANALYZE runledger.workflow_runs`;
  await db.prisma.$executeRaw`ANALYZE runledger.job_leases`;
  await db.prisma.$executeRaw`ANALYZE runledger.concurrency_limits`;
  await db.prisma.$executeRaw`ANALYZE runledger.rate_limits`;
  await db.prisma.$executeRaw`ANALYZE runledger.enqueue_windows`;
}, 120_000);

async function explain(section: keyof typeof METRICS_QUERIES, scope: Scope, generic: boolean): Promise<PlanNode[]> {
  return explainScans(db.prisma, METRICS_QUERIES[section]({ now: NOW, scope }), generic);
}

const SCOPES: [string, Scope][] = [
  ['admin', adminScope()],
  ['organization', organizationScope('org-a')],
  ['no organization', noOrganizationScope()],
];

describe('metrics plans on 200k finished jobs', () => {
  for (const section of Object.keys(METRICS_QUERIES) as (keyof typeof METRICS_QUERIES)[]) {
    for (const [scopeName, scope] of SCOPES) {
      it(`${section} (${scopeName} scope) reads no table sequentially and a bounded number of rows`, async () => {
        for (const generic of [false, true]) {
          const nodes = await explain(section, scope, generic);
          const tables = nodes.filter((n) => ['job_queue', 'job_counts', 'workflow_runs', 'enqueue_windows'].includes(n['Relation Name'] ?? ''));
          expect(tables.length).toBeGreaterThan(0);
          expect(tables.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => `${n['Relation Name']} (${generic ? 'generic' : 'custom'})`)).toEqual([]);
          // The backlog is 270 jobs, the recent window 300 jobs (and at most as many counter rows), live runs 20: a
          // scan of the history would read 200k.
          expect(rowsRead(tables)).toBeLessThan(2_000);
        }
      });
    }
  }
});

describe('the concurrency keys section', () => {
  for (const [scopeName, scope] of SCOPES) {
    it(`reads the keyed backlog by job_queue_concurrency_waiting_idx (${scopeName} scope)`, async () => {
      for (const generic of [false, true]) {
        const nodes = await explain('concurrencyKeys', scope, generic);
        const queue = nodes.filter((n) => n['Relation Name'] === 'job_queue');
        // The waiting count by the keyed index (the lease rows' jobs by an index too: no sequential scan above).
        expect(queue.map((n) => n['Index Name'])).toContain('job_queue_concurrency_waiting_idx');
        expect(rowsRead(queue)).toBeLessThan(200);
      }
    });
  }
});

describe('the rate keys section', () => {
  for (const [scopeName, scope] of SCOPES) {
    it(`reads the rate-keyed backlog by job_queue_rate_waiting_idx (${scopeName} scope)`, async () => {
      for (const generic of [false, true]) {
        const nodes = await explain('rateKeys', scope, generic);
        const queue = nodes.filter((n) => n['Relation Name'] === 'job_queue');
        expect(queue.map((n) => n['Index Name'])).toContain('job_queue_rate_waiting_idx');
        expect(rowsRead(queue)).toBeLessThan(100);
      }
    });
  }
});
