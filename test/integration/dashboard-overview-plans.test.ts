/**
 * The overview and the jobs list stay bounded by the backlog and the window,
 * never the history (issue 23): on 1M finished jobs three days old, a 50k
 * backlog, a few hundred jobs finished within the day and 20k runs,
 *   - the overview's statement (src/dashboard/queries.ts) reads PENDING jobs
 *     index-only from job_queue_claim_by_type_idx, every other job_queue scan
 *     by an index, and at most the backlog plus the window's rows;
 *   - getQueueMetrics' live counts read job_queue_claim_by_type_idx
 *     index-only, without a heap fetch once the table is vacuumed (they used
 *     to pick a sequential scan of the whole table at a 1M backlog);
 *   - listJobs of one type filtered to finished statuses reads
 *     job_queue_claimed_type_idx (SUCCEEDED), job_queue_dead_letter_type_idx
 *     or job_queue_canceled_type_idx backwards,
 *     about a page of entries, then the page by primary key, where the
 *     primary key walk read the whole newer backlog first.
 * Every kind of scope, custom and generic plans, each within a bound on the
 * shared buffers it touches (the work, not the time, which a loaded machine
 * changes). The table is VACUUMed first: index-only scans need the
 * visibility map, which autovacuum's insert threshold sets on a live table
 * (the bench's 10M-row table is vacuumed the same way).
 */
import type { Sql } from '@prisma/client/runtime/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminScope, listJobs, noOrganizationScope, organizationScope } from '../../src/index.js';
import type { Scope } from '../../src/db/scope.js';
import { overviewQuery } from '../../src/dashboard/queries.js';
import { liveJobCounts } from '../../src/metrics/queries.js';
import { finishedByTypeListQuery } from '../../src/queue/finished-by-type.js';
import { useTestDatabase } from '../harness/database.js';
import { countFinishedHistory } from '../harness/finished-history.js';
import type { PlanNode } from '../harness/plans.js';
import { buffersForRows, explainBuffers, rowsRead } from '../harness/plans.js';

const db = useTestDatabase();
const HISTORY = 1_000_000;
const BACKLOG = 50_000;
/** The overview and the live counts read at most the backlog and the window's rows. */
const BACKLOG_ROWS = BACKLOG + 1_000;
const BACKLOG_BUFFERS = buffersForRows(BACKLOG_ROWS);
/**
 * A finished list reads at most about 200 index entries and heap fetches (bounded below), then its page of 51 rows
 * by primary key and each row's window: 243-443 buffers measured on PostgreSQL 15 and 18.
 */
const FINISHED_LIST_BUFFERS = 1_500;

