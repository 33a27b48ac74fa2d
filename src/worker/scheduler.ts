/**
 * The scheduler loop: every `intervalMs` (jittered by ±20%, so workers
 * started together spread out) it materialises the due slots of cron
 * schedules (`runDueSchedules`, src/schedules/run-due.ts), batch after batch
 * while a batch comes back full, up to a bound per pass.
 *
 * Leader-free: every worker runs it. Schedule rows are claimed with
 * `FOR UPDATE SKIP LOCKED` and each slot's job carries an idempotency key made
 * of the schedule key and the slot time, so any number of loops make each
 * slot's job exactly once, and a loop never waits for another.
 *
 * Its clock (`now`, default the database's) is injectable so tests drive
 * slots without sleeping. A slot's job runs at most about one interval after
 * the slot (default 5 s); the first pass runs right after the worker starts.
 */
import type { Db } from '../client/types.js';
import { runDueSchedules } from '../schedules/run-due.js';
import type { WorkerLogger } from '../job/logger.js';
import { PeriodicLoop } from './periodic-loop.js';

/** Most batches one pass runs before it yields to the next interval. */
const MAX_BATCHES_PER_PASS = 10;

export interface SchedulerOptions {
  db: Db;
  intervalMs: number;
  /** Schedules per transaction. */
  limit: number;
  /** The clock slots are due by; undefined: the database's. */
  now: (() => Date) | undefined;
  logger: WorkerLogger;
  /** Jobs were enqueued: the worker may want to claim. */
  onEnqueued: (count: number) => void;
  onError: (error: unknown) => void;
}

export class SchedulerLoop extends PeriodicLoop {
  constructor(private readonly options: SchedulerOptions) {
    super(options.intervalMs, 'now');
  }

  /** One pass: batches until one comes back short (or the bound). Never throws. */
  protected async pass(): Promise<void> {
    const { db, limit, logger, now } = this.options;
    let enqueued = 0;
    try {
      for (let batch = 0; batch < MAX_BATCHES_PER_PASS && !this.stopping; batch += 1) {
        const result = await runDueSchedules(db, { limit, ...(now ? { now: now() } : {}) });
        enqueued += result.jobs.filter((job) => job.disposition === 'inserted').length;
        for (const failed of result.failed) {
          // The others of the batch went ahead; this schedule's error is on its row (lastError) until a slot succeeds.
          logger.warn('a schedule could not materialise its due slots; they were skipped', {
            schedule: failed.scheduleKey,
            code: failed.code,
            slots: failed.slots.length,
          });
        }
        if (result.schedules < limit) break;
      }
    } catch (error) {
      logger.warn('materialising due schedules failed; the next pass retries', { error });
      this.options.onError(error);
    }
    if (enqueued > 0) {
      logger.info('enqueued scheduled jobs', { count: enqueued });
      this.options.onEnqueued(enqueued);
    }
  }
}
