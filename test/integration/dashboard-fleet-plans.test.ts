/**
 * The operator pages' reads stay cheap on a 1M-job database: the queues
 * page's statements (src/dashboard/fleet.ts), the bulk requeue's preview and
 * pick (src/replay/bulk-requeue.ts), the job page's stacks
 * (src/dashboard/stacks.ts) and the workers page. On 1M jobs (990k finished
 * history with ~20k dead letters, a 10k backlog, 300 finished in the last
 * hour), each reads job_queue (or job_counts) through an index, never sequentially, reads
 * rows bounded by the backlog, the window or the dead letters rather than the
 * history, and touches a bounded number of buffers (custom and generic
 * plans, every kind of scope): bounds on the work, not on the time, which a
 * loaded machine changes.
 */
import type { Sql } from '@prisma/client/runtime/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminScope, noOrganizationScope, organizationScope } from '../../src/index.js';
import type { Scope } from '../../src/db/scope.js';
import { finishedByTypeQuery, leasedByTypeQuery, liveWorkersByTypeQuery, pendingByTypeQuery, workersQuery } from '../../src/dashboard/fleet.js';
import { attemptStacksQuery } from '../../src/dashboard/stacks.js';
import { DEFAULT_BULK_PREVIEW, deadLetterCountQuery, deadLetterPickQuery, MAX_BULK_REQUEUE } from '../../src/replay/bulk-requeue.js';
import { useTestDatabase } from '../harness/database.js';
import { countFinishedHistory } from '../harness/finished-history.js';
import type { PlanNode } from '../harness/plans.js';
import { buffersForRows, explainBuffers, rowsRead } from '../harness/plans.js';

const db = useTestDatabase();
const STACKED_JOB = '00000000-0000-7000-8000-00000000beef';

