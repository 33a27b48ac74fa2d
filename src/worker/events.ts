/**
 * Lifecycle events of a worker, for metrics and tracing. Listeners run
 * synchronously where the event happens; a listener that throws is logged
 * and skipped, never allowed to break the worker or the other listeners.
 */
import { EventEmitter } from 'node:events';
import type { WorkerLogger } from '../job/logger.js';
import type { ClaimSizeReason } from './claim-size.js';

/** Who a job is, as every job event reports it. */
export interface JobInfo {
  jobId: string;
  jobType: string;
  runNumber: number;
  attempt: number;
  maxAttempts: number;
  organizationId: string | null;
  workerId: string;
}

/** The identity fields of a claimed job, as events and the handler context carry them. */
export function jobInfo(job: JobInfo): JobInfo {
  return {
    jobId: job.jobId,
    jobType: job.jobType,
    runNumber: job.runNumber,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    organizationId: job.organizationId,
    workerId: job.workerId,
  };
}

/** Where the worker met an error it handled (logged, retried or left to the lease). */
export type WorkerOperation =
  | 'claim'
  | 'heartbeat'
  | 'complete'
  | 'fail'
  | 'release'
  | 'reap'
  | 'listen'
  | 'schedule'
  | 'purge'
  | 'sync_definitions'
  | 'promote_intents'
  | 'registry';

export interface WorkerStats {
  /**
   * Jobs this worker holds: leased and not yet recorded (buffered, running,
   * or being released), or handlers still settling. At most
   * 2 x `concurrency` + the claim size + 2 x `completionBatchSize` (running
   * handlers, claimed jobs buffered for a slot, successes waiting in up to two
   * committing completion batches; the claim size is `batchSize` when given,
   * else the adaptive `worker.claimSize`, at most 250 or 2 x `concurrency`);
   * running handlers never exceed `concurrency`.
   */
  inFlight: number;
  claimed: number;
  succeeded: number;
  /** Failures recorded (retry scheduled or dead-lettered), timeouts included. */
  failed: number;
  /** Leases given back unrun (the attempt is not used up): at shutdown, or a buffered job that waited too long for a slot. */
  released: number;
  /** Jobs whose lease was found gone: nothing of theirs was recorded by this worker. */
  leaseLost: number;
}

export interface WorkerEvents {
  'job:start': { job: JobInfo };
  /** The success is committed. */
  'job:success': { job: JobInfo; output: unknown; durationMs: number };
  /** The handler's continuation is committed: the job's next slice is run `runNumber`, runnable at `nextRunAt`. */
  'job:continued': { job: JobInfo; runNumber: number; nextRunAt: Date; durationMs: number };
  /** The failure is committed: `status` says whether a retry is scheduled (`nextRunAt`) or the job is dead-lettered. */
  'job:failure': {
    job: JobInfo;
    code: string;
    message: string;
    /** What the handler threw (or the worker's own reason: timeout, shutdown, invalid payload). */
    error: unknown;
    retryable: boolean;
    status: 'PENDING' | 'DEAD_LETTERED';
    nextRunAt: Date | null;
    durationMs: number;
  };
  /**
   * The lease was given back (`reason`: `job.worker_shutdown`, `job.buffer_expired` for a buffered job that
   * waited too long, `database.unavailable` for a transactional attempt ended by a database fault): the job is
   * PENDING again, its attempt not used up.
   */
  'job:released': { job: JobInfo; reason: string };
  /**
   * The lease fence refused this worker; nothing was recorded. `canceled`: the job was canceled
   * (`cancelJob`, its workflow run canceled) while it ran; otherwise another attempt owns it now.
   */
  'job:lease_lost': { job: JobInfo; during: 'heartbeat' | 'save' | 'complete' | 'fail' | 'release'; canceled: boolean };
  /**
   * The adaptive claim size changed (never emitted with a fixed `batchSize`):
   * `starved` (grown: handlers emptied the buffer while a full claim was on
   * its way), `surplus` (shrunk: the buffer held more than a round trip
   * needed) or `lease` (shrunk: at the measured handler times a buffer this
   * large would not start its last job well inside its lease). See claim-size.ts.
   */
  'worker:claim_size': { workerId: string; claimSize: number; previous: number; reason: ClaimSizeReason };
  /** Nothing in flight and the last claim found nothing more (emitted once per idle period). */
  'worker:idle': { workerId: string };
  'worker:error': { error: unknown; operation: WorkerOperation; jobId?: string };
  'worker:stopped': { workerId: string; stats: WorkerStats };
}

export type WorkerEventName = keyof WorkerEvents;
export type WorkerEventListener<E extends WorkerEventName> = (payload: WorkerEvents[E]) => void;

/** A typed wrapper over EventEmitter whose `emit` isolates listeners from each other and from the worker. */
export class WorkerEventEmitter {
  private readonly emitter = new EventEmitter();

  constructor(private readonly logger: WorkerLogger) {
    this.emitter.setMaxListeners(100);
  }

  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): void {
    this.emitter.on(event, listener);
  }

  once<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): void {
    this.emitter.once(event, listener);
  }

  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): void {
    this.emitter.off(event, listener);
  }

  /** True when `event` has a listener: the per-job events skip building a payload nobody reads. */
  has(event: WorkerEventName): boolean {
    return this.emitter.listenerCount(event) > 0;
  }

  emit<E extends WorkerEventName>(event: E, payload: WorkerEvents[E]): void {
    if (this.emitter.listenerCount(event) === 0) return;
    // rawListeners keeps `once` wrappers, which remove themselves when called.
    for (const listener of this.emitter.rawListeners(event)) {
      try {
        (listener as WorkerEventListener<E>)(payload);
      } catch (error) {
        this.logger.error('worker event listener threw', { event, error });
      }
    }
  }
}
