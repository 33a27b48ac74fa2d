/** Input of `getQueueMetrics`; a bad input is `metrics.invalid_input` naming the field, before anything is read. */
import { z } from 'zod';
import { scopeSchema } from '../db/scope.js';
import { MIN_TIMESTAMP, timestamp } from '../validation/primitives.js';

export const METRICS_INVALID_INPUT = 'metrics.invalid_input';

/** The "recent" window: finished counts, wait and run time percentiles. */
export const RECENT_WINDOW_MS = 3_600_000;
/** The dead-letter window. */
export const DEAD_LETTER_WINDOW_MS = 86_400_000;
/**
 * Most finished jobs the percentiles read (the latest ones of the recent
 * window): the cost stays bounded however busy the hour was.
 */
export const MAX_DURATION_SAMPLES = 10_000;
/** Newest jobs the duration sample reads at most, finished or not (src/metrics/queries.ts durationSample). */
export const MAX_DURATION_SCAN = 50_000;

/** Concurrency keys the metrics list at most (the most waiting first; `concurrency.keyCount` counts them all). */
export const MAX_CONCURRENCY_KEYS = 50;
/** Rate keys the metrics list at most (the most waiting first; `rateLimits.keyCount` counts them all). */
export const MAX_RATE_KEYS = 50;

/**
 * The earliest `now` whose windows still start at a storable instant: the
 * windows are subtracted from `now` and sent to PostgreSQL, so a `now` within
 * the longest window of year 1 would send a date it refuses (22008).
 */
export const MIN_METRICS_NOW = new Date(MIN_TIMESTAMP.getTime() + Math.max(RECENT_WINDOW_MS, DEAD_LETTER_WINDOW_MS));

export const getQueueMetricsInputSchema = z.strictObject({
  scope: scopeSchema,
  /** The clock the windows end at; default the database's `statement_timestamp()`. At least MIN_METRICS_NOW (0001-01-02). */
  now: timestamp
    .refine(
      (d) => d.getTime() >= MIN_METRICS_NOW.getTime(),
      `must be at or after ${MIN_METRICS_NOW.toISOString()} (its ${DEAD_LETTER_WINDOW_MS / 3_600_000} h window starts before it)`,
    )
    .optional(),
});
export type GetQueueMetricsInput = z.input<typeof getQueueMetricsInputSchema>;
