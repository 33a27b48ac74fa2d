/**
 * The runs list's step summaries and the run timeline's attempts stay cheap
 * on a large database: 1M jobs (200k of them workflow steps' jobs), 100k
 * runs (20k of them with 10 steps each), 400k attempts; and the runs list's metadata filter reads a
 * bounded window of the newest runs. Each statement reads workflow_steps through the
 * (run, key) index for the runs it was given only, and attempts and jobs by
 * primary key; never a sequential scan, in custom and generic plan modes and
 * every kind of scope, and within a bound on the shared buffers it touches
 * (the work, not the time, which a loaded machine changes).
 */
import type { Sql } from '@prisma/client/runtime/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminScope, noOrganizationScope, organizationScope } from '../../src/index.js';
import type { Scope } from '../../src/db/scope.js';
import { asTemplate } from '../../src/db/sql-template.js';
import { runAttemptsQuery, runSummariesQuery } from '../../src/dashboard/run-insights.js';
import { METADATA_WINDOW, runMetadataQuery } from '../../src/dashboard/metadata-filter.js';
import { useTestDatabase } from '../harness/database.js';
import { buffersForRows, explainBuffers, rowsRead, type PlanNode } from '../harness/plans.js';

const db = useTestDatabase();

const RUNS = 20_000;
const STEPS_PER_RUN = 10;

beforeAll(async () => {
  await db.prisma.$transaction(
    async (tx) => {
      // 800k direct jobs: organizations as in dashboard-plans.test.ts (org-a half, org-small one in a thousand).
      await tx.$executeRaw`
        INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at)
        SELECT md5('job' || g)::uuid, 'hist.' || (g % 5), CASE WHEN g % 1000 = 1 THEN 'org-small' WHEN g % 2 = 0 THEN 'org-a' END, '{}',
               'SUCCEEDED', 1, now() - interval '3 days', now() - interval '3 days', now() - interval '3 days', now() - interval '2 days'
          FROM generate_series(1, ${1_000_000 - RUNS * STEPS_PER_RUN}::int) g`;
      await tx.$executeRaw`
        INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, metadata, created_at, finished_at)
        SELECT md5('run' || r)::uuid, 'wf.' || (r % 3), CASE WHEN r % 1000 = 1 THEN 'org-small' WHEN r % 2 = 0 THEN 'org-a' END,
               'COMPLETED_WITH_ERRORS', jsonb_build_object('customer', 'c' || (r % 100), 'batch', r % 7),
               now() - interval '3 days' + make_interval(secs => r), now() - interval '2 days'
          FROM generate_series(1, ${RUNS}::int) r`;
      // 80k more runs without steps, so the runs table is as large as dashboard-plans.test.ts's (100k).
      await tx.$executeRaw`
        INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, metadata, created_at, finished_at)
        SELECT md5('xrun' || r)::uuid, 'wf.' || (r % 3), CASE WHEN r % 1000 = 1 THEN 'org-small' WHEN r % 2 = 0 THEN 'org-a' END,
               'SUCCEEDED', jsonb_build_object('customer', 'c' || (r % 100), 'batch', r % 7),
               now() - interval '4 days' + make_interval(secs => r), now() - interval '2 days'
          FROM generate_series(1, 80000) r`;
      // 200k step jobs and their steps (the step <-> job links are deferred foreign keys: checked at commit).
      await tx.$executeRaw`
        INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at, workflow_step_id)
        SELECT md5('sjob' || r || ':' || k)::uuid, 'step.work', CASE WHEN r % 1000 = 1 THEN 'org-small' WHEN r % 2 = 0 THEN 'org-a' END, '{}',
               (CASE WHEN k = 3 THEN 'DEAD_LETTERED' ELSE 'SUCCEEDED' END)::runledger.job_status, 2,
               now() - interval '3 days', now() - interval '3 days', now() - interval '3 days', now() - interval '2 days', md5('step' || r || ':' || k)::uuid
          FROM generate_series(1, ${RUNS}::int) r, generate_series(1, ${STEPS_PER_RUN}::int) k`;
      await tx.$executeRaw`
        INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, job_type, organization_id, payload, status, job_id, released_at, started_at, finished_at, last_error_code)
        SELECT md5('step' || r || ':' || k)::uuid, md5('run' || r)::uuid, 'step-' || k, 'JOB', 'step.work',
               CASE WHEN r % 1000 = 1 THEN 'org-small' WHEN r % 2 = 0 THEN 'org-a' END, '{}',
               (CASE WHEN k = 3 THEN 'FAILED' ELSE 'SUCCEEDED' END)::runledger.workflow_step_status, md5('sjob' || r || ':' || k)::uuid,
               now() - interval '3 days', now() - interval '3 days', now() - interval '2 days', CASE WHEN k = 3 THEN 'test.failed' END
          FROM generate_series(1, ${RUNS}::int) r, generate_series(1, ${STEPS_PER_RUN}::int) k`;
      await tx.$executeRaw`
        INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome, error_code)
        SELECT md5('sjob' || r || ':' || k)::uuid, 1, a, 'w', now() - interval '3 days', now() - interval '3 days' + interval '1 minute', 'FAILED_RETRY', 'test.flaky'
          FROM generate_series(1, ${RUNS}::int) r, generate_series(1, ${STEPS_PER_RUN}::int) k, generate_series(1, 2) a`;
    },
    { timeout: 600_000 },
  );
  for (const table of ['job_queue', 'job_attempts', 'workflow_runs', 'workflow_steps']) await db.prisma.$executeRawUnsafe(`ANALYZE runledger.${table}`);
}, 600_000);

