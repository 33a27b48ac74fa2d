/**
 * SQL fragments that more than one statement needs, each written once. A
 * statement interpolates them (`sqltag` nesting keeps every value a bind
 * parameter); the column texts below are code constants, never input.
 *
 * - The scope predicate, in two plan shapes. `inScope`: one statement text
 *   for every scope (the scope is two parameters), so a prepared statement
 *   serves every tenant; its equality arm can still use an index on
 *   `organization_id`. `inScopeByKind`: a different text per scope kind
 *   (TRUE / IS NULL / = $1), for reads whose plan must match a partial or
 *   per-organization index under a generic plan (the dashboard, bulk
 *   requeue).
 * - The lease fence: a lifecycle write of a leased job names the lease it
 *   holds (job id, run, attempt, owner: one lease's values, or a batch's input
 *   rows), and the write itself re-checks that the job is still LEASED and
 *   its lease not expired at the time of the write (src/queue/lifecycle.ts
 *   explains the lease clock).
 * - Clearing the lease when an attempt ends or is given back.
 * - The leased jobs, read through their lease rows (runledger.job_leases: one
 *   per live lease, so the read costs the fleet's concurrency, not the table).
 * - The terminal run statuses, and "a run is over and quiescent": no canceled
 *   job of it still holds a live lease (its handler may still be running), the
 *   rule that frees a run's active key and lets a run be recovered.
 */
import { empty, raw, sqltag, type Sql } from '@prisma/client/runtime/client';
import type { JobLease } from '../model/job-rows.js';
import { TERMINAL_RUN_STATUSES } from '../model/workflow-rows.js';
import { assertScopeHasOrganization, scopeParams, type Scope } from './scope.js';

/** What `scopeParams` makes of a scope: all rows, or the rows of one organization (null: of none). */
export type ScopeParams = ReturnType<typeof scopeParams>;

/**
 * `column` (e.g. 'jq.organization_id') is in scope: one text for every scope.
 * Equivalent to `(all OR column IS NOT DISTINCT FROM organization)`, written
 * so the equality arm can use an index.
 */
export function inScope(scope: Scope | ScopeParams, column: string | Sql): Sql {
  const s = 'kind' in scope ? scopeParams(scope) : scope;
  const col = typeof column === 'string' ? raw(column) : column;
  return sqltag`(${s.all}::boolean OR (${s.organizationId}::text IS NULL AND ${col} IS NULL) OR ${col} = ${s.organizationId}::text)`;
}

/** `column` is in scope: a text per scope kind, so a generic plan still matches partial and per-organization indexes. */
export function inScopeByKind(scope: Scope, column: string | Sql): Sql {
  assertScopeHasOrganization(scope);
  const col = typeof column === 'string' ? raw(column) : column;
  switch (scope.kind) {
    case 'admin':
      return sqltag`TRUE`;
    case 'no_organization':
      return sqltag`${col} IS NULL`;
    case 'organization':
      return sqltag`${col} = ${scope.organizationId}::text`;
  }
}

/** What names a lease: its job, run, attempt and owner. */
export type LeaseName = Pick<JobLease, 'jobId' | 'runNumber' | 'attempt' | 'workerId'>;

/** A batch's leases: the alias of input rows with columns `job_id, run_number, attempt, worker_id`. */
export interface LeaseRows {
  rows: string;
}

/** The job row `jq` is the one the lease names (id, run, attempt, owner): the lock CTE's match. */
export function leaseIdentity(l: LeaseName | LeaseRows): Sql {
  if ('rows' in l) {
    const i = raw(l.rows);
    return sqltag`jq.id = ${i}.job_id AND jq.run_number = ${i}.run_number AND jq.attempt = ${i}.attempt AND jq.lease_owner = ${i}.worker_id`;
  }
  return sqltag`jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
           AND jq.lease_owner = ${l.workerId}`;
}

/**
 * The job row `jq` is still LEASED and its lease not expired at `at` (the write's clock). The status is
 * compared as text so no partial index on `status = 'LEASED'` matches: a batch probes each lease by primary
 * key, never by a bitmap of a partial index on LEASED rows (job_queue_lease_expiry_idx, until migration
 * 20261229000000 moved leases to job_leases), whose dead entries it would read too.
 */
export function leaseLive(at: Sql): Sql {
  return sqltag`jq.status::text = 'LEASED' AND jq.lease_expires_at > ${at}`;
}

/** The lease fence of a write: the lease's job row, still LEASED, its lease not expired at `at` (the write's clock). */
export function leaseFence(l: LeaseName | LeaseRows, at: Sql): Sql {
  return sqltag`${leaseIdentity(l)} AND ${leaseLive(at)}`;
}

