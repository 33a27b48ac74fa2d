/**
 * `verifyIntegrity`: recomputes runledger's invariants from the rows
 * themselves and reports every place where the stored state disagrees (see
 * violations.ts for the list). Read-only and paged, so it can run against a
 * production database:
 *   - runs are read by keyset on their primary key (`id > last ORDER BY id
 *     LIMIT pageSize`); each page's steps, edges and jobs are reached through
 *     indexes on the page's ids (scripts/integrity-explain.ts shows the plans
 *     on a million jobs);
 *   - then jobs the same way (every job, direct or workflow-managed), unless
 *     `workflowRunIds` narrows the check to those runs and their jobs;
 *   - then, with the jobs, the lease rows by their primary key (lease-checks.ts);
 *   - each page is one short REPEATABLE READ, READ ONLY transaction, so its
 *     statements see one snapshot: a run and its jobs are never compared
 *     across a concurrent commit. Joined to a caller's transaction, the
 *     caller's snapshot rules instead.
 * Nothing is locked beyond what any read takes; live traffic keeps flowing.
 * The check is exact only for committed state: a page taken while a run
 * changes sees the run before or after the change, never half of it.
 *
 * Not checked: the one terminal notification per run. The notification is a
 * `pg_notify` inside the transaction that makes the run terminal; nothing in
 * the database records that it was sent (the chaos run counts them with a
 * listener instead).
 */
import { z } from 'zod';
import { isDatabaseError, normalizeDatabaseError } from '../errors/database-error.js';
import { isTransactionClient, type Db, type PrismaClientLike, type Tx } from '../client/types.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { parseInput } from '../validation/parse.js';
import { uuid } from '../validation/primitives.js';
import { checkCoordination } from './coordination-checks.js';
import { checkJobs, checkReplayLineage } from './job-checks.js';
import { FIRST_LEASE_KEY, checkConcurrencyCounts, checkLeaseRows } from './lease-checks.js';
import { checkRecoveries } from './recovery-checks.js';
import { checkEnqueueIntents } from './intent-checks.js';
import { checkFunctionSteps } from './function-checks.js';
import { checkEdges, checkRuns, checkStepJobs, checkSteps, jobIdsOfRuns } from './run-checks.js';
import { toViolation, type IntegrityViolation, type ViolationRow } from './violations.js';
import { inScope } from '../db/fragments.js';

export const INTEGRITY_INVALID_INPUT = 'integrity.invalid_input';
export const DEFAULT_INTEGRITY_PAGE_SIZE = 500;
export const DEFAULT_MAX_VIOLATIONS = 1_000;
const OPERATION = 'verify integrity';
/** Below every generated id: the keyset starts after it, so every page is one `id > $after` index range (no OR for a generic plan to fall back on). */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

const verifyIntegritySchema = z.strictObject({
  scope: scopeSchema.default({ kind: 'admin' }),
  workflowRunIds: z.array(uuid).min(1).max(10_000).optional(),
  pageSize: z.number().int().min(1).max(5_000).default(DEFAULT_INTEGRITY_PAGE_SIZE),
  maxViolations: z.number().int().min(1).max(1_000_000).default(DEFAULT_MAX_VIOLATIONS),
});

export interface VerifyIntegrityOptions {
  /** Default admin (everything). An organization or the global scope checks only its own runs and jobs. */
  scope?: Scope;
  /** Check only these runs and their jobs (direct jobs are then not checked). */
  workflowRunIds?: string[];
  /** Runs or jobs per page (one short transaction each). Default 500. */
  pageSize?: number;
  /** Stop after this many violations (`truncated` is then true). Default 1000. */
  maxViolations?: number;
}

export interface IntegrityReport {
  /** True when no violation was found. */
  clean: boolean;
  violations: IntegrityViolation[];
  /** True when the check stopped at `maxViolations`; more may exist. */
  truncated: boolean;
  checked: { runs: number; jobs: number };
}

/**
 * Checks the database (or one scope, or some runs) and reports every
 * violation of runledger's invariants with its ids. Never writes.
 *
 * @example
 * const report = await verifyIntegrity(prisma, { pageSize: 1000 });
 * for (const v of report.violations) console.error(v.kind, v.workflowRunId ?? v.jobId, v.expected, v.found);
 */
