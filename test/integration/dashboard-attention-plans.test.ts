/**
 * "Needs attention" and the workers page stay cheap on a large database: on
 * 400k jobs (a finished history of 380k, the last day's 10k with 1k dead
 * letters, a 9k backlog, 300 leased), 50k finished runs of 4 steps each, and
 * 2,000 live runs (half of them waiting on a person, half RUNNING without an
 * external step), each statement of src/dashboard/attention.ts and
 * fleet.ts's held jobs and slots read job_queue (its leases through
 * job_leases, finished counts from job_counts), workflow_runs and
 * workflow_steps through indexes only, rows bounded by the backlog, the
 * windows and the live runs (never the history), in custom and generic plan
 * modes and every kind of scope.
 */
import type { Sql } from '@prisma/client/runtime/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminScope, noOrganizationScope, organizationScope } from '../../src/index.js';
import type { Scope } from '../../src/db/scope.js';
import { asTemplate } from '../../src/db/sql-template.js';
import { failureGroupsQuery, waitingRunsQuery } from '../../src/dashboard/attention.js';
import { finishedByTypeQuery, heldJobsQuery, pendingByTypeQuery, typeSlotsQuery } from '../../src/dashboard/fleet.js';
import { useTestDatabase } from '../harness/database.js';
import { countFinishedHistory } from '../harness/finished-history.js';
import { explainScans, rowsRead, type PlanNode } from '../harness/plans.js';

const db = useTestDatabase();
const LIVE_RUNS = 2_000;
const STEPS_PER_LIVE_RUN = 5;

