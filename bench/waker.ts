/**
 * Wake-up latch for a polling loop: `wake()` (a NOTIFY arrived, or stop) ends
 * the current or the next `wait()`. A wake that lands while the loop is busy
 * claiming is remembered, so the loop claims again instead of sleeping.
 */
export class Waker {
  private pending = false;
  private release: (() => void) | undefined;

  wake(): void {
    this.pending = true;
    this.release?.();
  }

  /** Forget earlier wakes; call right before looking for work. */
  arm(): void {
    this.pending = false;
  }

  /** Resolves on the next wake (or at once if one came since `arm`), or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    if (this.pending) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(finish, timeoutMs);
      const self = this;
      function finish(): void {
        clearTimeout(timer);
        self.release = undefined;
        resolve();
      }
      this.release = finish;
    });
  }
}
