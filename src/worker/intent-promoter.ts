/**
 * The enqueue-intent promoter loop: every `intervalMs` (jittered) it promotes
 * due intents of the worker's registered types whose definitions are enabled
 * (`promoteEnqueueIntents`, src/queue/intent-row.ts), batch after batch while a
 * batch comes back full, up to a bound per pass. Leader-free like the
 * scheduler: intents are locked `FOR UPDATE SKIP LOCKED`, so any number of
 * workers share the backlog and promote each intent once.
 *
 * It also owns the worker's definitions sync when the one at start failed:
 * each pass retries it until it succeeds (an intent of a type whose row was
 * never written could not be promoted otherwise). A failed pass is logged and
 * retried on the next: intents stay pending, nothing is dropped.
 */
import type { Db } from '../client/types.js';
import { promoteEnqueueIntents } from '../queue/intent-promote.js';
import type { WorkerLogger } from '../job/logger.js';
import { PeriodicLoop } from './periodic-loop.js';

/** Most batches one pass runs before it yields to the next interval. */
const MAX_BATCHES_PER_PASS = 10;

export interface IntentPromoterOptions {
  db: Db;
  intervalMs: number;
  /** Intents per transaction. */
  limit: number;
  jobTypes: readonly string[];
  /** The definitions sync still to do (it failed at start); resolves true once it succeeded. */
  syncPending: (() => Promise<boolean>) | undefined;
  logger: WorkerLogger;
  /** Jobs were enqueued: the worker may want to claim. */
  onEnqueued: (count: number) => void;
  onError: (error: unknown) => void;
}

export class IntentPromoterLoop extends PeriodicLoop {
  private syncPending: (() => Promise<boolean>) | undefined;

  constructor(private readonly options: IntentPromoterOptions) {
    super(options.intervalMs, 'now');
    this.syncPending = options.syncPending;
  }

  /** One pass: the pending sync if any, then batches until one comes back short (or the bound). Never throws. */
  protected async pass(): Promise<void> {
    const { db, limit, logger, jobTypes } = this.options;
    if (this.syncPending && (await this.syncPending())) this.syncPending = undefined;
    let enqueued = 0;
    let failed = 0;
    try {
      for (let batch = 0; batch < MAX_BATCHES_PER_PASS && !this.stopping; batch += 1) {
        const result = await promoteEnqueueIntents(db, { jobTypes: [...jobTypes], limit });
        enqueued += result.intents.filter((intent) => intent.outcome === 'inserted').length;
        failed += result.intents.filter((intent) => intent.outcome === 'failed').length;
        if (result.claimed < limit) break;
      }
    } catch (error) {
      logger.warn('promoting enqueue intents failed; the next pass retries', { error });
      this.options.onError(error);
    }
    if (failed > 0) logger.warn('some enqueue intents could not be promoted; they stay pending and are retried', { count: failed });
    if (enqueued > 0) {
      logger.info('promoted enqueue intents', { count: enqueued });
      this.options.onEnqueued(enqueued);
    }
  }
}
