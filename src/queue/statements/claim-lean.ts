/**
 * The lean claim (src/queue/claim.ts decides when it runs): the claim of claim-jobs.ts for a queue whose head
 * names no fairness, concurrency or rate key, without the statement parts those keys need. A claim of a few
 * jobs spends most of its server time starting and ending its plan, not running it: the full statement's
 * plan opens every flow-control table and index whether or not a job names one.
 *
 * It leases what the full claim would lease first, or less, never something else:
 * - nothing while any claimable job of its types names a fairness key (the full claim gives those turns);
 * - of the due jobs without a fairness key, in claim order, only those before the first that names a
 *   concurrency or rate key (the full claim would admit that one or pass over it; either way it takes the
 *   jobs before it first);
 * and says so (`needs_full`), so the caller sends the full claim for the rest. Execution resources are
 * tested as in the full claim. The keyed rows the scan locked and did not lease are unlocked when the
 * statement ends (it runs only as an autocommit statement).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { RESOURCE_FREE_HEAD, plainScan, scanBucket, typeValues } from './claim-scan.js';
import { claimWrites } from './claim-writes.js';
import { claimResult } from './claim-result.js';

export interface LeanClaimParams {
  workerId: string;
  jobTypes?: string[] | undefined;
  limit: number;
  leaseSeconds: number;
  markRunning: boolean;
}

export function leanClaimStatement({ workerId, jobTypes, limit, leaseSeconds, markRunning }: LeanClaimParams): Sql {
  // One probe of a fairness index for its first entry, due or not (a key waiting for its time still makes
  // the lean claim decline: it is rare, and the full claim handles it).
  const fairWaiting =
    jobTypes === undefined
      ? sqltag`EXISTS (SELECT 1 FROM runledger.job_queue f WHERE f.claimable AND f.fair_key IS NOT NULL)`
      : sqltag`EXISTS (SELECT 1 FROM ${typeValues(jobTypes)}
                 WHERE EXISTS (SELECT 1 FROM runledger.job_queue f WHERE f.claimable AND f.fair_key IS NOT NULL AND f.job_type = t.job_type))`;
  return sqltag`
      -- The full claim's scan and writes (claim-scan.ts, claim-writes.ts) without its fairness walk or admissions.
      WITH lean_fair_waiting AS MATERIALIZED (SELECT ${fairWaiting} AS yes),
      head AS (
        SELECT h.id, h.ctid,
               bool_or(h.concurrency_key IS NOT NULL OR h.rate_key IS NOT NULL) OVER (ORDER BY h.priority DESC, h.next_run_at, h.id) AS keyed
          FROM (${plainScan({ jobTypes, limit, bucket: scanBucket(limit, jobTypes), open: RESOURCE_FREE_HEAD })}) h
      ),
      admitted AS (
        SELECT id, ctid, NULL::int AS concurrency_seat FROM head WHERE NOT keyed AND NOT (SELECT yes FROM lean_fair_waiting)
      ),
      ${claimWrites({ workerId, leaseSeconds, markRunning })},
      ${claimResult(sqltag`SELECT (SELECT yes FROM lean_fair_waiting) OR EXISTS (SELECT 1 FROM head WHERE keyed) AS needs_full`)}`;
}
