/**
 * A running job's lease: the heartbeats that extend it (every
 * `heartbeatIntervalMs`, one at a time, the first that long after the claim,
 * not after the start, so time spent in the worker's buffer is not added to
 * the lease's exposure) and the handler's lease-fenced writes
 * (`ctx.saveProgress`, `saveCheckpoint`, `setStage`, `progress`). A refused
 * fence means the lease is lost: the keeper tells its execution (`lost`),
 * which aborts the handler. Heartbeats stop once the execution has taken an
 * outcome (`decided`): after that the lease is recorded, released or gone.
 */
import type { Db } from '../client/types.js';
import { isRunledgerError } from '../errors/runledger-error.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import { heartbeatJob } from '../queue/lifecycle.js';
import { recordJobProgress, setJobStage } from '../queue/stage.js';
import type { ContextWrites, SaveFields } from '../job/context.js';
import type { JsonValue } from '../model/json.js';
import type { WorkerLogger } from '../job/logger.js';
import type { WorkerEventEmitter } from './events.js';
import { LEASE_OWNER_MISMATCH } from './outcome-recorder.js';
import { leaseDeadline, leaseGranted, retryLeaseWrite } from './retry.js';

export interface LeaseKeeperDeps {
  db: Db;
  leaseSeconds: number;
  heartbeatIntervalMs: number;
  events: WorkerEventEmitter;
}

export interface LeaseKeeperHooks {
  /** True once the execution has taken an outcome: no more heartbeats. */
  decided(): boolean;
  /** A fence refused the lease; resolves once the execution has handled it. */
  lost(during: 'heartbeat' | 'save'): Promise<void>;
}

export class LeaseKeeper implements ContextWrites {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly job: ClaimedJob,
    private readonly deps: LeaseKeeperDeps,
    private readonly logger: WorkerLogger,
    private readonly hooks: LeaseKeeperHooks,
  ) {}

  /** The next heartbeat in `delayMs`. */
  schedule(delayMs = this.deps.heartbeatIntervalMs): void {
    this.timer = setTimeout(() => void this.heartbeat(), delayMs);
  }

  /** No more heartbeats (the outcome is taken). */
  stop(): void {
    clearTimeout(this.timer);
  }

  /**
   * What the handler's ctx writes through: every write fenced to this lease. The keeper itself, its methods
   * on the prototype (the context calls them as `writes.save(...)`): not three closures made for every job.
   */
  contextWrites(): ContextWrites {
    return this;
  }

  /** ctx.saveProgress / ctx.saveCheckpoint: a heartbeat carrying the field, fenced like every heartbeat. */
  async save(fields: SaveFields): Promise<void> {
    await this.fenced(() => this.extend(fields));
  }

  async setStage(stage: string): Promise<void> {
    await this.fenced(() => setJobStage(this.deps.db, { ...this.job, stage }));
  }

  async progress(processed: number, total: number | undefined): Promise<JsonValue> {
    const progress = await this.fenced(() => recordJobProgress(this.deps.db, { ...this.job, processed, ...(total === undefined ? {} : { total }) }));
    return { processed: progress.processed, total: progress.total };
  }

  private async heartbeat(): Promise<void> {
    if (this.hooks.decided()) return;
    try {
      // Retried until the lease would expire, and no longer once an outcome is taken (deadline 0).
      await retryLeaseWrite(() => this.extend(), { deadline: () => (this.hooks.decided() ? 0 : leaseDeadline(this.job)) });
    } catch (error) {
      if (isRunledgerError(error, LEASE_OWNER_MISMATCH)) {
        await this.hooks.lost('heartbeat');
        return;
      }
      // The lease is still good until it expires; the next heartbeat may get through.
      this.logger.warn('heartbeat failed', { error });
      this.deps.events.emit('worker:error', { error, operation: 'heartbeat', jobId: this.job.jobId });
    }
    if (!this.hooks.decided()) this.schedule();
  }

  /** A handler's lease-fenced write: a refused fence means the lease is lost (the handler is aborted). */
  private async fenced<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (isRunledgerError(error, LEASE_OWNER_MISMATCH)) await this.hooks.lost('save');
      throw error;
    }
  }

  /** One heartbeat; on success the lease is known to last `leaseSeconds` from when it was sent. */
  private async extend(fields?: SaveFields): Promise<void> {
    const sentAt = Date.now();
    await heartbeatJob(this.deps.db, { ...this.job, leaseSeconds: this.deps.leaseSeconds, ...(fields ? { save: fields } : {}) });
    leaseGranted(this.job, sentAt, this.deps.leaseSeconds);
  }
}