/** The nodes that read a table or an index (a bitmap scan's index part names no relation). */
function scans(node: PlanNode): PlanNode[] {
  return [...(node['Relation Name'] || node['Index Name'] ? [node] : []), ...(node.Plans ?? []).flatMap(scans)];
}

async function explain(query: Sql, generic: boolean): Promise<{ nodes: PlanNode[]; buffers: number }> {
  const { plan, buffers } = await explainBuffers(db.prisma, query, generic);
  return { nodes: scans(plan), buffers };
}

const SCOPES: [string, Scope, number][] = [
  // Run numbers in each scope (organizations as seeded above).
  ['admin', adminScope(), 7],
  ['organization', organizationScope('org-a'), 8],
  ['small organization', organizationScope('org-small'), 1001],
  ['no organization', noOrganizationScope(), 9],
];

/** A list page's run ids: 50 runs of the scope. */
function pageOfRuns(first: number): number[] {
  return Array.from({ length: 50 }, (_, i) => first + i * 2);
}

async function idsOf(runs: number[]): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ id: string }[]>`SELECT md5('run' || r)::uuid::text AS id FROM unnest(${runs}::int[]) r`;
  return rows.map((row) => row.id);
}

const TABLES = new Set(['job_queue', 'workflow_runs', 'workflow_steps', 'job_attempts']);
/** The most rows each read may read (index entries and heap rows), and so the most buffers. */
const SUMMARY_ROWS = 50 * (1 + STEPS_PER_RUN * 4) + 100;
const ATTEMPTS_ROWS = STEPS_PER_RUN * 16 + 20;
const METADATA_ROWS = METADATA_WINDOW * 2 + 200;
const SUMMARY_BUFFERS = buffersForRows(SUMMARY_ROWS);
const ATTEMPTS_BUFFERS = buffersForRows(ATTEMPTS_ROWS);
const METADATA_BUFFERS = buffersForRows(METADATA_ROWS);

