/**
 * The worker's claim loop: one async loop that decides when to claim and how
 * many, sends claims (at most MAX_CLAIMS_IN_FLIGHT at once) and puts what
 * they bring into the job buffer. Its states, wake-ups and the claim limit
 * are described in docs/concepts/worker-loop.md. All of its state is touched
 * only on the event loop thread, so the flag checks and the wait that
 * follows them cannot interleave with a wake-up.
 */
import { RateWakes } from './rate-wakes.js';
import type { PrismaClientLike } from '../client/types.js';
import type { WorkerLogger } from '../job/logger.js';
import { claimJobs } from '../queue/claim.js';
import type { ClaimSizeChange, ClaimSizer } from './claim-size.js';
import { DEFAULT_MAX_FLUSHES } from './completion-batcher.js';
import type { WorkerEventEmitter } from './events.js';
import type { JobBuffer } from './job-buffer.js';
import { backoffMs, type Wakeup } from './timing.js';

/** Leases a worker may hold per unit of concurrency (running jobs plus successes waiting for their commit), on top of a claim size of buffered ones. */
const LEASE_SLOTS_PER_HANDLER_SLOT = 2;

/**
 * Claims on their way at once. A second one sent while the first is on its way scans the same head of the
 * queue and steps over the rows the first has locked: in a fleet that cost more than it hid (bench/README.md,
 * "One claim in flight").
 */
const MAX_CLAIMS_IN_FLIGHT = 1;

/** A wake for rate tokens that found none to claim waits at least this, doubling (see wakeForTokens). */
const TOKEN_WAKE_FLOOR_MS = 10;

/** Claim failures back off from this, doubling, up to the poll interval (at least 1 s, at most 30 s). */
const CLAIM_BACKOFF_BASE_MS = 100;

export interface ClaimLoopSettings {
  db: PrismaClientLike;
  workerId: string;
  jobTypes: string[];
  concurrency: number;
  completionBatchSize: number;
  pollIntervalMs: number;
  leaseSeconds: number;
  logger: WorkerLogger;
}

/** What the loop reads of the worker and tells it. */
export interface ClaimLoopHooks {
  /** Jobs holding a lease slot outside the buffer (started or being released). */
  active(): number;
  /** Jobs holding a handler slot. */
  handlerSlotsUsed(): number;
  /** Jobs were claimed (counted in the worker's stats). */
  claimed(count: number): void;
  /** Start buffered jobs in free slots. */
  pump(): void;
  /** Claim again in `ms` (rate-limited jobs wait for a token, announced by no NOTIFY). */
  wakeAfter(ms: number): void;
}

export class ClaimLoop {
  /** Claims in flight, and the jobs they may bring. */
  private readonly claims = new Set<Promise<void>>();
  private claimReserved = 0;
  private claimFailures = 0;
  private backoffUntil = 0;
  /** Transactional attempts released for a database fault in a row (each within a backoff cap of the last), and when the last was. */
  private faultStreak = 0;
  private lastFaultAt = 0;
  /** Until then (a buffered job expired), claims are sized to the free handler slots only. */
  private prefetchPausedUntil = 0;
  /** Something suggests runnable jobs exist: a notification, the poll timer, a full last batch. Set at first: claim at once. */
  private wantClaim = true;
  private idleReported = false;
  private readonly rateWakes: RateWakes;
  /** The soonest a short claim's wake for rate tokens may come (see wakeForTokens). */
  private tokenWakeFloorMs = 0;

  constructor(
    private readonly settings: ClaimLoopSettings,
    private readonly sizer: ClaimSizer,
    private readonly buffer: JobBuffer,
    private readonly wakeup: Wakeup,
    private readonly events: WorkerEventEmitter,
    private readonly hooks: ClaimLoopHooks,
  ) {
    this.rateWakes = new RateWakes(settings.db, settings.jobTypes);
  }

  /** Runnable jobs may exist: claim when the limits allow. */
  request(): void {
    this.wantClaim = true;
    this.wakeup.signal();
  }

  /** Claim on the next turn (a wake-up that came while the loop could not claim is not lost). */
  want(): void {
    this.wantClaim = true;
  }

  /** The database answers again (LISTEN is back): claim now, not after the backoff. */
  resetBackoff(): void {
    this.backoffUntil = 0;
  }

  /**
   * A claimed job could not run for a database fault (its transactional
   * client's database is down while the worker's answers): claims back off
   * as after a failed claim, so the released job is not claimed and released
   * again in a tight loop.
   */
  databaseFault(): void {
    const now = Date.now();
    this.faultStreak = now - this.lastFaultAt > this.backoffCapMs() * 2 ? 1 : this.faultStreak + 1;
    this.lastFaultAt = now;
    this.backoffUntil = Math.max(this.backoffUntil, now + backoffMs(this.faultStreak, CLAIM_BACKOFF_BASE_MS, this.backoffCapMs()));
  }

  private backoffCapMs(): number {
    return Math.min(30_000, Math.max(1_000, this.settings.pollIntervalMs));
  }

  /** Claim for free handler slots only (no prefetch) until `until`. */
  pausePrefetch(until: number): void {
    this.prefetchPausedUntil = until;
  }

  /** A claim size change, reported as a `worker:claim_size` event. */
  claimSizeChanged(change: ClaimSizeChange | undefined): void {
    if (!change) return;
    this.settings.logger.debug('claim size changed', { ...change });
    this.events.emit('worker:claim_size', { workerId: this.settings.workerId, ...change });
  }

