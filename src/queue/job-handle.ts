/**
 * Job handles: wait for one job's result (BullMQ's `waitUntilFinished`), the
 * job counterpart of a workflow run's `getResult`.
 *
 * Waiting polls, with backoff: no notification announces that a job ended
 * (runs have one; a pg_notify in every job's completion would cost the drain
 * its batched commit), so the wait reads the job, sleeps, and reads again,
 * starting at 20 ms and growing by half to `pollIntervalMs` (500 ms). Reads use a root client:
 * a transaction client stops working when its transaction ends.
 */
import { z } from 'zod';
import { isTransactionClient, type Db, type PrismaClientLike } from '../client/types.js';
import { ConflictError, UnavailableError, ValidationError } from '../errors/runledger-error.js';
import type { AnyJobDefinition, JobOutput } from '../job/contract.js';
import { isJobDefinition } from '../job/define-job.js';
import type { Job } from '../model/job-rows.js';
import { parseInput } from '../validation/parse.js';
import { MAX_TIMER_MS, timerMs } from '../validation/primitives.js';
import type { JsonValue } from '../model/json.js';
import { abortSignalSchema } from '../validation/abort-signal.js';
import { JOB_INVALID_INPUT, jobRefSchema, type JobRef } from './inputs.js';
import { getJob } from './reads.js';

export const DEFAULT_JOB_RESULT_TIMEOUT_MS = 30_000;
const FIRST_POLL_MS = 20;
const DEFAULT_MAX_POLL_MS = 500;

const handleOptionsSchema = z.strictObject({ pollIntervalMs: timerMs.min(1, 'must be at least 1').optional() });
const getResultOptionsSchema = z.strictObject({
  timeoutMs: timerMs.optional(),
  signal: abortSignalSchema.optional(),
});

export interface JobHandleOptions {
  /** The longest pause between two reads while waiting (default 500 ms); the first is 20 ms, each next 1.5 times longer. */
  pollIntervalMs?: number;
}

export interface GetJobResultOptions {
  /** Give up after this long (default 30 s, at most 2^31-1 ms) with `job.result_wait_timeout`. */
  timeoutMs?: number;
  /** Stop waiting when it aborts, with `job.result_wait_aborted`; the job itself is not touched. */
  signal?: AbortSignal;
}

/** `Output`: the stored output type, `JobOutput<typeof definition>` when the handle was made from a definition. */
export interface JobHandle<Output = JsonValue | null> {
  readonly jobId: string;
  /** The job now (`job.not_found` outside the handle's scope). */
  getJob(): Promise<Job>;
  /**
   * Waits until the job ends and returns its output once it SUCCEEDED.
   * Throws `job.result_dead_lettered` (its `lastErrorCode` and
   * `lastErrorMessage` in `details`), `job.result_canceled`,
   * `job.result_wait_timeout` when it is still live at the deadline,
   * `job.result_wait_aborted` when the signal aborts, and `job.not_found`.
   */
  getResult(options?: GetJobResultOptions): Promise<Output>;
}

/**
 * A handle on a job. With a definition, `getResult` is typed by its output
 * and a job of another type is refused (`job.result_type_mismatch`).
 *
 * @example
 * const { jobId } = await enqueueJob(prisma, capture, { invoiceId }, { organizationId });
 * const receipt = await jobHandle(prisma, capture, { jobId, scope: organizationScope(organizationId) }).getResult({ timeoutMs: 60_000 });
 * receipt.receiptId; // typed by capture's handler
 */
export function jobHandle<D extends AnyJobDefinition>(db: PrismaClientLike, definition: D, ref: JobRef, options?: JobHandleOptions): JobHandle<JobOutput<D>>;
export function jobHandle(db: PrismaClientLike, ref: JobRef, options?: JobHandleOptions): JobHandle;
export function jobHandle(db: PrismaClientLike, ...rest: unknown[]): JobHandle<unknown> {
  const definition = isJobDefinition(rest[0]) ? (rest.shift() as AnyJobDefinition) : undefined;
  const [refInput, options = {}] = rest as [JobRef, JobHandleOptions | undefined];
  if (isTransactionClient(db as Db)) {
    throw new ValidationError(
      'job.handle_requires_root_client',
      'db',
      'A job handle reads with a root Prisma client; a transaction client stops working when its transaction ends.',
    );
  }
  const ref = parseInput(jobRefSchema, refInput, JOB_INVALID_INPUT);
  const maxPollMs = parseInput(handleOptionsSchema, options, JOB_INVALID_INPUT, 'options').pollIntervalMs ?? DEFAULT_MAX_POLL_MS;
  const read = () => getJob(db, ref);
  return {
    jobId: ref.jobId,
    getJob: read,
    async getResult(resultOptions: GetJobResultOptions = {}): Promise<unknown> {
      const { timeoutMs = DEFAULT_JOB_RESULT_TIMEOUT_MS, signal } = parseInput(getResultOptionsSchema, resultOptions, JOB_INVALID_INPUT, 'options');
      const deadline = Date.now() + timeoutMs;
      for (let pause = FIRST_POLL_MS; ; pause = Math.min(pause * 1.5, maxPollMs)) {
        if (signal?.aborted) throw aborted(ref.jobId);
        const job = await read();
        if (definition && job.jobType !== definition.jobType) {
          throw new ConflictError('job.result_type_mismatch', `The job is of type "${job.jobType}", not "${definition.jobType}".`, {
            details: { jobId: job.id, jobType: job.jobType, expectedJobType: definition.jobType },
          });
        }
        const outcome = settled(job);
        if (outcome) return outcome.output;
        if (Date.now() >= deadline) {
          throw new UnavailableError('job.result_wait_timeout', `The job did not finish within ${timeoutMs} ms.`, {
            details: { jobId: job.id, status: job.status },
          });
        }
        await pauseUntil(Math.min(pause, deadline - Date.now()), signal);
      }
    },
  };
}

/** The job's output if it succeeded, a coded error if it ended otherwise, undefined while it is live. */
function settled(job: Job): { output: JsonValue | null } | undefined {
  const details = { jobId: job.id, status: job.status, lastErrorCode: job.lastErrorCode, lastErrorMessage: job.lastErrorMessage };
  switch (job.status) {
    case 'SUCCEEDED':
      return { output: job.output };
    case 'DEAD_LETTERED':
      throw new ConflictError('job.result_dead_lettered', `The job was dead-lettered (${job.lastErrorCode ?? 'no error code'}).`, { details });
    case 'CANCELED':
      throw new ConflictError('job.result_canceled', 'The job was canceled.', { details });
    default:
      return undefined;
  }
}

function aborted(jobId: string): UnavailableError {
  return new UnavailableError('job.result_wait_aborted', 'Stopped waiting for the job: the signal aborted.', { details: { jobId } });
}

/** Resolves after `ms` or at once when `signal` aborts (the loop then reports the abort). */
function pauseUntil(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, Math.min(ms, MAX_TIMER_MS)));
    signal?.addEventListener('abort', done, { once: true });
  });
}
