/**
 * The dead-letters page's list: direct dead letters grouped by type and last
 * error code (replay/bulk-requeue.ts builds the statement beside the filter a
 * group's requeue uses), each with how many live workers serve its type, so
 * the page can warn before requeueing work nobody will run (the queues page's
 * rule: liveWorkersByTypeQuery). Jobs are read in the request's scope; the
 * worker counts are per type, as a tenant's queues page already shows them.
 */
import { withStatement } from '../client/transaction.js';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { asTemplate } from '../db/sql-template.js';
import { deadLetterGroupsQuery, MAX_BULK_REQUEUE, MAX_DEAD_LETTER_GROUPS } from '../replay/bulk-requeue.js';
import { liveWorkersByTypeQuery } from './fleet.js';

export interface DeadLetterGroup {
  jobType: string;
  /** The jobs' last error code; null when none was recorded (such a group cannot be requeued by filter). */
  errorCode: string | null;
  count: number;
  oldestAt: Date;
  newestAt: Date;
  /** The newest job's error message, at most 500 characters. */
  sampleMessage: string | null;
  liveWorkers: number;
  /** No live worker handles the type: requeued jobs would wait. */
  unserved: boolean;
}

interface GroupRow {
  job_type: string;
  last_error_code: string | null;
  n: number;
  oldest: Date;
  newest: Date;
  message: string | null;
}

export async function readDeadLetterGroups(db: Db, scope: Scope): Promise<{ asOf: Date; groups: DeadLetterGroup[]; truncated: boolean; cap: number }> {
  const read = <R>(name: string, query: Parameters<typeof asTemplate>[0]) =>
    withStatement(db, `dashboard dead letters: ${name}`, async (tx) => tx.$queryRaw<R[]>(...asTemplate(query)), { readCommitted: false });
  const [rows, workers] = await Promise.all([
    read<GroupRow>('groups', deadLetterGroupsQuery(scope)),
    read<{ job_type: string; workers: number }>('workers', liveWorkersByTypeQuery),
  ]);
  const live = new Map(workers.map((row) => [row.job_type, row.workers]));
  const groups = rows.slice(0, MAX_DEAD_LETTER_GROUPS).map((row): DeadLetterGroup => {
    const liveWorkers = live.get(row.job_type) ?? 0;
    return {
      jobType: row.job_type,
      errorCode: row.last_error_code,
      count: row.n,
      oldestAt: row.oldest,
      newestAt: row.newest,
      sampleMessage: row.message,
      liveWorkers,
      unserved: liveWorkers === 0,
    };
  });
  return { asOf: new Date(), groups, truncated: rows.length > MAX_DEAD_LETTER_GROUPS, cap: MAX_BULK_REQUEUE };
}
