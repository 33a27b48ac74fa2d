/**
 * The worker's claim size: how many jobs one claim may lease, and how many
 * claimed jobs may wait in the local buffer beyond the free handler slots
 * (the prefetch). Fixed when the user gives `batchSize`; adaptive otherwise.
 *
 * Why adaptive: every claim is one statement and one commit (two when the
 * lean claim stops at a keyed job: src/queue/claim.ts), so short
 * handlers want large claims (the bench's hand loop holds 500 leases; at
 * concurrency 10 the old fixed default of 2 x concurrency drained half as
 * fast), while slow handlers want a small buffer: a buffered job's lease runs
 * from its claim, and jobs this worker buffers are jobs another worker
 * cannot run.
 *
 * Fixed (`batchSize` given): size = prefetch = batchSize, always (the
 * behaviour before the adaptive rule; nothing below applies).
 *
 * Adaptive state: the size S, within [floor, ceiling], where
 *   floor   = concurrency (one claim can fill every slot),
 *   ceiling = max(ADAPTIVE_CLAIM_CEILING, 2 x concurrency), at most the claim limit,
 *   S starts at 2 x concurrency (the old default), within those bounds;
 * and d, the mean time a job holds its handler slot (an exponentially
 * weighted mean of every started job's slot time; unknown until one frees).
 *
 * Prefetch (read by the claim loop before every claim):
 *   leaseBound = concurrency x floor(W / d), W = LEASE_BUDGET_SHARE x heartbeatIntervalMs:
 *     a buffered job must start within heartbeatIntervalMs of its claim (else
 *     the worker releases it unrun: job-buffer.ts), and the bound plans for half
 *     of that, leaving the rest for handlers slower than d. Jobs leave the
 *     buffer at about concurrency / d per ms on average, but the running
 *     handlers may all have started together (one claim's jobs do), so the
 *     first buffered job may wait a whole d and the p-th ceil(p /
 *     concurrency) x d: the bound takes that worst case, so a handler slower
 *     than W leaves no prefetch at all.
 *   d unknown (no job has freed its slot yet) -> leaseBound = 0.
 *   prefetch = min(S, leaseBound)   (0: claim only for free slots)
 *
 * Transitions, taken when a claim returns, judged on what happened while it
 * was on its way (a probe opened when it was sent; the loop reports every
 * buffer level it sees when a slot frees or a claim lands, and the send
 * itself counts), and only for a
 * claim sent under the current S:
 *   the claim came back full (the queue has more)
 *     and a handler slot stood free with the buffer empty (starved: the buffer
 *     drained faster than claims filled it)            -> S = min(ceiling, 2S)          'starved'
 *   the buffer never fell below floor(S / 4), nor to 0, meanwhile
 *     (it held more than the round trip needed)        -> S = max(floor, S - floor(S / 4))  'surplus'
 *   otherwise (a short claim: the queue is drained)    -> S unchanged
 * And whenever d changes: S > max(floor, leaseBound)   -> S = max(floor, leaseBound)  'lease'
 * (handlers too slow for the lease to cover a buffer of S).
 *
 * Fast handlers therefore double S every round trip up to the ceiling; slow
 * ones are never starved, so S decays to the floor and the prefetch to what
 * the lease allows (0 when one handler takes longer than W x concurrency).
 * A buffered job that waits too long anyway (a handler far slower than d) is
 * still released unrun by the worker, which then pauses the prefetch.
 */
import { MAX_CLAIM_BATCH } from '../queue/inputs.js';

/** The adaptive claim size's start per unit of `concurrency` (the fixed default before it adapted): one claim fills the free slots and the buffer. */
export const DEFAULT_BATCH_SIZE_PER_HANDLER_SLOT = 2;
/**
 * Where the adaptive claim size stops growing: the tuned `batchSize` (docs/operate/performance.md). In the bench's drain
 * (loaded machine, one run each) a ceiling of 500 was no faster than 250 and at concurrency 10 often
 * slower (one claim of 500 is one long statement; the hand loop's 500 leases are ten claims of 50).
 */
export const ADAPTIVE_CLAIM_CEILING = 250;
/** Share of a buffered job's allowed wait (`heartbeatIntervalMs`) that the lease bound plans to use. */
export const LEASE_BUDGET_SHARE = 1 / 2;
/** Weight of the newest sample in the slot-time mean. */
const DURATION_WEIGHT = 0.1;

/** The largest adaptive claim size for `concurrency`. */
export function adaptiveClaimCeiling(concurrency: number): number {
  return Math.min(MAX_CLAIM_BATCH, Math.max(ADAPTIVE_CLAIM_CEILING, DEFAULT_BATCH_SIZE_PER_HANDLER_SLOT * concurrency));
}

