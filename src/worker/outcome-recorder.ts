/**
 * The writes that record one job's outcome once JobExecution has taken it:
 * a success or continuation (queued on the completion batch), a failure
 * (failJob: retry or dead-letter), a release (releaseJob: PENDING again, the
 * attempt not used up), or a lease found lost (nothing to write). Each
 * reports itself (stats, log line, event) and then resolves `recorded`;
 * `successQueued` resolves once a success needs no more handler code, only a
 * commit, which is when the worker frees the handler slot.
 *
 * Nothing here throws: a write the database refused for good ends as a
 * logged `worker:error`, and the lease then expires and the job runs again.
 */
import type { DueWakes } from './due-wakes.js';
import type { Db } from '../client/types.js';
import { isRunledgerError } from '../errors/runledger-error.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import { failJob } from '../queue/fail.js';
import { releaseJob } from '../queue/release-lease.js';
import { leaseLostToCancel } from '../queue/lease.js';
import type { JsonValue } from '../model/json.js';
import type { BackoffPolicy } from '../job/defaults.js';
import type { Continuation } from '../job/continuation.js';
import { continuationFields } from '../job/continuation-fields.js';
import type { FailureRecord } from '../job/errors.js';
import type { WorkerLogger } from '../job/logger.js';
import type { CompletionBatcher } from './completion-batcher.js';
import type { JobInfo, WorkerEventEmitter, WorkerEvents, WorkerStats } from './events.js';
import { leaseDeadline, retryLeaseWrite } from './retry.js';
import type { AttemptCommitted } from './transactional-attempt.js';
import { Latch } from './latch.js';

/** Told (synchronously) when the outcome is recorded and when a success is queued: the job's execution. */
export interface OutcomeListener {
  outcomeRecorded(): void;
  successQueued(): void;
}

export const LEASE_OWNER_MISMATCH = 'job.lease_owner_mismatch';
const JOB_WORKFLOW_CONTINUATION_NOT_ENABLED = 'job.workflow_handler_continuation_not_enabled';
/** Longest wait for the read that tells a cancel from another attempt after a refused fence. */
const LOST_LEASE_READ_MS = 2_000;

export interface OutcomeRecorderDeps {
  db: Db;
  events: WorkerEventEmitter;
  batcher: CompletionBatcher;
  /** Counters the recorder increments (the worker's `stats()` reads them). */
  stats: Omit<WorkerStats, 'inFlight'>;
  /** Told when a continuation this worker wrote falls due, to claim it then rather than at the next poll. */
  dueWakes?: DueWakes;
}

export class OutcomeRecorder {
  /** The outcome is committed, refused by the fence, or given up on. */
  readonly recordedLatch = new Latch();
  /** A success or continuation is queued on the completion batch (or committed by its transactional attempt). */
  readonly successQueuedLatch = new Latch();

  constructor(
    private readonly job: ClaimedJob,
    private readonly info: JobInfo,
    private readonly backoff: Readonly<BackoffPolicy>,
    private readonly deps: OutcomeRecorderDeps,
    private readonly logger: WorkerLogger,
    /** Told when `recorded` and `successQueued` happen; its `elapsed()` is the handler's milliseconds (`durationMs` of the events). */
    private readonly listener: OutcomeListener & { elapsed(): number },
  ) {}

  /** Resolves once the outcome is committed, refused by the fence, or given up on. */
  get recorded(): Promise<void> {
    return this.recordedLatch.promise;
  }

  private markRecorded(): void {
    if (this.recordedLatch.open()) this.listener.outcomeRecorded();
  }

  private markSuccessQueued(): void {
    if (this.successQueuedLatch.open()) this.listener.successQueued();
  }

  private elapsed(): number {
    return this.listener.elapsed();
  }

  /** Nothing more will be written for this job (its lease was lost and reported). */
  done(): void {
    this.markRecorded();
  }

  async success(output: JsonValue | undefined): Promise<void> {
    const completion = this.deps.batcher.complete(this.job, output);
    this.markSuccessQueued();
    const result = await completion;
    if (result.outcome === 'succeeded') this.reportSucceeded(output, '');
    else await this.reportNotCompleted(result, 'success');
    this.markRecorded();
  }

  /** A continuation goes through the completion batch like a success (its own statement there, continue.ts). */
  async continuation(continuation: Continuation): Promise<void> {
    const converted = continuationFields(continuation);
    if (!converted.ok) {
      await this.failure(converted.failure, continuation);
      return;
    }
    const completion = this.deps.batcher.continue({ lease: this.job, delayMs: continuation.delayMs, ...converted.fields });
    this.markSuccessQueued();
    const result = await completion;
    if (result.outcome === 'continued') {
      if (continuation.delayMs > 0) this.deps.dueWakes?.after(continuation.delayMs);
      this.reportContinued(result.runNumber, result.nextRunAt, '');
    } else if (result.outcome === 'not_enabled') {
      await this.failure(
        {
          code: JOB_WORKFLOW_CONTINUATION_NOT_ENABLED,
          message: 'The handler returned a continuation, but its workflow step was not enqueued with allowContinuation.',
          retryable: false,
        },
        continuation,
      );
      return;
    } else {
      await this.reportNotCompleted(result, 'continuation');
    }
    this.markRecorded();
  }

