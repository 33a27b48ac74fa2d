/**
 * Waiting for the end of a timed run: an in-process counter of finished
 * units that resolves when the expected number is reached, and a poller for
 * systems that complete without letting the caller await the commit.
 */
import pg from 'pg';
import { sleep } from './db.js';

/** Resolves `done` once `hit()` was called `target` times; rejects after `timeoutMs`. */
export class Countdown {
  private count = 0;
  private resolve!: () => void;
  private reject!: (error: Error) => void;
  private readonly timer: NodeJS.Timeout;
  readonly done: Promise<void>;

  constructor(
    readonly target: number,
    what: string,
    timeoutMs = 600_000,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // A run that stalls must fail the bench, not hang it.
    this.timer = setTimeout(() => this.reject(new Error(`${what}: ${this.count} of ${target} done after ${timeoutMs} ms`)), timeoutMs);
    this.done.catch(() => undefined).finally(() => clearTimeout(this.timer));
    if (target === 0) this.resolve();
  }

  hit(n = 1): void {
    this.count += n;
    if (this.count >= this.target) this.resolve();
  }

  fail(error: unknown): void {
    this.reject(error instanceof Error ? error : new Error(String(error)));
  }

  get value(): number {
    return this.count;
  }
}

/**
 * Polls `sql` (which returns one row with `n`) on one extra connection until
 * `n` is 0; returns the harness commits it made (its connection's start-up
 * transaction and one per poll), to subtract from the system's count.
 */
export async function pollUntilZero(url: string, sql: string, params: unknown[], what: string, intervalMs = 10, timeoutMs = 60_000): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let commits = 1;
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await client.query<{ n: string }>(sql, params);
      commits += 1;
      if (Number(rows[0]?.n) === 0) return commits;
      if (Date.now() > deadline) throw new Error(`${what}: ${rows[0]?.n} still unfinished ${timeoutMs} ms after every handler ran`);
      await sleep(intervalMs);
    }
  } finally {
    await client.end();
  }
}

/** Runs `count` async tasks with at most `inFlight` at once. */
export async function runInFlight(count: number, inFlight: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(inFlight, count) }, async () => {
    while (next < count) {
      const index = next;
      next += 1;
      await task(index);
    }
  });
  await Promise.all(lanes);
}
