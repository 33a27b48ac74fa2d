/**
 * The shape every background loop of the worker shares (reaper, scheduler,
 * retention): one pass, then a jittered sleep (so many workers' passes do
 * not line up), until stopped. `stop()` aborts the sleep at once but lets a
 * pass in progress finish, so a pass never leaves work half done; a pass
 * checks `stopping` between its batches to end early. Passes never throw:
 * each loop reports its own errors.
 */
import { jitter, sleep } from './timing.js';

export abstract class PeriodicLoop {
  private readonly stopController = new AbortController();
  private loop: Promise<void> | undefined;

  /**
   * @param intervalMs the pause between passes (jittered)
   * @param firstPass 'now': pass at start; 'after-interval': sleep first (the reaper: a fresh worker has
   *   nothing of its own to reap, and another worker's reaper is likely running)
   */
  protected constructor(
    private readonly intervalMs: number,
    private readonly firstPass: 'now' | 'after-interval',
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops the loop; resolves when a pass in progress has finished. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
  }

  /** True once stop() was called: a pass ends between batches. */
  protected get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /** One pass. Must not throw. */
  protected abstract pass(): Promise<void>;

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    if (this.firstPass === 'after-interval') await sleep(jitter(this.intervalMs), signal);
    while (!signal.aborted) {
      await this.pass();
      await sleep(jitter(this.intervalMs), signal);
    }
  }
}
