/**
 * The reaper loop: every `intervalMs` (jittered by ±20%, so workers started
 * together spread out), `reapExpiredLeases` returns the jobs of crashed or
 * stalled workers to PENDING (or dead-letters those out of attempts), then
 * active workflow keys whose canceled leases have run out are released. A full
 * batch is followed at once by another, up to a bound, so a backlog drains
 * without waiting an interval per batch. Any worker may reap any job: the
 * statement skips rows another transaction holds, so several reapers never
 * wait for each other.
 */
import type { Db } from '../client/types.js';
import { reapExpiredLeases } from '../queue/reap.js';
import { releaseQuiescedActiveKeys } from '../workflow/active-keys.js';
import type { WorkerLogger } from '../job/logger.js';
import { PeriodicLoop } from './periodic-loop.js';

/** Most batches one pass reaps before it yields to the next interval. */
const MAX_BATCHES_PER_PASS = 10;

export interface ReaperOptions {
  db: Db;
  intervalMs: number;
  limit: number;
  logger: WorkerLogger;
  /** Jobs went back to PENDING: the worker may want to claim. */
  onRetried: (count: number) => void;
  onError: (error: unknown) => void;
}

export class Reaper extends PeriodicLoop {
  constructor(private readonly options: ReaperOptions) {
    super(options.intervalMs, 'after-interval');
  }

  /** One pass: batches until one comes back short (or the bound). Never throws. */
  protected async pass(): Promise<void> {
    const { db, limit, logger } = this.options;
    let retried = 0;
    let deadLettered = 0;
    try {
      for (let batch = 0; batch < MAX_BATCHES_PER_PASS && !this.stopping; batch += 1) {
        const result = await reapExpiredLeases(db, { limit });
        retried += result.retried.length;
        deadLettered += result.deadLettered.length;
        if (result.retried.length + result.deadLettered.length < limit) break;
      }
      // Active keys of runs that ended while a canceled lease was live: released once it has run out.
      await releaseQuiescedActiveKeys(db, { limit });
    } catch (error) {
      logger.warn('reaping expired leases failed; the next pass retries', { error });
      this.options.onError(error);
    }
    if (retried + deadLettered > 0) {
      logger.info('reaped expired leases', { retried, deadLettered });
      if (retried > 0) this.options.onRetried(retried);
    } else {
      logger.debug('no expired leases');
    }
  }
}
