/** Input of `getQueueMetrics`; a bad input is `metrics.invalid_input` naming the field, before anything is read. */
import { z } from 'zod';
import { scopeSchema } from '../db/scope.js';
import { timestamp } from '../validation/primitives.js';

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

export const getQueueMetricsInputSchema = z.strictObject({
  scope: scopeSchema,
  /** The clock the windows end at; default the database's `statement_timestamp()`. */
  now: timestamp.optional(),
});
export type GetQueueMetricsInput = z.input<typeof getQueueMetricsInputSchema>;