beforeAll(async () => {
  await db.prisma.$transaction(
    async (tx) => {
      const org = (n: string) => `CASE WHEN ${n} % 1000 = 1 THEN 'org-small' WHEN ${n} % 2 = 0 THEN 'org-a' END`;
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at, last_error_code)
        SELECT md5('hist' || g)::uuid, 'hist.' || (g % 5), ${org('g')}, '{}',
               (CASE WHEN g % 20 = 0 THEN 'DEAD_LETTERED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
               now() - interval '5 days', now() - interval '5 days', now() - interval '5 days', now() - interval '3 days' - make_interval(secs => g),
               CASE WHEN g % 20 = 0 THEN 'err.' || (g % 7) END
          FROM generate_series(1, 380000) g`);
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at, last_error_code, last_error_message)
        SELECT md5('day' || g)::uuid, 'hist.' || (g % 5), ${org('g')}, '{}',
               (CASE WHEN g % 10 = 0 THEN 'DEAD_LETTERED' ELSE 'SUCCEEDED' END)::runledger.job_status, 1,
               now() - interval '1 day', now() - interval '1 day', now() - interval '1 day', now() - make_interval(secs => g * 8),
               CASE WHEN g % 10 = 0 THEN 'err.' || (g % 3) END, CASE WHEN g % 10 = 0 THEN 'failed' END
          FROM generate_series(1, 10000) g`);
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, priority, next_run_at)
        SELECT md5('live' || g)::uuid, 'live.' || (g % 4), ${org('g')}, '{}', g % 3, now() + make_interval(secs => (g % 200) - 100)
          FROM generate_series(1, 9000) g`);
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.job_queue (id, job_type, payload, status, attempt, lease_owner, lease_expires_at, started_at)
        SELECT md5('leased' || g)::uuid, 'live.' || (g % 4), '{}', 'LEASED', 1, 'w-' || (g % 40), now() + interval '5 minutes', now()
          FROM generate_series(1, 300) g`);
      // Their lease rows, as the claim writes them (migration 20261229000000_job_leases).
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.job_leases (expires_at, job_id) SELECT lease_expires_at, id FROM runledger.job_queue WHERE status = 'LEASED'`);
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.workers (id, host, pid, job_types, concurrency, in_flight, started_at, last_seen_at, expires_at)
        SELECT 'w-' || g, 'host', g, ARRAY['live.' || (g % 4)], 8, 7, now() - interval '1 hour', now(), now() + interval '45 seconds'
          FROM generate_series(0, 39) g`);
      // 50k finished runs of 4 external steps each (200k steps), then the live runs.
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, metadata, created_at, finished_at)
        SELECT md5('run' || r)::uuid, 'wf.' || (r % 3), ${org('r')}, 'SUCCEEDED', '{}', now() - interval '3 days', now() - interval '2 days'
          FROM generate_series(1, 50000) r`);
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, organization_id, status, released_at, finished_at)
        SELECT md5('step' || r || ':' || k)::uuid, md5('run' || r)::uuid, 'step-' || k, 'EXTERNAL', ${org('r')}, 'SUCCEEDED',
               now() - interval '3 days', now() - interval '2 days'
          FROM generate_series(1, 50000) r, generate_series(1, 4) k`);
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, metadata, created_at)
        SELECT md5('lrun' || r)::uuid, 'live.wf', ${org('r')}, 'RUNNING', '{}', now() - interval '1 hour'
          FROM generate_series(1, ${LIVE_RUNS}) r`);
      // Odd live runs: step 1 waits on a person, the rest BLOCKED; even ones: every step BLOCKED (their job steps' jobs elided).
      await tx.$executeRawUnsafe(`
        INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, organization_id, status, released_at)
        SELECT md5('lstep' || r || ':' || k)::uuid, md5('lrun' || r)::uuid, 'step-' || k, 'EXTERNAL', ${org('r')},
               (CASE WHEN r % 2 = 1 AND k = 1 THEN 'WAITING_FOR_EXTERNAL' ELSE 'BLOCKED' END)::runledger.workflow_step_status,
               CASE WHEN r % 2 = 1 AND k = 1 THEN now() - interval '1 hour' END
          FROM generate_series(1, ${LIVE_RUNS}) r, generate_series(1, ${STEPS_PER_LIVE_RUN}) k`);
    },
    { timeout: 600_000 },
  );
  // The finished-job counters the terminal statements would have added for these rows.
  await countFinishedHistory(db.prisma);
  for (const table of ['job_queue', 'job_leases', 'job_counts', 'workflow_runs', 'workflow_steps', 'workers'])
    await db.prisma.$executeRawUnsafe(`ANALYZE runledger.${table}`);
}, 600_000);

const SCOPES: [string, Scope][] = [
  ['admin', adminScope()],
  ['organization', organizationScope('org-a')],
  ['small organization', organizationScope('org-small')],
  ['no organization', noOrganizationScope()],
];

/** Each statement, and the most rows it may read from each table: its bound (backlog, window, live runs), not the history. */
const STATEMENTS: [string, (scope: Scope) => Sql, Record<string, number>][] = [
  ['pending by type', (scope) => pendingByTypeQuery(scope), { job_queue: 9_000 }],
  // From the finished-job counters (job_counts): the window's minutes only.
  ['finished by type in a 1 h window', (scope) => finishedByTypeQuery(scope, 3_600_000), { job_counts: 1_000 }],
  ['failure groups of the last 24 h', (scope) => failureGroupsQuery(scope), { job_queue: 2_000 }],
  ['slots per type', () => typeSlotsQuery, { job_leases: 300, job_queue: 300, workers: 40 }],
  ['held jobs of the listed workers', () => heldJobsQuery(['w-1', 'w-2', 'w-3']), { job_leases: 300, job_queue: 300 }],
  // The live runs and their steps: LIVE_RUNS runs, LIVE_RUNS * 5 steps (a step read is an index entry and its row).
  ['runs waiting on a person', (scope) => waitingRunsQuery(scope), { workflow_runs: LIVE_RUNS, workflow_steps: LIVE_RUNS * STEPS_PER_LIVE_RUN * 2 }],
];

/** Tables of live rows only (a row per worker, per live lease): read whole, bounded below. */
const SMALL_TABLES = new Set(['workers', 'job_leases']);

function readsOf(nodes: PlanNode[], table: string): PlanNode[] {
  return nodes.filter((n) => n['Relation Name'] === table);
}

describe('needs attention on a large database', () => {
  it('holds the history and the live runs', async () => {
    const [row] = await db.prisma.$queryRaw<{ jobs: number; steps: number }[]>`
      SELECT (SELECT count(*)::int FROM runledger.job_queue) AS jobs, (SELECT count(*)::int FROM runledger.workflow_steps) AS steps`;
    expect(row).toEqual({ jobs: 399_300, steps: 210_000 });
  });

  for (const [name, query, bounds] of STATEMENTS) {
    it(`${name}: indexes only, rows bounded, every scope and plan mode`, async () => {
      for (const [scopeName, scope] of SCOPES) {
        for (const generic of [false, true]) {
          const nodes = await explainScans(db.prisma, query(scope), generic);
          const where = `${scopeName}, ${generic ? 'generic' : 'custom'}`;
          expect(
            nodes.filter((n) => n['Node Type'] === 'Seq Scan' && !SMALL_TABLES.has(n['Relation Name'] ?? '')).map((n) => `${n['Relation Name']} (${where})`),
          ).toEqual([]);
          for (const [table, bound] of Object.entries(bounds)) {
            const reads = readsOf(nodes, table);
            expect(reads.length, `${table} read (${where})`).toBeGreaterThan(0);
            expect(rowsRead(reads), `${table} rows (${where})`).toBeLessThanOrEqual(bound);
          }
        }
      }
    });
  }

  it('counts the waiting runs the data holds, in scope', async () => {
    const total = async (scope: Scope) => (await db.prisma.$queryRaw<{ total: number }[]>(...asTemplate(waitingRunsQuery(scope))))[0]!.total;
    expect(await total(adminScope())).toBe(LIVE_RUNS / 2);
    // Odd runs wait; org-a holds the even ones, org-small those with r % 1000 = 1 (all odd).
    expect(await total(organizationScope('org-a'))).toBe(0);
    expect(await total(organizationScope('org-small'))).toBe(2);
    expect(await total(noOrganizationScope())).toBe(LIVE_RUNS / 2 - 2);
  });
});
