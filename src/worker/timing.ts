/**
 * Small timing primitives of the worker: the loop's wake-up latch, an
 * abortable sleep, jitter, and the retry of a write that met a transient
 * database failure.
 */
import { isRunledgerError } from '../errors/runledger-error.js';
import { MAX_TIMER_MS } from '../validation/primitives.js';

/** The longest delay a Node timer honours (about 24.8 days); longer ones fire at once. */
export { MAX_TIMER_MS };

/**
 * A one-waiter latch. `signal()` wakes the waiter, or, with nobody waiting,
 * makes the next `wait()` return at once: a wake-up that arrives while the
 * loop is busy (claiming) is never lost.
 */
export class Wakeup {
  private pending = false;
  private waiter: (() => void) | undefined;

  signal(): void {
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      waiter();
    } else {
      this.pending = true;
    }
  }

  /** Resolves 'signal' on a wake-up, 'timeout' after `timeoutMs`. */
  wait(timeoutMs: number): Promise<'signal' | 'timeout'> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('signal');
    }
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.waiter = undefined;
          resolve('timeout');
        },
        Math.min(timeoutMs, MAX_TIMER_MS),
      );
      this.waiter = () => {
        clearTimeout(timer);
        resolve('signal');
      };
    });
  }
}

/** Resolves after `ms`, or as soon as `signal` aborts. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.min(ms, MAX_TIMER_MS));
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `ms` spread uniformly over [ms * (1 - fraction), ms * (1 + fraction)]. */
export function jitter(ms: number, fraction = 0.2, random: () => number = Math.random): number {
  return Math.max(0, Math.round(ms * (1 - fraction + 2 * fraction * random())));
}

/** Exponential backoff for the `failures`-th consecutive failure (1-based), capped, jittered. */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  return jitter(Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 30)));
}

/** A failure after which the same write may succeed: the database was unreachable, slow, or a transaction conflicted. */
export function isTransientFailure(error: unknown): boolean {
  // `workflow.release_conflict`: a run's release lock was held exclusively (a cancellation) or a cascade
  // wait hit its bound; the same completion succeeds (or is fenced out) once that transaction ends.
  return (
    isRunledgerError(error) &&
    (error.category === 'unavailable' || error.code === 'database.transaction_conflict' || error.code === 'workflow.release_conflict')
  );
}

/**
 * Runs `fn`, retrying transient failures up to `attempts` times in all with
 * a short backoff. Recording an outcome is worth a retry: giving up leaves the
 * job to the lease expiry and the reaper, i.e. it runs again.
 */
export async function retryTransient<R>(fn: () => Promise<R>, attempts = 3, baseMs = 100): Promise<R> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= attempts || !isTransientFailure(error)) throw error;
      await sleep(backoffMs(attempt, baseMs, 2_000));
    }
  }
}
