/**
 * Counts run-terminal notifications per run on its own superuser connection
 * (never terminated by the chaos; outages do not shut a superuser out). If
 * the connection still drops, it reconnects and records the gap, so a missed
 * notification can be looked up against the gaps instead of guessed.
 */
import pg from 'pg';
import { WORKFLOW_RUN_TERMINAL_CHANNEL } from './api.js';

export class TerminalNotificationCounter {
  readonly received = new Map<string, string[]>();
  readonly gaps: { from: Date; to: Date | null }[] = [];
  private client: pg.Client | null = null;
  private closed = false;

  constructor(private readonly url: string) {}

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'chaos-terminal-listener' });
    client.on('notification', (message) => {
      if (message.channel !== WORKFLOW_RUN_TERMINAL_CHANNEL || !message.payload) return;
      const { workflow_run_id: runId, status } = JSON.parse(message.payload) as { workflow_run_id: string; status: string };
      this.received.set(runId, [...(this.received.get(runId) ?? []), status]);
    });
    client.on('error', () => this.lost());
    client.on('end', () => this.lost());
    await client.connect();
    await client.query(`LISTEN "${WORKFLOW_RUN_TERMINAL_CHANNEL}"`);
    this.client = client;
    const open = this.gaps.at(-1);
    if (open && open.to === null) open.to = new Date();
  }

  private lost(): void {
    if (this.closed || this.client === null) return;
    this.client = null;
    this.gaps.push({ from: new Date(), to: null });
    const retry = () => void this.start().catch(() => setTimeout(retry, 200));
    setTimeout(retry, 100);
  }

  /** A round trip on the listening connection delivers every notification committed before it. */
  async flush(): Promise<void> {
    await this.client?.query('SELECT 1');
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client?.end();
  }
}
