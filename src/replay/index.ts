/** Public API of replay and requeue; re-exported by src/index.ts. */
export { compareAndReplaySucceededJob, type CompareAndReplaySucceededJobResult } from './replay.js';
export { compareAndRequeueJob, type CompareAndRequeueJobResult } from './requeue.js';
export type { CompareAndReplaySucceededJobInput, CompareAndRequeueJobInput, RequeueStatePolicy, RequeueableStatus } from './inputs.js';
export {
  countDeadLetteredJobs,
  requeueDeadLetteredJobs,
  type CountDeadLetteredJobsInput,
  type DeadLetterCount,
  type DeadLetterFilter,
  type RequeueDeadLetteredJobsInput,
  type RequeueDeadLetteredJobsResult,
} from './bulk-requeue.js';