export type ClaimSizeReason = 'starved' | 'surplus' | 'lease';

export interface ClaimSizeChange {
  claimSize: number;
  previous: number;
  reason: ClaimSizeReason;
}

/** What happened while one claim was on its way. */
export interface ClaimProbe {
  /** S when the claim was sent. */
  readonly sizeAtSend: number;
  /** Lowest buffer level seen since. */
  lowWater: number;
  /** A handler slot stood free with the buffer empty. */
  starved: boolean;
}

export interface ClaimSizerOptions {
  concurrency: number;
  /** The user's `batchSize`: fixed size and prefetch. */
  fixed: number | undefined;
  heartbeatIntervalMs: number;
}

export class ClaimSizer {
  readonly adaptive: boolean;
  private readonly concurrency: number;
  private readonly floor: number;
  private readonly ceiling: number;
  private readonly budgetMs: number;
  private current: number;
  private meanSlotMs: number | undefined;
  private readonly probes = new Set<ClaimProbe>();

  constructor({ concurrency, fixed, heartbeatIntervalMs }: ClaimSizerOptions) {
    this.adaptive = fixed === undefined;
    this.concurrency = concurrency;
    this.ceiling = adaptiveClaimCeiling(concurrency);
    this.floor = Math.min(concurrency, this.ceiling);
    this.current = fixed ?? Math.min(DEFAULT_BATCH_SIZE_PER_HANDLER_SLOT * concurrency, this.ceiling);
    this.budgetMs = heartbeatIntervalMs * LEASE_BUDGET_SHARE;
  }

  /** S: the most jobs one claim leases. */
  get size(): number {
    return this.current;
  }

  /** The largest S this worker may reach (its lease cap is sized for it). */
  get maxSize(): number {
    return this.adaptive ? this.ceiling : this.current;
  }

  /** Most claimed jobs that may wait in the buffer beyond the free handler slots. */
  prefetch(): number {
    return this.adaptive ? Math.min(this.current, this.leaseBound()) : this.current;
  }

  /** A job held its handler slot `ms`; returns the change it forced, if any. */
  recordSlotTime(ms: number): ClaimSizeChange | undefined {
    if (!this.adaptive) return undefined;
    const sample = Math.max(0, ms);
    this.meanSlotMs = this.meanSlotMs === undefined ? sample : this.meanSlotMs + DURATION_WEIGHT * (sample - this.meanSlotMs);
    const cap = Math.max(this.floor, this.leaseBound());
    return this.current > cap ? this.set(cap, 'lease') : undefined;
  }

  /** A claim is being sent; the buffer holds `buffered` jobs and `freeSlots` handler slots are free (idle until a claim lands). */
  open(buffered: number, freeSlots: number): ClaimProbe {
    const probe: ClaimProbe = { sizeAtSend: this.current, lowWater: buffered, starved: buffered === 0 && freeSlots > 0 };
    if (this.adaptive) this.probes.add(probe);
    return probe;
  }

  /** The loop saw the buffer at `buffered` with `freeSlots` handler slots free (after it started what it could). */
  observe(buffered: number, freeSlots: number): void {
    for (const probe of this.probes) {
      if (buffered < probe.lowWater) probe.lowWater = buffered;
      if (buffered === 0 && freeSlots > 0) probe.starved = true;
    }
  }

  /** The claim of `probe` returned `got` of `limit` jobs (or failed: got = 0); returns the change it made, if any. */
  close(probe: ClaimProbe, got: number, limit: number): ClaimSizeChange | undefined {
    if (!this.probes.delete(probe) || probe.sizeAtSend !== this.current) return undefined;
    if (got === limit && probe.starved) {
      const grown = Math.min(this.ceiling, 2 * this.current, Math.max(this.floor, this.leaseBound()));
      return grown > this.current ? this.set(grown, 'starved') : undefined;
    }
    if (got > 0 && probe.lowWater >= Math.max(1, Math.floor(this.current / 4)) && this.current > this.floor) {
      return this.set(Math.max(this.floor, this.current - Math.floor(this.current / 4)), 'surplus');
    }
    return undefined;
  }

  private leaseBound(): number {
    const mean = this.meanSlotMs;
    if (mean === undefined) return 0;
    if (mean <= 0) return this.ceiling;
    return Math.min(this.ceiling, this.concurrency * Math.floor(this.budgetMs / mean));
  }

  private set(size: number, reason: ClaimSizeReason): ClaimSizeChange {
    const previous = this.current;
    this.current = size;
    return { claimSize: size, previous, reason };
  }
}
