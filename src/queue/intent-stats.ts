/** Counts of durable enqueue intents by state, within a scope (metrics and the dashboard read them). */
import { z } from 'zod';
import type { Db, Tx } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { scopeParams, scopeSchema, type Scope } from '../db/scope.js';
import { parseInput } from '../validation/parse.js';
import { JOB_INVALID_INPUT } from './inputs.js';
import { inScope } from '../db/fragments.js';

export const enqueueIntentStatsInputSchema = z.strictObject({ scope: scopeSchema });

export interface EnqueueIntentStats {
  /** Intents waiting for promotion (including those whose type has no enabled definition). */
  pending: number;
  /** Age of the oldest pending intent, in ms (database clock); null when none is pending. */
  oldestPendingAgeMs: number | null;
  /** Most failed promotion attempts of any pending intent (0: none failed). */
  maxPendingAttempts: number;
  /** Pending intents whose last promotion failed. */
  failing: number;
  /** Intents kept as conflict evidence. */
  conflicts: number;
}

/**
 * The intent backlog in `scope`, for dashboards and alerts (one read, index-backed for the pending rows).
 *
 * @example
 * const { pending, oldestPendingAgeMs } = await getEnqueueIntentStats(prisma, { scope: adminScope() });
 */
export async function getEnqueueIntentStats(db: Db, input: { scope: Scope }): Promise<EnqueueIntentStats> {
  const { scope } = parseInput(enqueueIntentStatsInputSchema, input, JOB_INVALID_INPUT);
  return withStatement(db, 'read enqueue intent stats', (tx) => readEnqueueIntentStats(tx, scope), { readCommitted: false });
}

/** The intent backlog read on `tx` (getEnqueueIntentStats, and getQueueMetrics's `intents`). */
export async function readEnqueueIntentStats(tx: Tx, scope: Scope): Promise<EnqueueIntentStats> {
  const s = scopeParams(scope);
  // Two partial-index reads (pending, conflict): promoted intents, the bulk of the table, are never visited.
  const [row] = await tx.$queryRaw<{ pending: number; oldest_ms: number | null; max_attempts: number; failing: number; conflicts: number }[]>`
      SELECT p.pending, p.oldest_ms, p.max_attempts, p.failing, c.conflicts
        FROM (SELECT count(*)::int AS pending,
                     (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS oldest_ms,
                     COALESCE(max(attempts), 0)::int AS max_attempts,
                     count(*) FILTER (WHERE last_error_code IS NOT NULL)::int AS failing
                FROM runledger.job_enqueue_intents
               WHERE state = 'PENDING'
                 AND ${inScope(s, 'organization_id')}) p
       CROSS JOIN (SELECT count(*)::int AS conflicts
                     FROM runledger.job_enqueue_intents
                    WHERE state = 'CONFLICT'
                      AND ${inScope(s, 'organization_id')}) c`;
  return {
    pending: row!.pending,
    oldestPendingAgeMs: row!.oldest_ms === null ? null : Math.max(0, Math.round(row!.oldest_ms)),
    maxPendingAttempts: row!.max_attempts,
    failing: row!.failing,
    conflicts: row!.conflicts,
  };
}