/**
 * Two CTEs that open a single-lease write: `locked` locks the lease's job row
 * (its id, then `columns`, e.g. sqltag`, jq.stage AS previous_stage`), and
 * `clock` reads the time after that lock is held, so a write fenced at
 * `clock.at` (`leaseFence`) judges the lease at the time it writes, not when
 * its statement began waiting (src/queue/lifecycle.ts: the lease clock).
 * Neither has a row when the lease no longer names the job.
 */
export function lockedLeaseAndClock(l: LeaseName, columns: Sql = empty): Sql {
  return sqltag`locked AS MATERIALIZED (
      SELECT jq.id${columns} FROM runledger.job_queue jq
       WHERE ${leaseIdentity(l)}
         FOR UPDATE
    ),
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM locked)`;
}

/**
 * The LEASED jobs `jq` through their live lease rows `l`, as a FROM clause with its WHERE (append `AND ...`):
 * one primary-key probe of job_queue per lease (migration 20261229000000_job_leases: job_queue has no lease index).
 */
export const LEASED_JOBS = sqltag`runledger.job_leases l JOIN runledger.job_queue jq ON jq.id = l.job_id
     WHERE NOT l.canceled AND jq.status = 'LEASED' AND jq.lease_expires_at = l.expires_at`;

/**
 * The PENDING (claimable) jobs matching `where` (on `jq`), with `columns` (on `jq`), as `jq`: the jobs without a
 * fairness key and the fair ones, each half stated on its own indexes' predicate (the claim indexes hold only
 * the first, job_queue_fair_by_type_idx the second: migration 20270101000003_fair_claims), so a count by type
 * stays an index-only read of the backlog.
 */
export function pendingJobs(columns: Sql, where: Sql): Sql {
  return sqltag`(SELECT ${columns} FROM runledger.job_queue jq WHERE jq.claimable AND jq.fair_key IS NULL AND ${where}
                 UNION ALL
                 SELECT ${columns} FROM runledger.job_queue jq WHERE jq.claimable AND jq.fair_key IS NOT NULL AND ${where}) jq`;
}

/** SET items that give up the lease (an attempt ended or was given back). */
export const CLEAR_LEASE = sqltag`lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL`;

/** `status IN TERMINAL_RUN`: a run's statuses once it is over (SUCCEEDED, COMPLETED_WITH_ERRORS, CANCELED). */
export const TERMINAL_RUN = raw(`(${TERMINAL_RUN_STATUSES.map((status) => `'${status}'`).join(', ')})`);

/**
 * The run row `run` (an alias or table name) waits on a person: some step of it is WAITING_FOR_EXTERNAL. A
 * WAITING_FOR_EXTERNAL run always has one; a RUNNING run may (its external step's dependents are BLOCKED, and
 * blocked steps keep a run RUNNING); a finished run never does (the last live step ended it). So only a RUNNING
 * run is probed, through the run's steps (workflow_steps_run_key_key): the cost is the steps of the live runs
 * read, never the history. No index on step status: it would make every step transition a non-HOT update.
 * A scalar subquery, not EXISTS: PostgreSQL may run an EXISTS as a hashed subplan over every step of every
 * run (a sequential scan: 790 ms at 505k steps for a page of 1,000 live runs, against 68-93 ms probing).
 */
export function runWaitingForExternal(run: string | Sql): Sql {
  const r = typeof run === 'string' ? raw(run) : run;
  return sqltag`(CASE ${r}.status WHEN 'WAITING_FOR_EXTERNAL' THEN true
          WHEN 'RUNNING' THEN (SELECT true FROM runledger.workflow_steps waiting_step
                                WHERE waiting_step.workflow_run_id = ${r}.id AND waiting_step.status = 'WAITING_FOR_EXTERNAL' LIMIT 1) IS NOT NULL
          ELSE false END)`;
}

/**
 * The canceled jobs of the run `runId` that still hold a live lease (their handlers may still be running),
 * as a FROM clause with its WHERE: `SELECT 1 FROM ${quiescingJobs(...)}`.
 */
export function quiescingJobs(runId: Sql): Sql {
  return sqltag`runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${runId} AND jq.status = 'CANCELED' AND jq.lease_expires_at > clock_timestamp()`;
}

/** The run row `run` (an alias) is over and quiescent: terminal, and no canceled job of it still leased. */
export function runQuiescent(run: string): Sql {
  const r = raw(run);
  return sqltag`${r}.status IN ${TERMINAL_RUN}
         AND NOT EXISTS (SELECT 1 FROM ${quiescingJobs(sqltag`${r}.id`)})`;
}
