/** Retention: the public surface (see README "Retention"). */
export { purgeFinished, type PurgeFinishedResult } from './purge.js';
export { PURGEABLE_JOB_STATUSES, PURGEABLE_RUN_STATUSES, type PurgeFinishedInput, type PurgeableJobStatus, type PurgeableRunStatus } from './inputs.js';
