/** The first outcome a worker reports for any job (success, failure, lost lease) or its first error. */
import type { Worker } from '../../src/worker/index.js';

export function firstJobOutcome(worker: Worker): { done: Promise<void>; errors: unknown[] } {
  const errors: unknown[] = [];
  const done = new Promise<void>((resolve) => {
    worker.on('job:success', () => resolve());
    worker.on('job:lease_lost', () => resolve());
    worker.on('job:failure', () => resolve());
    worker.on('worker:error', ({ error }) => {
      errors.push(error);
      resolve();
    });
  });
  return { done, errors };
}
