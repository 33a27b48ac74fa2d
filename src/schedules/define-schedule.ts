/**
 * `defineSchedule`: a schedule written next to its job definition, its
 * payload typed by that definition. It returns the plain upsert input, for
 * `createWorker({ declareSchedules: { schedules: [...] } })`, `declareSchedules`
 * or `upsertSchedule`.
 */
import { ValidationError } from '../errors/runledger-error.js';
import { checkDefinitionPayloadSync } from '../job/payload.js';
import { isJobDefinition } from '../job/define-job.js';
import type { AnyJobDefinition, JobPayload } from '../job/contract.js';
import { SCHEDULE_INVALID_INPUT, type UpsertScheduleInput } from './inputs.js';

type ScheduleSettings = Omit<UpsertScheduleInput, 'jobType' | 'payload' | 'workflow'>;

/** A job schedule by definition: `payload` is checked against the definition's input type. */
export function defineSchedule<D extends AnyJobDefinition>(input: ScheduleSettings & { job: D; payload: JobPayload<D> }): UpsertScheduleInput;
/** A schedule by job type name (`jobType` + `payload`) or a workflow schedule (`workflow`). */
export function defineSchedule(input: UpsertScheduleInput): UpsertScheduleInput;
export function defineSchedule(input: UpsertScheduleInput | (ScheduleSettings & { job: AnyJobDefinition; payload: unknown })): UpsertScheduleInput {
  if (typeof input !== 'object' || input === null) throw new ValidationError(SCHEDULE_INVALID_INPUT, 'input', 'Invalid schedule: expected an object');
  if (!('job' in input)) return input;
  const { job, ...rest } = input;
  if (!isJobDefinition(job)) throw new ValidationError(SCHEDULE_INVALID_INPUT, 'job', 'Invalid job: expected a defineJob(...) definition');
  checkDefinitionPayloadSync(job, rest.payload, [], SCHEDULE_INVALID_INPUT);
  // The definition's own attempts and timeout, unless the schedule sets them.
  return {
    ...rest,
    jobType: job.jobType,
    ...(rest.maxAttempts === undefined && job.maxAttempts !== undefined ? { maxAttempts: job.maxAttempts } : {}),
    ...(rest.timeoutSeconds === undefined && job.timeoutSeconds !== undefined ? { timeoutSeconds: job.timeoutSeconds } : {}),
  } as UpsertScheduleInput;
}
