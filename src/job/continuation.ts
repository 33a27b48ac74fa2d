/**
 * What a handler returns to end a slice of a long job instead of finishing
 * it: `continueNow({ checkpoint, progress })` or `continueAfter(ms, ...)`.
 * The worker records it through its completion batch (src/queue/continue.ts):
 * the same job runs again as the next run, its next slice reading
 * `ctx.checkpoint`. A workflow job step must opt in at enqueue
 * (`allowContinuation`); otherwise the continuation fails the step
 * (`job.workflow_handler_continuation_not_enabled`).
 */
import { ValidationError } from '../errors/runledger-error.js';
import type { JsonValue } from '../model/json.js';

const CONTINUATION = Symbol.for('runledger.Continuation');

export interface ContinuationOptions {
  /** Handed to the next slice as `ctx.checkpoint` (JSON; null clears). Left out: the stored one is kept. */
  checkpoint?: JsonValue | null;
  /** Stored as the job's progress (JSON, e.g. `{ processed, total }`). Left out: the stored one is kept. */
  progress?: JsonValue | null;
}

/** A handler's request for another slice; make one with `continueNow` or `continueAfter`. */
export interface Continuation {
  readonly [CONTINUATION]: true;
  /** 0: the next slice is runnable at once. */
  readonly delayMs: number;
  readonly checkpoint: JsonValue | null | undefined;
  readonly progress: JsonValue | null | undefined;
}

/**
 * Ends this slice; the next one is runnable at once.
 *
 * @example return continueNow({ checkpoint: { page: page + 1 }, progress: { processed, total } });
 */
export function continueNow(options: ContinuationOptions = {}): Continuation {
  return continueAfter(0, options);
}

/** Ends this slice; the next one is runnable after `delayMs` (an integer in [0, 2^31 - 1]). */
export function continueAfter(delayMs: number, options: ContinuationOptions = {}): Continuation {
  if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > 2_147_483_647) {
    throw new ValidationError('worker.invalid_continuation', 'delayMs', 'Invalid delayMs: must be an integer from 0 to 2147483647');
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError('worker.invalid_continuation', 'options', 'Invalid options: expected an object with checkpoint and/or progress');
  }
  return Object.freeze({ [CONTINUATION]: true as const, delayMs, checkpoint: options.checkpoint, progress: options.progress });
}

export function isContinuation(value: unknown): value is Continuation {
  return typeof value === 'object' && value !== null && (value as { [CONTINUATION]?: unknown })[CONTINUATION] === true;
}
