/**
 * The worker's local buffer of claimed jobs (like graphile-worker's
 * `localQueue`): claims put jobs here, and they start as handler slots free
 * (`pump`), so a slot that frees takes the next job at once instead of
 * waiting for a claim round trip. The claim loop (claim-loop.ts) keeps it at
 * most `prefetch` jobs beyond the free slots.
 *
 * A buffered job's lease runs from its claim, and nothing heartbeats it until
 * it starts. So a job may wait here at most `maxWaitMs` (the worker's
 * `heartbeatIntervalMs`: leaseSeconds x heartbeatFraction) since its claim
 * was sent; one older than that is released unrun (`job.buffer_expired`,
 * PENDING again at once with its attempt not used up) instead of started, by
 * `pump` or by a timer set for the oldest buffered job, whichever comes
 * first. Once the worker is stopping, `pump` releases every buffered job
 * (`job.worker_shutdown`). See docs/concepts/worker-loop.md for how the prefetch plans around it.
 */
import type { ClaimedJob } from '../job/claimed-job.js';
import { JOB_BUFFER_EXPIRED, JOB_WORKER_SHUTDOWN } from '../job/errors.js';

export interface BufferedJob {
  job: ClaimedJob;
  /** `Date.now()` when the claim was sent: the lease is at least this old. */
  claimedAt: number;
}

/** What the buffer asks of the worker. */
export interface JobBufferHooks {
  /** True once the worker stops: nothing starts, everything buffered is released. */
  stopping(): boolean;
  /** Handler slots free now. */
  freeSlots(): number;
  /** Starts a job in a free slot (it takes the slot). */
  launch(job: ClaimedJob, claimedAt: number): void;
  /** Gives back the lease of a job that will not run here; it holds its lease slot until the release is recorded. */
  release(job: ClaimedJob, claimedAt: number, reason: string): void;
  /** `count` buffered jobs waited `maxWaitMs` or more: called (with the time) before they are released. */
  expired(count: number, now: number): void;
  /** After each pump: jobs still buffered and slots still free (the claim sizer's observation). */
  observe(buffered: number, freeSlots: number): void;
}

export class JobBuffer {
  /** Claimed jobs not started yet, oldest first; each holds a lease slot. */
  private readonly jobs: BufferedJob[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerFor: BufferedJob | undefined;

  constructor(
    private readonly maxWaitMs: number,
    private readonly hooks: JobBufferHooks,
  ) {}

  get length(): number {
    return this.jobs.length;
  }

  push(job: ClaimedJob, claimedAt: number): void {
    this.jobs.push({ job, claimedAt });
  }

  /**
   * Moves buffered jobs into free handler slots, oldest first; releases
   * instead those that waited too long, and all of them once the worker
   * stops. Synchronous: runs on every slot free and after every claim.
   */
  pump(): void {
    const { hooks } = this;
    if (hooks.stopping()) {
      this.release(this.jobs.length, JOB_WORKER_SHUTDOWN);
      return;
    }
    this.releaseExpired();
    while (this.jobs.length > 0 && hooks.freeSlots() > 0) {
      const { job, claimedAt } = this.jobs.shift()!;
      hooks.launch(job, claimedAt);
    }
    hooks.observe(this.jobs.length, hooks.freeSlots());
    // One timer, for the oldest buffered job's expiry (re-armed only when the oldest changes).
    const oldest = this.jobs[0];
    if (oldest === this.timerFor) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerFor = oldest;
    if (oldest) {
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          this.timerFor = undefined;
          this.pump();
        },
        Math.max(0, oldest.claimedAt + this.maxWaitMs - Date.now()) + 1,
      );
    }
  }

  /** Clears the expiry timer (the worker has stopped; the buffer is empty). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerFor = undefined;
  }

  /** Releases the buffered jobs that waited `maxWaitMs` or more. */
  private releaseExpired(): void {
    const now = Date.now();
    let expired = 0;
    while (expired < this.jobs.length && now - this.jobs[expired]!.claimedAt >= this.maxWaitMs) expired += 1;
    if (expired === 0) return;
    this.hooks.expired(expired, now);
    this.release(expired, JOB_BUFFER_EXPIRED);
  }

  /** Releases the `count` oldest buffered jobs. */
  private release(count: number, reason: string): void {
    for (const { job, claimedAt } of this.jobs.splice(0, count)) this.hooks.release(job, claimedAt, reason);
  }
}
