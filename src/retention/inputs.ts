/** Input of `purgeFinished`; a bad input is `retention.invalid_input` naming the field, before anything is read. */
import { z } from 'zod';
import { positiveInt, timestamp } from '../validation/primitives.js';

export const RETENTION_INVALID_INPUT = 'retention.invalid_input';
export const MAX_PURGE_BATCH = 10_000;
export const DEFAULT_PURGE_BATCH = 500;

export const PURGEABLE_JOB_STATUSES = ['SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'] as const;
export const PURGEABLE_RUN_STATUSES = ['SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'] as const;
export type PurgeableJobStatus = (typeof PURGEABLE_JOB_STATUSES)[number];
export type PurgeableRunStatus = (typeof PURGEABLE_RUN_STATUSES)[number];

export const purgeFinishedInputSchema = z.strictObject({
  /** Rows that finished strictly before this instant are purged. */
  olderThan: timestamp,
  /** Direct jobs in these terminal statuses (default all three). */
  statuses: z.array(z.enum(PURGEABLE_JOB_STATUSES)).min(1, 'must name at least one status').optional(),
  /** Workflow runs in these terminal statuses (default all three); `[]`-free: omit to keep the default. */
  workflowRunStatuses: z.array(z.enum(PURGEABLE_RUN_STATUSES)).min(1, 'must name at least one status').optional(),
  /** Candidate jobs, or runs, per transaction. Default 500. */
  batchSize: positiveInt.max(MAX_PURGE_BATCH).optional(),
  /** Count what would be purged, delete nothing. */
  dryRun: z.boolean().optional(),
});
export type PurgeFinishedInput = z.input<typeof purgeFinishedInputSchema>;