export async function verifyIntegrity(db: Db, options: VerifyIntegrityOptions = {}): Promise<IntegrityReport> {
  const input = parseInput(verifyIntegritySchema, options, INTEGRITY_INVALID_INPUT, 'options');
  const scope = scopeParams(input.scope);
  const report: IntegrityReport = { clean: true, violations: [], truncated: false, checked: { runs: 0, jobs: 0 } };
  const add = (rows: ViolationRow[]) => {
    for (const row of rows) {
      if (report.violations.length >= input.maxViolations) {
        report.truncated = true;
        return;
      }
      report.violations.push(toViolation(row));
    }
  };
  const wanted = input.workflowRunIds ? [...new Set(input.workflowRunIds)].sort() : null;

  let afterRun = NIL_UUID;
  while (!report.truncated) {
    const done: boolean = await inSnapshot(db, async (tx) => {
      const runIds = await runPage(tx, scope, wanted, afterRun, input.pageSize);
      if (runIds.length === 0) return true;
      afterRun = runIds[runIds.length - 1]!;
      report.checked.runs += runIds.length;
      add(await checkRuns(tx, runIds));
      add(await checkSteps(tx, runIds));
      add(await checkStepJobs(tx, runIds));
      add(await checkEdges(tx, runIds));
      add(await checkRecoveries(tx, runIds));
      add(await checkCoordination(tx, runIds));
      add(await checkFunctionSteps(tx, runIds));
      if (wanted) {
        // Only these runs: their jobs are checked here, not by the job scan below.
        const jobIds = await jobIdsOfRuns(tx, runIds);
        report.checked.jobs += jobIds.length;
        if (jobIds.length > 0) add(await checkJobSet(tx, jobIds));
      }
      return runIds.length < input.pageSize;
    });
    if (done) break;
  }

  let afterJob = NIL_UUID;
  while (!wanted && !report.truncated) {
    const done: boolean = await inSnapshot(db, async (tx) => {
      const jobIds = await jobPage(tx, scope, afterJob, input.pageSize);
      if (jobIds.length === 0) return true;
      afterJob = jobIds[jobIds.length - 1]!;
      report.checked.jobs += jobIds.length;
      add(await checkJobSet(tx, jobIds));
      return jobIds.length < input.pageSize;
    });
    if (done) break;
  }

  let afterLease = FIRST_LEASE_KEY;
  while (!wanted && !report.truncated) {
    const done: boolean = await inSnapshot(db, async (tx) => {
      const page = await checkLeaseRows(tx, scope, afterLease, input.pageSize);
      add(page.violations);
      if (page.last) afterLease = page.last;
      return page.size < input.pageSize;
    });
    if (done) break;
  }

  // A concurrency key is shared by every organization's jobs: its count is the admin's to check.
  let afterKey = '';
  while (!wanted && !report.truncated && scope.all) {
    const done: boolean = await inSnapshot(db, async (tx) => {
      const page = await checkConcurrencyCounts(tx, afterKey, input.pageSize);
      add(page.violations);
      if (page.last !== null) afterKey = page.last;
      return page.size < input.pageSize;
    });
    if (done) break;
  }
  report.clean = report.violations.length === 0;
  return report;
}

type ScopeParams = ReturnType<typeof scopeParams>;

/**
 * One page of run ids in scope, by primary key. Organization ids are compared
 * as text, so the check does not depend on the column's type.
 */
async function runPage(tx: Tx, s: ScopeParams, wanted: string[] | null, after: string, limit: number): Promise<string[]> {
  const rows = wanted
    ? await tx.$queryRaw<{ id: string }[]>`
        SELECT r.id FROM runledger.workflow_runs r
         WHERE r.id = ANY(${wanted}::uuid[]) AND r.id > ${after}::uuid
           AND ${inScope(s, 'r.organization_id')}
         ORDER BY r.id
         LIMIT ${limit}::int`
    : await tx.$queryRaw<{ id: string }[]>`
        SELECT r.id FROM runledger.workflow_runs r
         WHERE r.id > ${after}::uuid
           AND ${inScope(s, 'r.organization_id')}
         ORDER BY r.id
         LIMIT ${limit}::int`;
  return rows.map((row) => row.id);
}

async function jobPage(tx: Tx, s: ScopeParams, after: string, limit: number): Promise<string[]> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT j.id FROM runledger.job_queue j
     WHERE j.id > ${after}::uuid
       AND ${inScope(s, 'j.organization_id')}
     ORDER BY j.id
     LIMIT ${limit}::int`;
  return rows.map((row) => row.id);
}

/** A short REPEATABLE READ, READ ONLY transaction on a root client; the caller's own on a transaction client. */
async function inSnapshot<R>(db: Db, fn: (tx: Tx) => Promise<R>): Promise<R> {
  try {
    if (isTransactionClient(db)) return await fn(db);
    return await (db as PrismaClientLike).$transaction(
      async (tx: Tx) => {
        await tx.$executeRaw`SET TRANSACTION READ ONLY`;
        return fn(tx);
      },
      { isolationLevel: 'RepeatableRead', maxWait: 10_000, timeout: 120_000 },
    );
  } catch (error) {
    throw isDatabaseError(error) ? normalizeDatabaseError(error, OPERATION) : error;
  }
}

/** Every check of a set of jobs: the job rows, their replay lineage, their enqueue intents. */
async function checkJobSet(tx: Tx, jobIds: string[]): Promise<ViolationRow[]> {
  return [...(await checkJobs(tx, jobIds)), ...(await checkReplayLineage(tx, jobIds)), ...(await checkEnqueueIntents(tx, jobIds))];
}
