/**
 * The one LISTEN connection of the library, per connection string: workers
 * (job-available channel), run listeners and `getResult` (run-terminal
 * channel) all subscribe here, so a process holds one listening session per
 * database however many of them it runs, and one reconnect policy covers
 * them all. Prisma cannot LISTEN, hence a plain `pg` client.
 *
 * Notifications are an accelerator only. PostgreSQL delivers one only to
 * sessions listening when the sender commits, so anything sent while the
 * connection is down is gone: every subscriber is told `onListening` each
 * time LISTEN is (again) in effect and looks at the database once then.
 *
 * States of a hub: connecting -> listening -> (error | end) -> waiting
 * (backoff) -> connecting ... -> closed (the last subscriber left). It
 * reconnects forever while anyone is subscribed, with capped exponential
 * backoff: 100 ms doubling to at most 2 s, jittered (an outage that ends is
 * noticed within about 2 s, and many processes do not reconnect in
 * lockstep). A failure never reaches a subscriber as a throw, only through
 * `onError`, as a RunledgerError (`database.unavailable` for a connection
 * fault).
 */
import pg from 'pg';
import { normalizeDatabaseError } from '../errors/database-error.js';
import { ValidationError, type RunledgerError } from '../errors/runledger-error.js';

/** `application_name` of the LISTEN session, so an operator can find it in pg_stat_activity. */
export const LISTEN_APPLICATION_NAME = 'runledger-listener';
export const LISTEN_RECONNECT_BASE_MS = 100;
/** The longest pause between two connection attempts. */
export const LISTEN_RECONNECT_MAX_MS = 2_000;
/** A connect that hangs (a black-holed network) counts as failed after this. */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * A connection the network silently dropped (no RST: a NAT timeout, a
 * partition) looks idle forever. A query every HEALTH_CHECK_MS that gets no
 * answer within HEALTH_CHECK_TIMEOUT_MS counts as a lost connection.
 */
const HEALTH_CHECK_MS = 15_000;
const HEALTH_CHECK_TIMEOUT_MS = 5_000;
/** Channels are sent as quoted identifiers; only runledger's own names are expected. */
const CHANNEL_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export interface ListenSubscriber {
  /** A notification on the channel (payload '' when none was sent). */
  onNotification(payload: string): void;
  /** LISTEN on the channel is in effect: the first time, and after every reconnect (look once: something may have been missed). */
  onListening?(): void;
  /** The connection failed or was lost; a reconnect is scheduled. */
  onError?(error: RunledgerError): void;
}

export interface ListenSubscription {
  /** Resolves after the first attempt: true when LISTEN is in effect, false when it failed (reconnecting continues). */
  readonly ready: Promise<boolean>;
  /** LISTEN on the channel is in effect right now. */
  readonly listening: boolean;
  /** Unsubscribes; the connection closes when its last subscriber leaves. Idempotent. */
  close(): Promise<void>;
}

interface Subscription {
  channel: string;
  subscriber: ListenSubscriber;
  listening: boolean;
  settleReady: (listening: boolean) => void;
}

/** One per connection string with at least one subscriber. */
const hubs = new Map<string, ListenHub>();

/**
 * Subscribes to `channel` on the shared LISTEN connection for
 * `connectionString`, opening it if this is its first subscriber.
 */
export function listen(connectionString: string, channel: string, subscriber: ListenSubscriber): ListenSubscription {
  if (!CHANNEL_NAME.test(channel)) {
    throw new ValidationError('listen.invalid_channel', 'channel', 'A channel name is a lower-case identifier.', { details: { channel } });
  }
  let hub = hubs.get(connectionString);
  if (!hub) {
    hub = new ListenHub(connectionString, () => hubs.delete(connectionString));
    hubs.set(connectionString, hub);
  }
  return hub.subscribe(channel, subscriber);
}

/** Counters of the shared connection for `connectionString`, for tests and diagnostics. */
export function listenConnectionStats(connectionString: string): { connects: number; failures: number; subscribers: number } | undefined {
  return hubs.get(connectionString)?.stats();
}

class ListenHub {
  private readonly subscriptions = new Set<Subscription>();
  private client: pg.Client | undefined;
  /** Channels LISTENed on the current client. */
  private readonly listened = new Set<string>();
  private syncing: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private consecutiveFailures = 0;
  private connects = 0;
  private failures = 0;
  private closed = false;
  /** The current client has connected (LISTEN may be sent on it). */
  private connected = false;

  constructor(
    private readonly connectionString: string,
    private readonly onClosed: () => void,
  ) {}

  stats(): { connects: number; failures: number; subscribers: number } {
    return { connects: this.connects, failures: this.failures, subscribers: this.subscriptions.size };
  }

  subscribe(channel: string, subscriber: ListenSubscriber): ListenSubscription {
    let settleReady!: (listening: boolean) => void;
    const ready = new Promise<boolean>((resolve) => (settleReady = resolve));
    const subscription: Subscription = { channel, subscriber, listening: false, settleReady };
    this.subscriptions.add(subscription);
    // Connecting or waiting to reconnect: that attempt LISTENs this channel too.
    if (!this.client && !this.reconnectTimer) void this.connect();
    else if (this.connected) void this.sync();
    let closing: Promise<void> | undefined;
    return {
      ready,
      get listening() {
        return subscription.listening;
      },
      close: () => {
        closing ??= this.unsubscribe(subscription);
        return closing;
      },
    };
  }

