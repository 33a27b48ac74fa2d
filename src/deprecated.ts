/**
 * Names renamed so the public API reads one way (listed in CHANGELOG.md's
 * "Deprecated"): each old name stays for one release as an alias of the new
 * one, marked `@deprecated` so editors strike it through.
 *
 * - `completeJobSuccess` / `completeJobsSuccess` -> `completeJob` / `completeJobs`:
 *   the lease writes are verb + Job (`markJobRunning`, `heartbeatJob`,
 *   `completeJob`, `failJob`, `releaseJob`, `continueJob`, `cancelJob`).
 * - `enqueueOrGetActiveWorkflow` -> `enqueueOrGetActiveWorkflowRun`: like
 *   `enqueueWorkflowRun`, it enqueues a run.
 */
import { completeJob, completeJobs } from './queue/complete.js';
import { enqueueOrGetActiveWorkflowRun } from './workflow/active-keys.js';

/** @deprecated Renamed `completeJob`; this alias is removed in the next minor release. */
export const completeJobSuccess: typeof completeJob = completeJob;
/** @deprecated Renamed `completeJobs`; this alias is removed in the next minor release. */
export const completeJobsSuccess: typeof completeJobs = completeJobs;
/** @deprecated Renamed `enqueueOrGetActiveWorkflowRun`; this alias is removed in the next minor release. */
export const enqueueOrGetActiveWorkflow: typeof enqueueOrGetActiveWorkflowRun = enqueueOrGetActiveWorkflowRun;