  /** Runs until `signal` aborts, then waits for the claims in flight. */
  async run(signal: AbortSignal): Promise<void> {
    const { settings, sizer, hooks } = this;
    // Leases held: running handlers, the buffer, and successes waiting in (up
    // to DEFAULT_MAX_FLUSHES) completion batches: committing batches must not
    // stall claims.
    const leaseSlotsBeyondClaims = settings.concurrency * LEASE_SLOTS_PER_HANDLER_SLOT + settings.completionBatchSize * DEFAULT_MAX_FLUSHES;
    while (!signal.aborted) {
      const now = Date.now();
      const buffered = this.buffer.length;
      const size = sizer.size;
      // Jobs the claims in flight may still bring count as buffered.
      const pipeline = buffered + this.claimReserved;
      const prefetch = now >= this.prefetchPausedUntil ? sizer.prefetch() : 0;
      const freeSlots = settings.concurrency - hooks.handlerSlotsUsed();
      const active = hooks.active();
      const limit = Math.min(size, freeSlots + prefetch - pipeline, leaseSlotsBeyondClaims + size - active - pipeline);
      if (this.wantClaim && limit > 0 && buffered * 2 <= prefetch && this.claims.size < MAX_CLAIMS_IN_FLIGHT && now >= this.backoffUntil) {
        this.wantClaim = false;
        // The loop is woken once the claim has left `claims`, so what it sees then (idle or not) is current.
        const claim: Promise<void> = this.claim(limit, freeSlots).then(() => {
          this.claims.delete(claim);
          this.wakeup.signal();
        });
        this.claims.add(claim);
        continue;
      }
      if (active === 0 && buffered === 0 && this.claims.size === 0 && !this.wantClaim && !this.idleReported) {
        this.idleReported = true;
        this.events.emit('worker:idle', { workerId: settings.workerId });
      }
      const backoffLeft = this.backoffUntil - now;
      const waitMs = backoffLeft > 0 ? Math.min(settings.pollIntervalMs, backoffLeft) : settings.pollIntervalMs;
      if ((await this.wakeup.wait(waitMs)) === 'timeout') {
        this.wantClaim = true;
      } else if (hooks.active() > 0) {
        // Let the rest of a completed batch free its slots first, so the next claim is one batch, not many of one.
        // With no job in flight no slot can free meanwhile: a wake-up (a NOTIFY on an idle worker) claims at once.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    await Promise.all(this.claims);
  }

  /**
   * After a short claim: a claim when the rate keys this worker has leased have tokens for waiting jobs again.
   * Tokens there already while this claim got nothing means the jobs wait for something else too (another
   * limit, another claim's locks): those wakes come no sooner than a floor that doubles, so a worker never
   * spins on them. A wait for tokens still to come is exact: a bucket left full wastes its refill.
   */
  private async wakeForTokens(want: number, got: number): Promise<void> {
    try {
      const ms = await this.rateWakes.waitMs(want);
      if (ms === undefined) return;
      if (ms > 0 || got > 0) this.tokenWakeFloorMs = 0;
      else this.tokenWakeFloorMs = Math.min(Math.max(TOKEN_WAKE_FLOOR_MS, this.tokenWakeFloorMs * 2), this.settings.pollIntervalMs);
      this.hooks.wakeAfter(Math.min(Math.max(ms, this.tokenWakeFloorMs), this.settings.pollIntervalMs));
    } catch (error) {
      // The poll still claims them; a failing database shows in the next claim.
      this.settings.logger.debug('reading rate keys failed', { error });
    }
  }

  /** One claim of up to `limit` jobs into the buffer; never rejects (a failure backs the loop off). The caller wakes the loop. */
  private async claim(limit: number, freeSlots: number): Promise<void> {
    const { settings } = this;
    this.claimReserved += limit;
    const claimedAt = Date.now();
    const probe = this.sizer.open(this.buffer.length, freeSlots);
    let got = 0;
    try {
      const jobs = await claimJobs(settings.db, {
        workerId: settings.workerId,
        jobTypes: settings.jobTypes,
        limit,
        leaseSeconds: settings.leaseSeconds,
        markRunning: true,
      });
      got = jobs.length;
      this.claimFailures = 0;
      this.hooks.claimed(jobs.length);
      // A short claim that took fairness-keyed jobs may have left a key's work beyond its share of this claim.
      if (jobs.length === limit || jobs.some((job) => job.fairKey !== null)) this.wantClaim = true;
      if (jobs.length > 0) {
        this.idleReported = false;
        settings.logger.debug('claimed jobs', { count: jobs.length, limit });
      }
      for (const job of jobs) this.buffer.push(job, claimedAt);
      this.rateWakes.saw(jobs.map((job) => job.rateKey));
      if (jobs.length < limit) await this.wakeForTokens(freeSlots - jobs.length, jobs.length);
    } catch (error) {
      this.claimFailures += 1;
      this.wantClaim = true;
      this.backoffUntil = Date.now() + backoffMs(this.claimFailures, CLAIM_BACKOFF_BASE_MS, this.backoffCapMs());
      settings.logger.warn('claiming jobs failed; backing off', { error, failures: this.claimFailures });
      this.events.emit('worker:error', { error, operation: 'claim' });
    } finally {
      this.claimReserved -= limit;
      this.claimSizeChanged(this.sizer.close(probe, got, limit));
    }
    this.hooks.pump();
  }
}
