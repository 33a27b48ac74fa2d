/**
 * `runledger reap`: returns the jobs of crashed or stalled workers (lease
 * expired, still LEASED) to PENDING, or dead-letters those out of attempts,
 * then releases the active workflow keys of finished runs whose canceled
 * leases have run out (what a worker's reaper loop does on each pass).
 * Workers reap on a timer; this is for deployments that run workers as
 * cron-style `worker --until-idle` jobs, and for operators.
 */
import type { Command } from 'commander';
import type { Db } from '../client/types.js';
import { reapExpiredLeases } from '../queue/reap.js';
import { releaseQuiescedActiveKeys } from '../workflow/active-keys.js';
import { UsageError, type CliContext } from './context.js';

/** Jobs per reap transaction: small enough to keep each one short. */
const REAP_BATCH = 100;

export interface ReapTotals {
  retried: string[];
  deadLettered: string[];
  /** Active workflow keys released (their runs over, every canceled lease run out). */
  activeKeysReleased: number;
}

/**
 * Reaps batch after batch until one comes back short. Terminates: every
 * reaped job leaves LEASED, and a batch that skips rows locked elsewhere is
 * short, so it ends the loop (those rows are left for the next pass).
 */
export async function reapAllExpiredLeases(db: Db): Promise<ReapTotals> {
  const totals: ReapTotals = { retried: [], deadLettered: [], activeKeysReleased: 0 };
  for (;;) {
    const batch = await reapExpiredLeases(db, { limit: REAP_BATCH });
    totals.retried.push(...batch.retried);
    totals.deadLettered.push(...batch.deadLettered);
    if (batch.retried.length + batch.deadLettered.length < REAP_BATCH) break;
  }
  // After the leases: a key whose run's last canceled lease was just reaped is releasable now.
  for (;;) {
    const released = await releaseQuiescedActiveKeys(db, { limit: REAP_BATCH });
    totals.activeKeysReleased += released;
    if (released < REAP_BATCH) return totals;
  }
}

export function registerReapCommand(program: Command, context: CliContext): void {
  program
    .command('reap')
    .description('retry or dead-letter jobs whose lease expired (their worker died); every organization')
    .action(async () => {
      // Leases are reaped across organizations (a worker serves all of them), so a scope would be silently ignored.
      const scope = context.scope;
      if (scope.kind !== 'admin') {
        throw new UsageError('reap acts on every organization; --org and --without-org do not apply.', {
          code: 'cli.scope_not_supported',
          field: scope.kind === 'no_organization' ? '--without-org' : '--org',
        });
      }
      const totals = await reapAllExpiredLeases(context.db());
      const leases =
        totals.retried.length + totals.deadLettered.length === 0
          ? 'No expired leases.'
          : `Reaped ${totals.retried.length + totals.deadLettered.length} expired lease(s): ${totals.retried.length} retried, ${totals.deadLettered.length} dead-lettered.`;
      const keys = totals.activeKeysReleased === 0 ? '' : `\nReleased ${totals.activeKeysReleased} active workflow key(s).`;
      context.print(leases + keys, {
        retried: totals.retried.length,
        deadLettered: totals.deadLettered.length,
        activeKeysReleased: totals.activeKeysReleased,
        retriedJobIds: totals.retried,
        deadLetteredJobIds: totals.deadLettered,
      });
    });
}
