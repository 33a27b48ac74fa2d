/**
 * The worker's subscription to JOB_AVAILABLE_CHANNEL on the library's shared
 * LISTEN connection (src/notify/listen-client.ts), whose notifications
 * (payload: the job type) wake the claim loop early. It is an accelerator
 * only: a notification sent while the connection is down is gone, so every
 * (re)connection calls `onListening` and the worker claims once, and the
 * poll timer finds anything else. The shared connection reconnects forever
 * with backoff capped at 2 s; a failure is logged and reported, never thrown.
 */
import { JOB_AVAILABLE_CHANNEL } from '../model/constants.js';
import { listen, LISTEN_APPLICATION_NAME, type ListenSubscription } from '../notify/listen-client.js';
import type { WorkerLogger } from '../job/logger.js';

/** `application_name` of the LISTEN session, so an operator can find it in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = LISTEN_APPLICATION_NAME;

export interface JobAvailableListenerOptions {
  connectionString: string;
  logger: WorkerLogger;
  /** A notification arrived; `jobType` is its payload. */
  onNotify: (jobType: string) => void;
  /** LISTEN is in effect (first time or after a reconnect). */
  onListening: () => void;
  onError: (error: unknown) => void;
}

export class JobAvailableListener {
  private subscription: ListenSubscription | undefined;
  private failures = 0;

  constructor(private readonly options: JobAvailableListenerOptions) {}

  /** Subscribes; resolves after the first attempt, whether or not it succeeded (reconnecting continues). */
  async start(): Promise<void> {
    const { logger } = this.options;
    this.subscription ??= listen(this.options.connectionString, JOB_AVAILABLE_CHANNEL, {
      onNotification: (jobType) => {
        if (jobType) this.options.onNotify(jobType);
      },
      onListening: () => {
        logger.debug('listening for job notifications', { channel: JOB_AVAILABLE_CHANNEL, afterFailures: this.failures });
        this.failures = 0;
        this.options.onListening();
      },
      onError: (error) => {
        this.failures += 1;
        logger.warn('LISTEN connection failed; polling continues, reconnecting', { error, failures: this.failures });
        this.options.onError(error);
      },
    });
    await this.subscription.ready;
  }

  /** Unsubscribes (the shared connection closes with its last subscriber). Idempotent. */
  async close(): Promise<void> {
    await this.subscription?.close();
  }
}
