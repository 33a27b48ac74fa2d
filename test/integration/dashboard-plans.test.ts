/**
 * The dashboard's search and throughput chart stay cheap on a large history:
 * on 200k jobs, 100k runs and 100k attempts (generated set-based, with the
 * finished-job counters), every statement reads job_queue, workflow_runs,
 * job_attempts and job_counts through the
 * indexes named here, never sequentially, and the rows its scans return are
 * bounded by the id prefix's range, the key search window or the hour, not
 * by the table. Checked with EXPLAIN ANALYZE in custom and generic plan
 * modes, in every kind of scope, including an organization with few rows
 * (where a plan that walked the primary key filtering by organization would
 * read the whole table to fill the key window).
 */
import type { Sql } from '@prisma/client/runtime/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminScope, noOrganizationScope, organizationScope } from '../../src/index.js';
import type { Scope } from '../../src/db/scope.js';
import { jobSearchQuery, KEY_SEARCH_WINDOW, parseSearch, runSearchQuery } from '../../src/dashboard/search.js';
import { throughputQuery } from '../../src/dashboard/throughput.js';
import { useTestDatabase } from '../harness/database.js';
import { countFinishedHistory } from '../harness/finished-history.js';
import { explainScans, rowsRead, type PlanNode } from '../harness/plans.js';

const db = useTestDatabase();

