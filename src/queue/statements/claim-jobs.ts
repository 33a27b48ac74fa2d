/**
 * The claim (src/queue/claim.ts runs it and states its invariants): one statement leases a batch of
 * runnable jobs to one worker and returns what its handlers need, with every kind of flow control:
 * fairness keys, concurrency and rate keys, execution resources. claim-lean.ts is its shape for a queue
 * without fairness, concurrency or rate keys at its head.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { concurrencyOpen, concurrencyAdmission, takeConcurrencySeats } from './concurrency-slots.js';
import { rateAdmission, rateOpen, takeRateTokens } from './rate-slots.js';
import { FAIR_NEXT, fairBranch } from './fair-turns.js';
import { RESOURCE_FREE_HEAD, plainScan, scanBucket } from './claim-scan.js';
import { claimWrites } from './claim-writes.js';
import { claimResult } from './claim-result.js';

export interface ClaimParams {
  workerId: string;
  jobTypes?: string[] | undefined;
  limit: number;
  leaseSeconds: number;
  markRunning: boolean;
  /** Where the walk over fairness keys starts (src/queue/statements/fair-turns.ts); '' : the first key. */
  fairAfter: string;
}

export function claimJobsStatement({ workerId, jobTypes, limit, leaseSeconds, markRunning, fairAfter }: ClaimParams): Sql {
  // Statement shapes whose generic plan (a prepared statement's, see preparedStatementName) costs what a
  // custom one does, so PostgreSQL reuses it instead of planning the whole CTE on every claim (planning cost
  // about as much as running it): typed and untyped claims each have only their own branch (a dead branch
  // behind a one-time filter on a parameter is costed as if it ran), the types are one VALUES row each, so a
  // worker's claims share one statement per distinct number of types and limit bucket.
  // The locking scans' LIMIT is a literal (limitBucket: the next power of eight, or of two with several types) under an
  // outer `LIMIT limit`: a generic plan costs a parameter LIMIT as a tenth of the rows it estimates for the
  // scan, which grows with the backlog, so every claim would be re-planned (docs/operate/performance.md).
  // Rows are locked as the outer LIMIT pulls them, so a scan the outer LIMIT reads directly locks `limit`
  // rows, not the bucket.
  const bucket = scanBucket(limit, jobTypes);
  // Concurrency keys first, then rate keys, each over what the one before let through (lock order).
  const admission = sqltag`${concurrencyAdmission('candidates', 'passed')},
      ${rateAdmission('passed')}`;
  const open = sqltag`${RESOURCE_FREE_HEAD} AND ${concurrencyOpen(limit, bucket)} AND ${rateOpen(limit)}`;
  return sqltag`
      -- Cost O(limit x types), whatever the history (finished rows are outside the partial indexes) and
      -- other types' backlog (and, with fairness keys, one probe per open key walked: fair-turns.ts).
      WITH ${fairBranch({ jobTypes, limit, after: fairAfter, open })},
      -- Jobs without a fairness key (the claim indexes hold only those), in the order the claim gives them.
      plain AS (
        SELECT p.*, (row_number() OVER (ORDER BY p.priority DESC, p.next_run_at, p.id) - 1)::float8 AS turn
          FROM (${plainScan({ jobTypes, limit, bucket, open })}) p
      ),
      -- Priority first; within a priority the keys (and the unkeyed jobs, as one more) take turns.
      candidates AS (
        SELECT u.id, u.ctid, u.concurrency_key, u.rate_key, u.priority, u.next_run_at FROM (
          SELECT id, ctid, concurrency_key, rate_key, priority, next_run_at, turn FROM plain
          UNION ALL
          SELECT id, ctid, concurrency_key, rate_key, priority, next_run_at, turn FROM fair
        ) u
        ORDER BY u.priority DESC, u.turn, u.next_run_at, u.id
        LIMIT ${limit}::int
      ),
      ${admission},
      ${claimWrites({ workerId, leaseSeconds, markRunning })},
      ${takeConcurrencySeats('claimed')},
      ${takeRateTokens('claimed')},
      ${claimResult(sqltag`SELECT ${FAIR_NEXT}`)}`;
}
