/** Queue metrics: the public surface (docs/operate/metrics.md). */
export {
  getQueueMetrics,
  type QueueMetrics,
  type JobTypeMetrics,
  type DurationPercentiles,
  type FinishedJobCounts,
  type ConcurrencyKeyMetrics,
  type RateKeyMetrics,
} from './queue-metrics.js';
export type { GetQueueMetricsInput } from './inputs.js';
