/**
 * Public input schemas of replay and requeue. Each operation parses its input
 * here before it touches a connection, so a bad input writes nothing, takes no
 * lock, and the ValidationError (code `job.invalid_input`) names the field.
 */
import { z } from 'zod';
import { scopeSchema } from '../db/scope.js';
import { nonBlank, positiveInt, requestKey, uuid } from '../validation/primitives.js';

/** Replay reasons are audit text, bounded like cancellation reasons. */
export const MAX_REPLAY_REASON_LENGTH = 1_000;

export const compareAndReplaySucceededJobInputSchema = z.strictObject({
  scope: scopeSchema,
  sourceJobId: uuid,
  /** The run of the source the caller saw succeed. */
  expectedRunNumber: positiveInt,
  /** Identity of one replay action: retries reuse it, another replay uses another key. */
  replayRequestKey: requestKey,
  reason: nonBlank(MAX_REPLAY_REASON_LENGTH),
});
export type CompareAndReplaySucceededJobInput = z.input<typeof compareAndReplaySucceededJobInputSchema>;
export type ParsedReplayRequest = z.output<typeof compareAndReplaySucceededJobInputSchema>;

export const REQUEUE_STATE_POLICIES = ['preserve_progress_and_checkpoint', 'reset_progress_and_checkpoint'] as const;
export type RequeueStatePolicy = (typeof REQUEUE_STATE_POLICIES)[number];

/** The statuses a requeue starts from. A SUCCEEDED job is replayed as a new job, never requeued. */
export const REQUEUEABLE_STATUSES = ['DEAD_LETTERED', 'CANCELED'] as const;
export type RequeueableStatus = (typeof REQUEUEABLE_STATUSES)[number];

export const compareAndRequeueJobInputSchema = z.strictObject({
  scope: scopeSchema,
  jobId: uuid,
  expectedStatus: z.enum(REQUEUEABLE_STATUSES, {
    error: 'must be DEAD_LETTERED or CANCELED (a SUCCEEDED job is replayed with compareAndReplaySucceededJob)',
  }),
  /** The run the caller saw end in `expectedStatus`. */
  expectedRunNumber: positiveInt,
  statePolicy: z.enum(REQUEUE_STATE_POLICIES),
});
export type CompareAndRequeueJobInput = z.input<typeof compareAndRequeueJobInputSchema>;
export type ParsedRequeueRequest = z.output<typeof compareAndRequeueJobInputSchema>;