beforeAll(async () => {
  // md5-derived ids: spread over the whole uuid space like random bits, but reproducible.
  // Organizations: org-a half the rows, org-small one in a thousand, the rest none.
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at, idempotency_key, enqueue_request)
    SELECT md5('job' || g)::uuid, 'hist.' || (g % 5), CASE WHEN g % 1000 = 1 THEN 'org-small' WHEN g % 2 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 50 = 0 THEN 'DEAD_LETTERED' WHEN g % 70 = 0 THEN 'CANCELED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           now() - interval '3 days', now() - interval '3 days', now() - interval '3 days', now() - interval '2 days' - make_interval(secs => g),
           CASE WHEN g % 3 = 0 THEN 'Order-' || g END, CASE WHEN g % 3 = 0 THEN '{}'::jsonb END
      FROM generate_series(1, 200000) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at)
    SELECT md5('recent' || g)::uuid, 'recent', CASE WHEN g % 2 = 0 THEN 'org-a' END, '{}',
           (CASE WHEN g % 10 = 0 THEN 'DEAD_LETTERED' WHEN g % 15 = 0 THEN 'CANCELED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
           now() - interval '50 minutes', now() - interval '50 minutes', now() - interval '49 minutes', now() - make_interval(secs => g * 10)
      FROM generate_series(1, 300) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome)
    SELECT md5('job' || g)::uuid, 1, 1, 'w', now() - interval '3 days', now() - interval '2 days',
           (CASE WHEN g % 4 = 0 THEN 'SUCCEEDED' ELSE 'FAILED_RETRY' END)::runledger.job_attempt_outcome
      FROM generate_series(1, 100000) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.job_attempts (job_id, run_number, attempt, worker_id, started_at, finished_at, outcome)
    SELECT md5('recent' || g)::uuid, 1, 1, 'w', now() - interval '50 minutes', now() - make_interval(secs => g * 10), 'FAILED_RETRY'
      FROM generate_series(1, 300) g`;
  await db.prisma.$executeRaw`
    INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, created_at, finished_at, idempotency_key, enqueue_request)
    SELECT md5('run' || g)::uuid, 'wf.' || (g % 3), CASE WHEN g % 1000 = 1 THEN 'org-small' WHEN g % 2 = 0 THEN 'org-a' END,
           'SUCCEEDED', now() - interval '3 days' + make_interval(secs => g), now() - interval '2 days', CASE WHEN g % 3 = 0 THEN 'Invoice-' || g END, CASE WHEN g % 3 = 0 THEN '{}'::jsonb END
      FROM generate_series(1, 100000) g`;
  // The finished-job counters the terminal statements would have added for these rows.
  await countFinishedHistory(db.prisma);
  for (const table of ['job_queue', 'job_attempts', 'workflow_runs', 'job_counts']) await db.prisma.$executeRawUnsafe(`ANALYZE runledger.${table}`);
}, 180_000);

const explain = (query: Sql, generic: boolean): Promise<PlanNode[]> => explainScans(db.prisma, query, generic);

const SCOPES: [string, Scope][] = [
  ['admin', adminScope()],
  ['organization', organizationScope('org-a')],
  ['small organization', organizationScope('org-small')],
  ['no organization', noOrganizationScope()],
];

const TABLES = new Set(['job_queue', 'workflow_runs', 'job_attempts', 'job_counts']);

/**
 * The index a scope's newest rows come from: admin's the primary key, an
 * organization's its index; rows without an organization are half the table
 * here, so walking the primary key and skipping the others is as good.
 */
const newest = (scope: Scope, pkey: string, orgIndex: string) =>
  scope.kind === 'admin' ? pkey : scope.kind === 'organization' ? orgIndex : `${pkey}|${orgIndex}`;

interface Case {
  name: string;
  query: (scope: Scope) => Sql;
  /** Rows all scans may read. */
  bound: number;
  /** Indexes the plan must use, by scope kind (`a|b`: either). */
  indexes: (scope: Scope) => string[];
}

const CASES: Case[] = [
  {
    name: 'job id prefix',
    query: (scope) => jobSearchQuery({ scope, term: parseSearch('a3f0') }),
    bound: 200,
    indexes: (scope) => [newest(scope, 'job_queue_pkey', 'job_queue_org_created_idx')],
  },
  {
    name: 'job key substring (newest window)',
    query: (scope) => jobSearchQuery({ scope, term: parseSearch('order-12') }),
    bound: KEY_SEARCH_WINDOW * 2 + 200,
    indexes: (scope) => [newest(scope, 'job_queue_pkey', 'job_queue_org_created_idx')],
  },
  {
    name: 'job key substring with type (window + exact key at any age)',
    query: (scope) => jobSearchQuery({ scope, term: parseSearch('Order-3'), type: 'hist.3' }),
    bound: KEY_SEARCH_WINDOW * 2 + 200,
    indexes: () => ['job_queue_idempotency_key_uidx'],
  },
  {
    name: 'run id prefix',
    query: (scope) => runSearchQuery({ scope, term: parseSearch('7c1e') }),
    bound: 200,
    indexes: () => ['workflow_runs_pkey'],
  },
  {
    name: 'run key substring (newest window)',
    query: (scope) => runSearchQuery({ scope, term: parseSearch('invoice-9') }),
    bound: KEY_SEARCH_WINDOW * 2 + 200,
    indexes: (scope) => [scope.kind === 'organization' ? 'workflow_runs_org_created_idx' : 'workflow_runs_pkey'],
  },
  {
    name: 'run key substring with type',
    query: (scope) => runSearchQuery({ scope, term: parseSearch('Invoice-30'), type: 'wf.0' }),
    bound: KEY_SEARCH_WINDOW * 2 + 200,
    indexes: () => ['workflow_runs_idempotency_key_uidx'],
  },
  {
    name: 'throughput by minute',
    query: (scope) => throughputQuery(scope),
    // The hour's counter rows (at most 300 here) and 300 recent retried attempts (each with its job by primary key
    // outside admin).
    bound: 1_500,
    indexes: () => ['job_counts_pkey', 'job_attempts_failed_retry_idx'],
  },
];

describe('dashboard plans on 200k jobs, 100k runs, 100k attempts', () => {
  for (const c of CASES) {
    for (const [scopeName, scope] of SCOPES) {
      it(`${c.name} (${scopeName} scope): index scans only, bounded rows`, async () => {
        for (const generic of [false, true]) {
          const nodes = (await explain(c.query(scope), generic)).filter((n) => TABLES.has(n['Relation Name']!));
          const mode = generic ? 'generic' : 'custom';
          expect(nodes.length).toBeGreaterThan(0);
          expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => `${n['Relation Name']} (${mode})`)).toEqual([]);
          const used = new Set(nodes.map((n) => n['Index Name']));
          for (const index of c.indexes(scope))
            expect(
              index.split('|').some((name) => used.has(name)),
              `${index} (${mode}) in ${[...used].join(', ')}`,
            ).toBe(true);
          expect(rowsRead(nodes)).toBeLessThan(c.bound);
        }
      });
    }
  }
});