beforeAll(async () => {
  // md5-derived ids: spread like random ones, but reproducible. org-a a third of the rows (and of the dead letters),
  // org-small one in a thousand (none of them dead), the rest none.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at,
                                     last_error_code, last_error_message)
    SELECT md5('job' || g)::uuid, 'hist.' || (g % 5), CASE WHEN g % 1000 = 1 THEN 'org-small' WHEN g % 3 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 50 = 0 THEN 'DEAD_LETTERED' WHEN g % 70 = 0 THEN 'CANCELED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           now() - interval '3 days', now() - interval '3 days', now() - interval '3 days', now() - interval '2 days' - make_interval(secs => g),
           CASE WHEN g % 50 = 0 THEN 'err.' || (g % 7) END, CASE WHEN g % 50 = 0 THEN 'failed' END
      FROM generate_series(1, 990000) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at)
    SELECT md5('recent' || g)::uuid, 'hist.' || (g % 5), CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 10 = 0 THEN 'DEAD_LETTERED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           now() - interval '50 minutes', now() - interval '50 minutes', now() - interval '49 minutes', now() - make_interval(secs => g * 10)
      FROM generate_series(1, 300) g`;
  // The backlog: due and future jobs at several priorities, some leased.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, priority, next_run_at)
    SELECT md5('live' || g)::uuid, 'live.' || (g % 4), CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}', g % 3,
           now() + make_interval(secs => (g % 200) - 100)
      FROM generate_series(1, 9500) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, lease_owner, lease_expires_at, started_at)
    SELECT md5('leased' || g)::uuid, 'live.' || (g % 4), '{}', 'LEASED', 1, 'w', now() + interval '5 minutes', now()
      FROM generate_series(1, 200) g`;
  // Their lease rows, as the claim writes them (migration 20261229000000_job_leases).
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_leases (expires_at, job_id) SELECT lease_expires_at, id FROM runledger.job_queue WHERE status = 'LEASED'`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, max_attempts, created_at, next_run_at, started_at, finished_at, last_error_code)
    VALUES (${STACKED_JOB}::uuid, 'stacked', '{}', 'DEAD_LETTERED', 30, 30, now(), now(), now(), now(), 'x.failed')`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome, error_code, error_stack)
    SELECT ${STACKED_JOB}::uuid, 1, g, 'w', now(), now(), 'FAILED_RETRY', 'x.failed', repeat('    at frame (file.js:1:1)' || chr(10), 200)
      FROM generate_series(1, 30) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome)
    SELECT md5('job' || g)::uuid, 1, 1, 'w', now() - interval '3 days', now() - interval '2 days', 'SUCCEEDED'
      FROM generate_series(1, 100000) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.workers (id, host, pid, job_types, concurrency, in_flight, started_at, last_seen_at, expires_at)
    SELECT 'w-' || g, 'host-' || (g % 5), g, ARRAY['live.' || (g % 4), 'hist.' || (g % 5)], 8, g % 8, now() - interval '1 hour', now(),
           now() + CASE WHEN g % 10 = 0 THEN interval '-5 minutes' ELSE interval '45 seconds' END
      FROM generate_series(1, 40) g`;
  // The finished-job counters the terminal statements would have added for these rows.
  await countFinishedHistory(db.prisma);
  for (const table of ['job_queue', 'job_attempts', 'job_leases', 'workers', 'job_counts']) await db.prisma.$executeRawUnsafe(`ANALYZE runledger.${table}`);
}, 600_000);

function scans(node: PlanNode): PlanNode[] {
  return [...(node['Relation Name'] ? [node] : []), ...(node.Plans ?? []).flatMap(scans)];
}

const SCOPES: [string, Scope][] = [
  ['admin', adminScope()],
  ['organization', organizationScope('org-a')],
  ['small organization', organizationScope('org-small')],
  ['no organization', noOrganizationScope()],
];

/** The registry's 40 rows: one page. */
const WORKERS_BUFFERS = 10;

/** Each statement and the most job_queue rows it may read: its bound, not the history's million. */
const STATEMENTS: [string, (scope: Scope) => Sql, number][] = [
  ['pending by type', (scope) => pendingByTypeQuery(scope), 10_000],
  ['leased by type', (scope) => leasedByTypeQuery(scope), 1_000],
  ['finished in the window by type', (scope) => finishedByTypeQuery(scope), 2_000],
  ['dead-letter preview, no filter', (scope) => deadLetterCountQuery(scope, {}, DEFAULT_BULK_PREVIEW), 2_000],
  ['dead-letter preview by type and error', (scope) => deadLetterCountQuery(scope, { jobType: 'hist.2', errorCode: 'err.3' }, DEFAULT_BULK_PREVIEW), 25_000],
  // An admin-scope pick by type on PostgreSQL before 18 (no skip scan over the index's organization column) reads
  // every dead letter: bounded by the dead letters, not the history.
  ['dead-letter pick by type', (scope) => deadLetterPickQuery(scope, { jobType: 'hist.1' }, MAX_BULK_REQUEUE), 25_000],
  [
    'dead-letter pick by time range',
    (scope) =>
      deadLetterPickQuery(
        scope,
        { finishedAfter: new Date(Date.now() - 2 * 86_400_000 - 3_600_000), finishedBefore: new Date(Date.now() - 2 * 86_400_000) },
        MAX_BULK_REQUEUE,
      ),
    25_000,
  ],
  ['attempt stacks', (scope) => attemptStacksQuery(scope, STACKED_JOB), 100],
];

describe('operator reads on 1M jobs', () => {
  it('holds a million jobs', async () => {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;
    expect(row!.n).toBeGreaterThanOrEqual(1_000_000);
  });

  for (const [name, query, bound] of STATEMENTS) {
    const maxBuffers = buffersForRows(bound);
    for (const [scopeName, scope] of SCOPES) {
      it(`${name} (${scopeName} scope): no sequential scan, at most ${bound} rows and ${maxBuffers} buffers`, async () => {
        for (const generic of [false, true]) {
          const { plan, buffers } = await explainBuffers(db.prisma, query(scope), generic);
          const nodes = scans(plan);
          const mode = generic ? 'generic' : 'custom';
          // Jobs, or for the finished counts the finished-job counters (job_counts).
          const jobs = nodes.filter((n) => n['Relation Name'] === 'job_queue' || n['Relation Name'] === 'job_counts');
          expect(jobs.length, mode).toBeGreaterThan(0);
          // The registry and the lease table (one row per live lease) are read whole by design.
          const whole = ['workers', 'job_leases'];
          expect(
            nodes.filter((n) => n['Node Type'] === 'Seq Scan' && !whole.includes(n['Relation Name'] ?? '')).map((n) => `${n['Relation Name']} (${mode})`),
          ).toEqual([]);
          expect(rowsRead(jobs), mode).toBeLessThanOrEqual(bound);
          expect(buffers, mode).toBeLessThanOrEqual(maxBuffers);
        }
      });
    }
  }

  it(`the workers page and live workers per type read the registry only, at most ${WORKERS_BUFFERS} buffers`, async () => {
    for (const query of [workersQuery, liveWorkersByTypeQuery]) {
      const { plan, buffers } = await explainBuffers(db.prisma, query, false);
      expect(scans(plan).map((n) => n['Relation Name'])).toEqual(['workers']);
      expect(buffers).toBeLessThanOrEqual(WORKERS_BUFFERS);
    }
  });
});
