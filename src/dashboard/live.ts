/**
 * Live updates: Server-Sent Events fed by the library's one LISTEN connection
 * (src/notify/listen-client.ts), subscribed while at least one page is open.
 *
 * An event says only that something changed (`job`: jobs became runnable;
 * `run`: a run ended; `step`: steps of the run this stream watches moved;
 * `resync`: LISTEN was (re)established, so something may have been missed),
 * never which row: the notification payloads name job types and run ids of
 * every organization, and a tenant's page must learn nothing about another's.
 * A stream watches a run only after the caller found that run in the
 * request's scope (create-dashboard.ts), and a `step` event goes only to the
 * streams watching the notified run. The page then reads again through its
 * own scope.
 * Notifications are an accelerator only; the page also polls, which is what
 * makes it correct (a step that moves without a NOTIFY still shows up).
 *
 * Events are coalesced per kind over COALESCE_MS so a burst of enqueues costs
 * each page one refresh.
 *
 * A stream is written through a LiveWriter: a Node ServerResponse is one as
 * it is (createDashboard); the fetch handler wraps a ReadableStream in one
 * (fetch-handler.ts).
 */
import { JOB_AVAILABLE_CHANNEL, WORKFLOW_RUN_TERMINAL_CHANNEL, WORKFLOW_STEP_CHANGED_CHANNEL } from '../model/constants.js';
import { listen, type ListenSubscription } from '../notify/listen-client.js';

const COALESCE_MS = 250;
/** A comment line keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;
/** How long a page waits before reconnecting a dropped stream. */
const RETRY_MS = 3_000;

type LiveKind = 'job' | 'run' | 'step' | 'resync';

/** Where one page's stream goes; Node's ServerResponse satisfies it. `close` fires when the client goes away or the stream ends. */
export interface LiveWriter {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: string): unknown;
  end(): unknown;
  on(event: 'close', listener: () => void): unknown;
}

/** The stream's response headers (also answered to a HEAD, which opens no stream). */
export const LIVE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

export class LiveFeed {
  /** Each open stream, with the run it watches (lower-case id) if any. */
  private readonly clients = new Map<LiveWriter, string | undefined>();
  private subscriptions: ListenSubscription[] = [];
  private pending = new Set<LiveKind>();
  /** Runs whose steps moved since the last flush. */
  private pendingRuns = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly connectionString: string | undefined) {}

  get listening(): boolean {
    return this.subscriptions.length > 0 && this.subscriptions.every((s) => s.listening);
  }

  /**
   * Streams events to `res` until the client goes away or the feed closes.
   * `watchRunId`: a run the caller has checked is visible in the request's
   * scope; the stream also hears when that run's steps move.
   */
  attach(res: LiveWriter, watchRunId?: string): void {
    if (this.closed) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end();
      return;
    }
    res.writeHead(200, { ...LIVE_HEADERS });
    res.write(`retry: ${RETRY_MS}\nevent: hello\ndata: ${JSON.stringify({ live: this.connectionString !== undefined })}\n\n`);
    this.clients.set(res, watchRunId?.toLowerCase());
    res.on('close', () => this.detach(res));
    if (this.clients.size === 1) this.start();
    // Already listening: this stream misses nothing from here on, and says so as a first stream hears it.
    else if (this.listening) res.write(`event: change\ndata: ${JSON.stringify({ kind: 'resync' })}\n\n`);
  }

  private start(): void {
    this.keepaliveTimer = setInterval(() => {
      for (const client of this.clients.keys()) client.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    this.keepaliveTimer.unref();
    if (!this.connectionString) return;
    // `resync` once every channel is listened to again, so a page that reads after it misses nothing.
    const onListening = () => {
      if (this.listening) this.signal('resync');
    };
    this.subscriptions = [
      listen(this.connectionString, JOB_AVAILABLE_CHANNEL, { onNotification: () => this.signal('job'), onListening }),
      listen(this.connectionString, WORKFLOW_RUN_TERMINAL_CHANNEL, { onNotification: () => this.signal('run'), onListening }),
      listen(this.connectionString, WORKFLOW_STEP_CHANGED_CHANNEL, { onNotification: (runId) => this.signalRun(runId), onListening }),
    ];
  }

  private detach(res: LiveWriter): void {
    if (!this.clients.delete(res) || this.clients.size > 0) return;
    void this.stop();
  }

  private async stop(): Promise<void> {
    clearInterval(this.keepaliveTimer);
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.pending.clear();
    this.pendingRuns.clear();
    const subscriptions = this.subscriptions;
    this.subscriptions = [];
    await Promise.all(subscriptions.map((s) => s.close()));
  }

  private signal(kind: LiveKind): void {
    this.pending.add(kind);
    this.flushTimer ??= setTimeout(() => this.flush(), COALESCE_MS);
  }

  /** Only runs some stream watches are kept: on a busy queue most step notifications concern no open page. */
  private signalRun(runId: string): void {
    const id = runId.toLowerCase();
    for (const watched of this.clients.values()) {
      if (watched !== id) continue;
      this.pendingRuns.add(id);
      this.flushTimer ??= setTimeout(() => this.flush(), COALESCE_MS);
      return;
    }
  }

  private flush(): void {
    this.flushTimer = undefined;
    const kinds = [...this.pending];
    const runs = this.pendingRuns;
    this.pending.clear();
    this.pendingRuns = new Set();
    for (const [client, watched] of this.clients) {
      for (const kind of kinds) client.write(`event: change\ndata: ${JSON.stringify({ kind })}\n\n`);
      if (watched !== undefined && runs.has(watched)) client.write(`event: change\ndata: ${JSON.stringify({ kind: 'step' })}\n\n`);
    }
  }

  /** Ends every stream and leaves the LISTEN connection. */
  async close(): Promise<void> {
    this.closed = true;
    const clients = [...this.clients.keys()];
    this.clients.clear();
    for (const client of clients) client.end();
    await this.stop();
  }
}
