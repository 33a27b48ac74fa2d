/** Retention: the public surface (docs/operate/retention.md). */
export { purgeFinished, type PurgeFinishedResult } from './purge.js';
export { PURGEABLE_JOB_STATUSES, PURGEABLE_RUN_STATUSES, type PurgeFinishedInput, type PurgeableJobStatus, type PurgeableRunStatus } from './inputs.js';
