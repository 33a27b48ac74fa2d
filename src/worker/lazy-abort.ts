/**
 * An AbortController made only when someone reads its signal. Most handlers never look at `ctx.signal`, and
 * an AbortController with its signal cost a job about 11 us of CPU and most of its garbage (node --cpu-prof of
 * a 20,000-job drain through createWorker). Aborting before the signal was read keeps the reason; reading the
 * signal afterwards returns one already aborted with it, so a handler sees the same thing either way.
 */
export class LazyAbortController {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}
