/**
 * A one-way flag with a promise made only when someone waits on it. The worker keeps a few of these per job
 * (recorded, settled, queued); as `new Promise` plus its resolver they were two allocations each per job, and
 * most of them are never awaited: the worker learns of them through its hooks (job-execution.ts).
 */
export class Latch {
  #open = false;
  #promise: Promise<void> | undefined;
  #resolve: (() => void) | undefined;

  get isOpen(): boolean {
    return this.#open;
  }

  /** Resolves once the latch is open (at once if it is). */
  get promise(): Promise<void> {
    if (!this.#promise) {
      if (this.#open) this.#promise = Promise.resolve();
      else this.#promise = new Promise((resolve) => (this.#resolve = resolve));
    }
    return this.#promise;
  }

  /** Opens the latch; false if it was open already. */
  open(): boolean {
    if (this.#open) return false;
    this.#open = true;
    this.#resolve?.();
    this.#resolve = undefined;
    return true;
  }
}
