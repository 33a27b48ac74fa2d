/**
 * Jobs due later: PENDING jobs whose `next_run_at` is still ahead (a retry
 * waiting out its backoff, a job enqueued with a delay). A worker run "until
 * idle" stops while they wait; these two statements let it go on.
 *
 * - `findNextDueAt` (the CLI's `worker --until-idle --wait-due`): when the
 *   next one falls due, so the caller can really wait for it.
 * - `bringDueLaterForward` (runledger/testing's `runUntilIdle`, never a
 *   production path): advances a test's clock to that moment by moving the
 *   due time of every job due by then up to now, so a test need not sleep
 *   through a backoff. Jobs due at the same moment move together, later ones
 *   stay, so the order in which they fall due is kept.
 */
import type { Db } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { asTemplate } from '../db/sql-template.js';
import { bringDueLaterForwardStatement } from './statements/bring-due-later-forward.js';

export interface DueLaterInput {
  /** Only jobs of these types (a worker's handlers). */
  jobTypes: readonly string[];
  /** Only a job falling due within this many ms from now; null: however far off. */
  withinMs: number | null;
}

/** When the next job of `jobTypes` due later falls due, if within `withinMs`; null otherwise. */
export async function findNextDueAt(db: Db, input: DueLaterInput): Promise<Date | null> {
  return withStatement(db, 'find next due job', async (tx) => {
    const [row] = await tx.$queryRaw<{ at: Date | null }[]>`
      SELECT min(next_run_at) AS at
        FROM runledger.job_queue
       WHERE status = 'PENDING' AND job_type = ANY(${[...input.jobTypes]}::text[])
         AND next_run_at > now()
         AND (${input.withinMs}::float8 IS NULL OR next_run_at <= now() + ${input.withinMs}::float8 * interval '1 millisecond')`;
    return row?.at ?? null;
  });
}

/**
 * Makes the next jobs of `jobTypes` due later (all those due at the earliest
 * such moment, if within `withinMs`) runnable now. Returns how many moved and
 * how far ahead that moment was (0 and 0 when none is due within the bound).
 */
export async function bringDueLaterForward(db: Db, input: DueLaterInput): Promise<{ moved: number; advancedMs: number }> {
  return withStatement(db, 'bring due-later jobs forward', async (tx) => {
    const types = [...input.jobTypes];
    const [row] = await tx.$queryRaw<{ moved: number; advanced_ms: number | null }[]>(...asTemplate(bringDueLaterForwardStatement(types, input.withinMs)));
    const moved = row?.moved ?? 0;
    return { moved, advancedMs: moved > 0 ? Math.max(0, row?.advanced_ms ?? 0) : 0 };
  });
}
