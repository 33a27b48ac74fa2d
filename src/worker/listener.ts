/**
 * The LISTEN connection: a dedicated `pg` client (Prisma cannot LISTEN) on
 * JOB_AVAILABLE_CHANNEL, whose notifications (payload: the job type) wake the
 * claim loop early. It is an accelerator only: a notification is delivered
 * only to sessions listening when the enqueue commits, so one sent while this
 * connection is down is gone, and the worker's poll timer finds that job.
 *
 * States: connecting -> listening -> (error | end) -> waiting (backoff) ->
 * connecting ... -> closed. A failure is logged and retried with exponential
 * backoff (250 ms doubling to 30 s, jittered); it never reaches the worker as
 * a throw. Each (re)connection calls `onListening`, so the worker claims once
 * in case it missed a notification while deaf.
 */
import pg from 'pg';
import { JOB_AVAILABLE_CHANNEL } from '../db/constants.js';
import type { WorkerLogger } from './logger.js';
import { backoffMs } from './timing.js';

/** `application_name` of the LISTEN session, so an operator can find it in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'runledger-worker-listener';

const RECONNECT_BASE_MS = 250;
const RECONNECT_MAX_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;

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
  private client: pg.Client | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;

  constructor(private readonly options: JobAvailableListenerOptions) {}

  /** Makes the first attempt; resolves whether or not it succeeded (a failure schedules a retry). */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Stops reconnecting and closes the connection. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const client = this.client;
    this.client = undefined;
    await endQuietly(client);
  }

  private async connect(): Promise<void> {
    this.reconnectTimer = undefined;
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: LISTENER_APPLICATION_NAME,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
    });
    this.client = client;
    // Without an 'error' listener an idle connection's failure would be an uncaught exception.
    client.on('error', (error) => this.fail(client, error));
    client.on('end', () => this.fail(client, new Error('LISTEN connection ended')));
    client.on('notification', (message) => {
      if (message.channel === JOB_AVAILABLE_CHANNEL && message.payload) this.options.onNotify(message.payload);
    });
    try {
      await client.connect();
      // The channel is a constant identifier from db/constants.ts, never input.
      await client.query(`LISTEN ${JOB_AVAILABLE_CHANNEL}`);
    } catch (error) {
      this.fail(client, error);
      return;
    }
    if (this.client !== client) return; // failed or closed while connecting
    this.failures = 0;
    this.options.logger.debug('listening for job notifications', { channel: JOB_AVAILABLE_CHANNEL });
    this.options.onListening();
  }

  private fail(client: pg.Client, error: unknown): void {
    // One failure often raises both 'error' and 'end': handle the first, for the current client only.
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    void endQuietly(client);
    this.failures += 1;
    const delayMs = backoffMs(this.failures, RECONNECT_BASE_MS, RECONNECT_MAX_MS);
    this.options.logger.warn('LISTEN connection failed; polling continues, reconnecting', { error, failures: this.failures, delayMs });
    this.options.onError(error);
    this.reconnectTimer = setTimeout(() => void this.connect(), delayMs);
  }
}

async function endQuietly(client: pg.Client | undefined): Promise<void> {
  if (!client) return;
  try {
    await client.end();
  } catch {
    // Already broken: nothing left to close.
  }
}