describe('dashboard run insights on 1M jobs, 100k runs, 200k steps, 400k attempts', () => {
  for (const [scopeName, scope, run] of SCOPES) {
    it(`step summaries of a page of 50 runs (${scopeName} scope): index scans, bounded rows, at most ${SUMMARY_BUFFERS} buffers`, async () => {
      const ids = await idsOf(pageOfRuns(run));
      for (const generic of [false, true]) {
        const { nodes, buffers } = await explain(runSummariesQuery(scope, ids), generic);
        const read = nodes.filter((n) => TABLES.has(n['Relation Name']!) || n['Node Type'] === 'Bitmap Index Scan');
        const mode = generic ? 'generic' : 'custom';
        expect(read.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => `${n['Relation Name']} (${mode})`)).toEqual([]);
        const used = read.map((n) => n['Index Name']);
        expect(
          used.some((name) => name === 'workflow_steps_run_key_key' || name === 'workflow_steps_run_id_id_key'),
          `${mode}: ${used.join(', ')}`,
        ).toBe(true);
        // 50 runs: their rows, each run's 10 steps twice (counts, failing step), as index entries and heap rows.
        expect(rowsRead(read)).toBeLessThan(SUMMARY_ROWS);
        expect(buffers, mode).toBeLessThanOrEqual(SUMMARY_BUFFERS);
      }
    });

    it(`a run's timeline attempts (${scopeName} scope): index scans, bounded rows, at most ${ATTEMPTS_BUFFERS} buffers`, async () => {
      const [id] = await idsOf([run]);
      for (const generic of [false, true]) {
        const { nodes, buffers } = await explain(runAttemptsQuery(scope, id!), generic);
        const read = nodes.filter((n) => TABLES.has(n['Relation Name']!));
        const mode = generic ? 'generic' : 'custom';
        expect(read.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => `${n['Relation Name']} (${mode})`)).toEqual([]);
        // 10 steps, each with its job and its 2 attempts, plus the job row's own attempt (index entries and heap rows).
        expect(rowsRead(read)).toBeLessThan(ATTEMPTS_ROWS);
        expect(buffers, mode).toBeLessThanOrEqual(ATTEMPTS_BUFFERS);
      }
    });
  }

  for (const [scopeName, scope] of SCOPES) {
    it(`runs by metadata (${scopeName} scope): the newest window only, index scans, at most ${METADATA_BUFFERS} buffers`, async () => {
      for (const generic of [false, true]) {
        const { nodes, buffers } = await explain(runMetadataQuery({ scope, key: 'customer', value: 'c42', statuses: ['COMPLETED_WITH_ERRORS'] }), generic);
        const read = nodes.filter((n) => TABLES.has(n['Relation Name']!));
        const mode = generic ? 'generic' : 'custom';
        expect(read.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => `${n['Relation Name']} (${mode})`)).toEqual([]);
        // The window, read through an index (its heap rows and, for a bitmap scan, its index entries), and the page by primary key.
        expect(rowsRead(read)).toBeLessThan(METADATA_ROWS);
        expect(buffers, mode).toBeLessThanOrEqual(METADATA_BUFFERS);
      }
    });
  }

  it('finds runs by a metadata value, as text', async () => {
    const rows = await db.prisma.$queryRaw<{ metadata: { customer: string; batch: number } }[]>(
      ...asTemplate(runMetadataQuery({ scope: adminScope(), key: 'batch', value: '3', limit: 5 })),
    );
    expect(rows).toHaveLength(6);
    expect(rows.every((row) => row.metadata.batch === 3)).toBe(true);
  });

  it('summarises each run of the page: counts and the failing step', async () => {
    const ids = await idsOf([7, 8]);
    const rows = await db.prisma.$queryRaw<{ workflow_run_id: string; total: number; failed: number; failing_step: string | null }[]>(
      ...asTemplate(runSummariesQuery(adminScope(), ids)),
    );
    expect(rows.map((row) => [row.total, row.failed, row.failing_step])).toEqual([
      [STEPS_PER_RUN, 1, 'step-3'],
      [STEPS_PER_RUN, 1, 'step-3'],
    ]);
    // Another organization's run reads nothing.
    expect(await db.prisma.$queryRaw(...asTemplate(runSummariesQuery(organizationScope('org-small'), ids)))).toEqual([]);
  });
});