  /** A transactional attempt committed its outcome together with the handler's writes: only the report is left. */
  committed(committed: AttemptCommitted): void {
    this.markSuccessQueued();
    if (committed.kind === 'succeeded') this.reportSucceeded(committed.output, ' (transactional)');
    else {
      if (committed.delayMs > 0) this.deps.dueWakes?.after(committed.delayMs);
      this.reportContinued(committed.runNumber, committed.nextRunAt, ' (transactional)');
    }
    this.markRecorded();
  }

  async failure(failure: FailureRecord, error: unknown): Promise<void> {
    try {
      const { code, message, stack, retryable, retryNotBefore } = failure;
      const recorded = stack === undefined ? { code, message } : { code, message, stack };
      const result = await retryLeaseWrite(() => failJob(this.deps.db, { ...this.job, error: recorded, retryable, retryNotBefore, backoff: this.backoff }), {
        deadline: () => leaseDeadline(this.job),
      });
      this.deps.stats.failed += 1;
      const fields = { code: failure.code, message: failure.message, status: result.status, nextRunAt: result.nextRunAt };
      if (result.status === 'DEAD_LETTERED') this.logger.error('job dead-lettered', fields);
      else this.logger.warn('job failed; retry scheduled', fields);
      this.deps.events.emit('job:failure', {
        job: this.info,
        code: failure.code,
        message: failure.message,
        error,
        retryable: failure.retryable,
        status: result.status,
        nextRunAt: result.nextRunAt,
        durationMs: this.elapsed(),
      });
    } catch (failError) {
      if (isRunledgerError(failError, LEASE_OWNER_MISMATCH)) {
        await this.reportLeaseLost('fail');
      } else {
        this.logger.error('recording the failure failed; the lease will expire and the job run again', { error: failError });
        this.deps.events.emit('worker:error', { error: failError, operation: 'fail', jobId: this.job.jobId });
      }
    }
    this.markRecorded();
  }

  /** Gives the lease back: PENDING again at once, the attempt not used up, counted in `released`. */
  async release(reason: string): Promise<void> {
    try {
      await retryLeaseWrite(() => releaseJob(this.deps.db, { ...this.job, reason }), { deadline: () => leaseDeadline(this.job) });
      this.deps.stats.released += 1;
      this.logger.info('lease released; the attempt is not used up', { reason });
      this.deps.events.emit('job:released', { job: this.info, reason });
    } catch (error) {
      if (isRunledgerError(error, LEASE_OWNER_MISMATCH)) {
        await this.reportLeaseLost('release');
      } else {
        this.logger.error('releasing the lease failed; it will expire and the job run again', { error });
        this.deps.events.emit('worker:error', { error, operation: 'release', jobId: this.job.jobId });
      }
    }
    this.markRecorded();
  }

  /** A fence refused this job's lease: counted in `leaseLost`, reported as canceled or taken over. */
  async reportLeaseLost(during: WorkerEvents['job:lease_lost']['during'], canceled?: boolean): Promise<void> {
    const wasCanceled = canceled ?? (await this.lostToCancel());
    this.deps.stats.leaseLost += 1;
    if (wasCanceled) this.logger.info('the job was canceled while it ran; its handler was aborted, nothing recorded', { during });
    else this.logger.warn('lease lost: another attempt owns the job; nothing recorded', { during });
    this.deps.events.emit('job:lease_lost', { job: this.info, during, canceled: wasCanceled });
  }

  /**
   * A fence refused: canceled (the row says CANCELED for this run), or taken by another attempt.
   * Unknown (the read failed, or took over LOST_LEASE_READ_MS: the handler's abort waits on it) reads as the latter.
   */
  async lostToCancel(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), LOST_LEASE_READ_MS);
    });
    try {
      return await Promise.race([leaseLostToCancel(this.deps.db, this.job).catch(() => false), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A queued success or continuation the batch did not commit: the fence refused it, or the database did. */
  private async reportNotCompleted(result: { outcome: 'lease_owner_mismatch' } | { outcome: 'error'; error: unknown }, what: string): Promise<void> {
    if (result.outcome === 'lease_owner_mismatch') {
      await this.reportLeaseLost('complete');
      return;
    }
    this.logger.error(`recording the ${what} failed; the lease will expire and the job run again`, { error: result.error });
    this.deps.events.emit('worker:error', { error: result.error, operation: 'complete', jobId: this.job.jobId });
  }

  private reportSucceeded(output: JsonValue | undefined, how: string): void {
    this.deps.stats.succeeded += 1;
    this.logger.debug(`job succeeded${how}`);
    if (this.deps.events.has('job:success')) this.deps.events.emit('job:success', { job: this.info, output, durationMs: this.elapsed() });
  }

  private reportContinued(runNumber: number, nextRunAt: Date, how: string): void {
    this.logger.debug(`job continued${how}`, { runNumber, nextRunAt });
    this.deps.events.emit('job:continued', { job: this.info, runNumber, nextRunAt, durationMs: this.elapsed() });
  }
}
