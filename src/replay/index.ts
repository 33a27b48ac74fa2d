/** Public API of replay and requeue; re-exported by src/index.ts. */
export { compareAndReplaySucceededJob, type CompareAndReplaySucceededJobResult } from './replay.js';
export { compareAndRequeueJob, type CompareAndRequeueJobResult } from './requeue.js';
export {
  REQUEUE_STATE_POLICIES,
  REQUEUEABLE_STATUSES,
  type CompareAndReplaySucceededJobInput,
  type CompareAndRequeueJobInput,
  type RequeueStatePolicy,
  type RequeueableStatus,
} from './schemas.js';
