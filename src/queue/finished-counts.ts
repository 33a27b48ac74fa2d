/**
 * Reading the finished-job counters (job_counts, written by src/queue/statements/finished-counts.ts): the
 * scope predicate on their organization column ('' stands for "no organization", which no host id can be:
 * a blank organization is refused everywhere).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { assertScopeHasOrganization, type Scope } from '../db/scope.js';

/** `column` (a job_counts organization_id) is in `scope`: a text per scope kind, as inScopeByKind. */
export function countsInScope(scope: Scope, column: Sql): Sql {
  assertScopeHasOrganization(scope);
  switch (scope.kind) {
    case 'admin':
      return sqltag`TRUE`;
    case 'no_organization':
      return sqltag`${column} = ''`;
    case 'organization':
      return sqltag`${column} = ${scope.organizationId}::text`;
  }
}

/**
 * The counter rows of `scope` for the minutes that overlap (from, until]: each minute counts whole, so a
 * window reads up to a minute before its start. Columns: job_type, status, workflow, count.
 */
export function finishedCountRows(scope: Scope, from: Sql, until: Sql): Sql {
  return sqltag`
    SELECT c.job_type, c.status, c.workflow, c.count
      FROM runledger.job_counts c
     WHERE c.minute > ${from} - interval '1 minute' AND c.minute <= ${until}
       AND ${countsInScope(scope, sqltag`c.organization_id`)}`;
}

/**
 * How long counter rows are kept: the longest window read (getQueueMetrics' dead letters, 24 h) and an hour.
 * purgeFinished deletes older ones, never ones newer than its own cutoff.
 */
export const FINISHED_COUNTS_KEPT_MS = 25 * 3_600_000;

/** Deletes counter rows older than FINISHED_COUNTS_KEPT_MS and than `cutoff` (old minutes: no writer adds to them). */
export function pruneFinishedCountsStatement(cutoff: Date): Sql {
  return sqltag`
    DELETE FROM runledger.job_counts
     WHERE minute < LEAST(${cutoff}::timestamptz, now() - ${FINISHED_COUNTS_KEPT_MS}::float8 * interval '1 millisecond')`;
}
