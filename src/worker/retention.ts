/**
 * The retention loop (opt-in: `createWorker({ retention: { olderThanMs } })`):
 * right after start, and then every `intervalMs` (jittered by ±20%), it runs
 * `purgeFinished` for rows that finished more than `olderThanMs` ago. Any
 * number of workers may run it: purge batches skip rows another holds, so
 * two loops share the work rather than wait for each other.
 */
import type { Db } from '../client/types.js';
import { purgeFinished } from '../retention/purge.js';
import type { WorkerLogger } from '../job/logger.js';
import { PeriodicLoop } from './periodic-loop.js';

export interface RetentionLoopOptions {
  db: Db;
  intervalMs: number;
  olderThanMs: number;
  batchSize: number;
  logger: WorkerLogger;
  onError: (error: unknown) => void;
}

export class RetentionLoop extends PeriodicLoop {
  constructor(private readonly options: RetentionLoopOptions) {
    super(options.intervalMs, 'now');
  }

  /** One purge pass. Never throws. */
  protected async pass(): Promise<void> {
    const { db, olderThanMs, batchSize, logger } = this.options;
    try {
      const result = await purgeFinished(db, { olderThan: new Date(Date.now() - olderThanMs), batchSize });
      if (result.jobs + result.workflowRuns > 0) logger.info('purged finished jobs and runs', { ...result });
    } catch (error) {
      logger.warn('purging finished jobs failed; the next pass retries', { error });
      this.options.onError(error);
    }
  }
}