  private async unsubscribe(subscription: Subscription): Promise<void> {
    if (!this.subscriptions.delete(subscription)) return;
    subscription.listening = false;
    subscription.settleReady(false);
    if (this.subscriptions.size > 0) return;
    // Last one out closes the connection. A channel nobody wants any more stays LISTENed until then: harmless.
    this.closed = true;
    this.onClosed();
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.healthTimer);
    this.reconnectTimer = undefined;
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    await endQuietly(client);
  }

  private async connect(): Promise<void> {
    this.reconnectTimer = undefined;
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.connectionString,
      application_name: LISTEN_APPLICATION_NAME,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: HEALTH_CHECK_MS,
    });
    this.client = client;
    this.connected = false;
    this.listened.clear();
    // Without an 'error' listener an idle connection's failure would be an uncaught exception.
    client.on('error', (error) => this.fail(client, error));
    client.on('end', () => this.fail(client, new Error('Connection terminated unexpectedly')));
    client.on('notification', (message) => this.dispatch(message.channel, message.payload ?? ''));
    try {
      await client.connect();
    } catch (error) {
      this.fail(client, error);
      return;
    }
    if (this.client !== client) return; // failed or closed while connecting
    this.connected = true;
    this.connects += 1;
    this.scheduleHealthCheck(client);
    await this.sync();
  }

  private scheduleHealthCheck(client: pg.Client): void {
    clearTimeout(this.healthTimer);
    this.healthTimer = setTimeout(() => void this.checkHealth(client), HEALTH_CHECK_MS);
    // Only a liveness probe: it must not keep a process alive on its own.
    this.healthTimer.unref();
  }

  private async checkHealth(client: pg.Client): Promise<void> {
    if (this.client !== client || !this.connected) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), HEALTH_CHECK_TIMEOUT_MS);
    });
    try {
      const outcome = await Promise.race([client.query('SELECT 1').then(() => 'ok' as const), timedOut]);
      if (outcome === 'timeout') {
        this.fail(client, Object.assign(new Error('LISTEN connection did not answer a health check'), { code: 'ETIMEDOUT' }));
        return;
      }
    } catch (error) {
      this.fail(client, error);
      return;
    } finally {
      clearTimeout(timer);
    }
    if (this.client === client) this.scheduleHealthCheck(client);
  }

  /**
   * LISTENs every subscribed channel not yet LISTENed on the current client,
   * then tells those channels' subscribers. One run at a time; a subscriber
   * that arrives during a run is picked up by the loop.
   */
  private sync(): Promise<void> {
    this.syncing ??= (async () => {
      // Never call a subscriber back before subscribe() has returned its subscription.
      await Promise.resolve();
      try {
        for (;;) {
          const client = this.client;
          if (!client || !this.connected || this.closed) return;
          const missing = [...new Set([...this.subscriptions].map((s) => s.channel))].filter((channel) => !this.listened.has(channel));
          if (missing.length === 0) {
            // Subscribers of channels already LISTENed (joined while connected) are listening too.
            this.markListening((s) => !s.listening && this.listened.has(s.channel));
            return;
          }
          try {
            // Names were checked against CHANNEL_NAME, so quoting them is enough.
            await client.query(missing.map((channel) => `LISTEN "${channel}"`).join('; '));
          } catch (error) {
            this.fail(client, error);
            return;
          }
          if (this.client !== client) return;
          for (const channel of missing) this.listened.add(channel);
          this.consecutiveFailures = 0;
        }
      } finally {
        this.syncing = undefined;
      }
    })();
    return this.syncing;
  }

  private markListening(which: (subscription: Subscription) => boolean): void {
    for (const subscription of [...this.subscriptions]) {
      if (!which(subscription)) continue;
      subscription.listening = true;
      subscription.settleReady(true);
      call(() => subscription.subscriber.onListening?.());
    }
  }

  private dispatch(channel: string, payload: string): void {
    for (const subscription of [...this.subscriptions]) {
      if (subscription.channel === channel) call(() => subscription.subscriber.onNotification(payload));
    }
  }

  private fail(client: pg.Client, cause: unknown): void {
    // One failure often raises both 'error' and 'end': handle the first, for the current client only.
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    this.connected = false;
    this.listened.clear();
    clearTimeout(this.healthTimer);
    // end() waits for the server's goodbye, which a dead network never sends: destroy the socket too.
    void endQuietly(client);
    destroySocket(client);
    this.consecutiveFailures += 1;
    this.failures += 1;
    const error = normalizeDatabaseError(cause, 'listen');
    for (const subscription of [...this.subscriptions]) {
      subscription.listening = false;
      subscription.settleReady(false);
      call(() => subscription.subscriber.onError?.(error));
    }
    this.reconnectTimer = setTimeout(() => void this.connect(), reconnectDelayMs(this.consecutiveFailures));
  }
}

/** Capped exponential backoff with "equal jitter": within [ceiling / 2, ceiling], never above LISTEN_RECONNECT_MAX_MS. */
export function reconnectDelayMs(failures: number, random: () => number = Math.random): number {
  const ceiling = Math.min(LISTEN_RECONNECT_MAX_MS, LISTEN_RECONNECT_BASE_MS * 2 ** Math.min(Math.max(failures - 1, 0), 20));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/** A subscriber's callback must not break the connection or the other subscribers. */
function call(fn: () => void): void {
  try {
    fn();
  } catch {
    // The subscriber's own failure; it has its own logging.
  }
}

function destroySocket(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection?.stream?.destroy?.();
}

async function endQuietly(client: pg.Client | undefined): Promise<void> {
  if (!client) return;
  try {
    await client.end();
  } catch {
    // Already broken: nothing left to close.
  }
}
