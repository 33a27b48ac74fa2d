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
 *   holds (job id, run, attempt, owner), and the write itself re-checks that
 *   the job is still LEASED and its lease not expired at the time of the
 *   write (src/queue/lifecycle.ts explains the lease clock).
 * - Clearing the lease when an attempt ends or is given back.
 */
import { empty, raw, sqltag, type Sql } from '@prisma/client/runtime/client';
import type { JobLease } from '../model/job-rows.js';
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

/** The job row `jq` is the one this lease names (id, run, attempt, owner): the lock CTE's match. */
export function leaseIdentity(l: LeaseName): Sql {
  return sqltag`jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
           AND jq.lease_owner = ${l.workerId}`;
}

/** The lease fence of a write: the lease's job row, still LEASED, its lease not expired at `at` (the write's clock). */
export function leaseFence(l: LeaseName, at: Sql): Sql {
  return sqltag`${leaseIdentity(l)} AND jq.status = 'LEASED' AND jq.lease_expires_at > ${at}`;
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

/** SET items that give up the lease (an attempt ended or was given back). */
export const CLEAR_LEASE = sqltag`lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL`;