beforeAll(async () => {
  // The history: three days old, ids (md5) spread like random ones; org-a a third, org-small one in a thousand.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at)
    SELECT md5('job' || g)::uuid, 'hist.' || (g % 5), CASE WHEN g % 1000 = 1 THEN 'org-small' WHEN g % 3 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 50 = 0 THEN 'DEAD_LETTERED' WHEN g % 70 = 0 THEN 'CANCELED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           now() - interval '3 days', now() - interval '3 days', now() - interval '3 days', now() - interval '3 days' + make_interval(secs => g % 3600)
      FROM generate_series(1, ${HISTORY}::int) g`;
  // Within the day: 400 finished, a quarter of them within the hour.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at)
    SELECT md5('recent' || g)::uuid, 'hist.' || (g % 5), CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 10 = 0 THEN 'DEAD_LETTERED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           now() - interval '20 hours', now() - interval '20 hours', now() - interval '20 hours', now() - make_interval(secs => g * 180)
      FROM generate_series(1, 400) g`;
  // The backlog: newer ids than the history's (ff...), due and future, several priorities, some workflow-shaped types.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, priority, next_run_at)
    SELECT ('ffffffff' || substr(md5('live' || g), 9))::uuid, 'live.' || (g % 4), CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}', g % 3,
           now() + make_interval(secs => (g % 200) - 100)
      FROM generate_series(1, ${BACKLOG}::int) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, lease_owner, lease_expires_at, started_at)
    SELECT md5('leased' || g)::uuid, 'live.' || (g % 4), '{}', 'LEASED', 1, 'w', now() + interval '5 minutes', now()
      FROM generate_series(1, 200) g`;
  // Their lease rows, as the claim writes them (migration 20261229000000_job_leases).
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_leases (expires_at, job_id) SELECT lease_expires_at, id FROM runledger.job_queue WHERE status = 'LEASED'`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, created_at, finished_at)
    SELECT md5('run' || r)::uuid, 'wf.' || (r % 3), CASE WHEN r % 1000 = 1 THEN 'org-small' WHEN r % 2 = 0 THEN 'org-a' END,
           (CASE WHEN r % 100 = 0 THEN 'RUNNING' WHEN r % 3 = 0 THEN 'COMPLETED_WITH_ERRORS' ELSE 'SUCCEEDED' END)::runledger.workflow_run_status,
           now() - interval '3 days', CASE WHEN r % 100 <> 0 THEN now() - CASE WHEN r % 50 = 1 THEN interval '1 hour' ELSE interval '2 days' END END
      FROM generate_series(1, 20000) r`;
  // The finished-job counters the terminal statements would have added for these rows.
  await countFinishedHistory(db.prisma);
  for (const table of ['job_queue', 'job_leases', 'workflow_runs', 'job_counts']) await db.prisma.$executeRawUnsafe(`VACUUM ANALYZE runledger.${table}`);
}, 600_000);

/**
 * The scans of a plan: nodes naming a table, and each Bitmap Index Scan under the relation of the Bitmap Heap Scan above
 * it (PostgreSQL names no relation on the index node; 18 reads the backlog's last pages by bitmap where 15 reads the
 * index only). Row counts come from the table nodes alone (`tableScans`): a bitmap's entries are its heap scan's rows.
 */
function scans(node: PlanNode, relation?: string): PlanNode[] {
  const own = node['Relation Name'] ? [node] : node['Node Type'] === 'Bitmap Index Scan' ? [{ ...node, 'Relation Name': relation }] : [];
  return [...own, ...(node.Plans ?? []).flatMap((child) => scans(child, node['Relation Name'] ?? relation))];
}

const tableScans = (nodes: PlanNode[]) => nodes.filter((n) => n['Node Type'] !== 'Bitmap Index Scan');

async function explain(query: Sql, generic: boolean): Promise<{ nodes: PlanNode[]; buffers: number }> {
  const { plan, buffers } = await explainBuffers(db.prisma, query, generic);
  return { nodes: scans(plan), buffers };
}

const SCOPES: [string, Scope][] = [
  ['admin', adminScope()],
  ['organization', organizationScope('org-a')],
  ['small organization', organizationScope('org-small')],
  ['no organization', noOrganizationScope()],
];

/** The PENDING-only partial indexes: the typed claim's (covering the counts) and the untyped claim's. */
const PENDING_INDEXES = ['job_queue_claim_by_type_idx', 'job_queue_claim_idx'];

const heapFetches = (nodes: PlanNode[]) => nodes.reduce((total, n) => total + ((n as { 'Heap Fetches'?: number })['Heap Fetches'] ?? 0), 0);

describe('overview and lists on 1M finished jobs and a 50k backlog', () => {
  it('holds the history and the backlog', async () => {
    const [row] = await db.prisma.$queryRaw<{ n: number; pending: number }[]>`
      SELECT count(*)::int AS n, (count(*) FILTER (WHERE status = 'PENDING'))::int AS pending FROM runledger.job_queue`;
    expect(row!.n).toBeGreaterThan(HISTORY);
    expect(row!.pending).toBe(BACKLOG);
  });

  for (const [scopeName, scope] of SCOPES) {
    it(`overview (${scopeName} scope): PENDING index-only, no sequential scan of jobs, rows bounded by backlog and window, at most ${BACKLOG_BUFFERS} buffers`, async () => {
      for (const generic of [false, true]) {
        const mode = generic ? 'generic' : 'custom';
        const { nodes, buffers } = await explain(overviewQuery(scope), generic);
        const jobs = nodes.filter((n) => n['Relation Name'] === 'job_queue');
        expect(
          jobs.filter((n) => n['Node Type'] === 'Seq Scan' || n['Node Type'] === 'Parallel Seq Scan').map((n) => n['Node Type']),
          mode,
        ).toEqual([]);
        expect(rowsRead(tableScans(jobs)), mode).toBeLessThanOrEqual(BACKLOG_ROWS);
        expect(
          nodes.filter((n) => n['Relation Name'] === 'workflow_runs' && n['Node Type'].includes('Seq Scan')),
          mode,
        ).toEqual([]);
        expect(rowsRead(tableScans(nodes.filter((n) => n['Relation Name'] === 'workflow_runs'))), mode).toBeLessThanOrEqual(1_000);
        if (scope.kind !== 'organization') {
          // An organization's count may start from its own rows (job_queue_org_created_idx) when it has few. Index-only
          // where vacuum has marked the pages all-visible (PostgreSQL 15 here); PostgreSQL 18 may read the heap instead.
          expect(
            jobs.some((n) => PENDING_INDEXES.includes(n['Index Name'] ?? '')),
            `${mode}: ${JSON.stringify(jobs.map((n) => [n['Node Type'], n['Index Name']]))}`,
          ).toBe(true);
        }
        expect(buffers, mode).toBeLessThanOrEqual(BACKLOG_BUFFERS);
      }
    });

    it(`getQueueMetrics' live counts (${scopeName} scope): index-only over the backlog, no heap fetch, at most ${BACKLOG_BUFFERS} buffers`, async () => {
      for (const generic of [false, true]) {
        const mode = generic ? 'generic' : 'custom';
        const { nodes, buffers } = await explain(liveJobCounts({ now: new Date(), scope }), generic);
        const pending = nodes.filter((n) => PENDING_INDEXES.includes(n['Index Name'] ?? ''));
        // An organization with few rows may be counted from its own (job_queue_org_created_idx); any other reads the
        // backlog from a PENDING-only index (index-only where the pages are all-visible: PostgreSQL 15 here, with 0 heap
        // fetches; PostgreSQL 18 with autovacuum on has chosen the claim index and the heap).
        if (scopeName !== 'small organization')
          expect(pending.length, `${mode}: ${JSON.stringify(nodes.map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]))}`).toBe(1);
        expect(
          pending.map((n) => n['Node Type'].replace('Parallel ', '').replace('Index Only Scan', 'Index Scan').replace('Bitmap Index Scan', 'Index Scan')),
          mode,
        ).toEqual(pending.map(() => 'Index Scan'));
        // The lease table holds one row per live lease: reading it whole is the leased count's plan.
        expect(
          nodes.filter((n) => n['Node Type'].includes('Seq Scan') && n['Relation Name'] !== 'job_leases'),
          mode,
        ).toEqual([]);
        expect(rowsRead(tableScans(nodes.filter((n) => n['Relation Name'] === 'job_queue'))), mode).toBeLessThanOrEqual(BACKLOG_ROWS);
        expect(buffers, mode).toBeLessThanOrEqual(BACKLOG_BUFFERS);
      }
    });
  }

  // Each status's index: SUCCEEDED rows under the claimed jobs' index, the rare finished statuses under their markers'.
  const FINISHED_INDEX = {
    SUCCEEDED: 'job_queue_claimed_type_idx',
    DEAD_LETTERED: 'job_queue_dead_letter_type_idx',
    CANCELED: 'job_queue_canceled_type_idx',
  };
  const FINISHED_LISTS: [string, Parameters<typeof finishedByTypeListQuery>[0]['statuses'], string | null, string][] = [
    ['SUCCEEDED of one type', ['SUCCEEDED'], null, 'hist.2'],
    ['SUCCEEDED of one type, a later page', ['SUCCEEDED'], '80000000-0000-0000-0000-000000000000', 'hist.2'],
    ['DEAD_LETTERED or CANCELED of one type', ['DEAD_LETTERED', 'CANCELED'], null, 'hist.0'],
  ];
  for (const [name, statuses, cursor, jobType] of FINISHED_LISTS) {
    it(`jobs list, ${name}: its status's index backwards, about a page of entries, at most ${FINISHED_LIST_BUFFERS} buffers (admin and no-organization scopes)`, async () => {
      for (const scope of [adminScope(), noOrganizationScope()]) {
        for (const generic of [false, true]) {
          const mode = `${scope.kind}, ${generic ? 'generic' : 'custom'}`;
          const { nodes, buffers } = await explain(finishedByTypeListQuery({ scope, jobType, statuses, cursor, rows: 51 }), generic);
          const ids = nodes.filter((n) => Object.values(FINISHED_INDEX).includes(n['Index Name'] ?? ''));
          expect(
            ids.map((n) => [n['Index Name'], n['Node Type'].replace('Index Only Scan', 'Index Scan')]),
            mode,
          ).toEqual(statuses.map((status) => [FINISHED_INDEX[status], 'Index Scan']));
          // Then the page's rows by primary key (and each one's debounce or throttle window by its job index), and
          // nothing else.
          expect(
            nodes.filter((n) => !ids.includes(n) && n['Relation Name'] !== 'enqueue_windows').map((n) => n['Index Name']),
            mode,
          ).toEqual(['job_queue_pkey']);
          expect(
            nodes.filter((n) => n['Relation Name'] === 'enqueue_windows').map((n) => n['Index Name']),
            mode,
          ).toEqual(['enqueue_windows_job_id_idx']);
          // No organization: a third of the type's rows are org-a's and read past; so are the other statuses' rows
          // (the status is read on the row: a few percent here).
          expect(rowsRead(ids), mode).toBeLessThanOrEqual(51 * statuses.length * 2);
          expect(heapFetches(ids), mode).toBeLessThanOrEqual(51 * statuses.length * 2);
          expect(buffers, mode).toBeLessThanOrEqual(FINISHED_LIST_BUFFERS);
        }
      }
    });
  }

  it("listJobs pages through one type's finished jobs newest first, exactly as the general statement orders them", async () => {
    const scope = organizationScope('org-small');
    const expected = await db.prisma.$queryRaw<{ id: string }[]>`
      SELECT id::text FROM runledger.job_queue
       WHERE job_type = 'hist.1' AND status IN ('SUCCEEDED', 'CANCELED') AND organization_id = 'org-small' ORDER BY id DESC`;
    expect(expected.length).toBeGreaterThan(100);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listJobs(db.prisma, { scope, jobType: 'hist.1', status: ['CANCELED', 'SUCCEEDED', 'CANCELED'], limit: 50, cursor });
      expect(page.items.every((job) => job.organizationId === 'org-small' && job.jobType === 'hist.1')).toBe(true);
      seen.push(...page.items.map((job) => job.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(expected.map((row) => row.id));
  });
});
