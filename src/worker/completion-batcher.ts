/**
 * Batched success completion: handlers that finish close together are
 * recorded by one `completeJobs` statement (one commit, one autocommit
 * round trip for direct jobs) instead of one commit each.
 *
 * A success waits at most `delayMs` (0: until the next turn of the event
 * loop) for company; a batch that reaches `maxBatch` leaves at once. Up to
 * `maxFlushes` batches are in flight at once (pipelining: the next batch
 * commits while the previous one does, and claims never wait for either);
 * beyond that the queue grows while they commit (group commit). Concurrent
 * batches are safe: each takes its locks in the global order of
 * src/coordination/locking.ts, so they cannot deadlock on shared runs.
 *
 * Each caller gets its own job's outcome: `succeeded`,
 * `lease_owner_mismatch` (the fence refused it; the others in the batch are
 * unaffected), or `error` (it failed even after retrying transient failures
 * until the leases would expire, see retry.ts, and alone in its own
 * transaction; the reaper then retries the job). A batch of direct jobs is one statement; one with
 * workflow-managed jobs one transaction (`completeTrustedSettled`), which
 * on failure is retried item by item so that one run's trouble never fails
 * the others' work; a success already committed is never reported as an
 * error or, on a retry, as a lost lease.
 */
import type { Db } from '../client/types.js';
import { completeTrustedSettled, type SettledCompleteOutcome } from '../queue/complete.js';
import type { LeaseIdentity } from '../queue/lease.js';
import { continueJobs, type ContinueJobItem, type ContinueJobOutcome } from '../queue/continue.js';
import type { JsonValue } from '../model/json.js';
import { confirmCompletions, retryUntilLeasesExpire } from './retry.js';

export type CompletionResult = SettledCompleteOutcome;
export type ContinuationResult = ContinueJobOutcome | { jobId: string; outcome: 'error'; error: unknown };

/** Batches committing at once; more would only queue on the database's connections. */
export const DEFAULT_MAX_FLUSHES = 2;

type PendingCompletion =
  | { kind: 'success'; lease: LeaseIdentity; output: JsonValue | undefined; resolve: (result: CompletionResult) => void }
  | { kind: 'continue'; item: ContinueJobItem; resolve: (result: ContinuationResult) => void };

export class CompletionBatcher {
  private pending: PendingCompletion[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly flushing = new Set<Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly delayMs: number,
    private readonly maxBatch: number,
    private readonly maxFlushes = DEFAULT_MAX_FLUSHES,
  ) {}

  /** Queues one success; resolves once it is committed (or refused). Never rejects. */
  complete(lease: LeaseIdentity, output: JsonValue | undefined): Promise<CompletionResult> {
    return new Promise((resolve) => {
      this.pending.push({ kind: 'success', lease, output, resolve });
      this.schedule();
    });
  }

  /**
   * Queues one continuation (continueNow / continueAfter); a flush writes its
   * continuations in one statement (src/queue/continue.ts), next to its
   * successes. Never rejects.
   */
  continue(item: ContinueJobItem): Promise<ContinuationResult> {
    return new Promise((resolve) => {
      this.pending.push({ kind: 'continue', item, resolve });
      this.schedule();
    });
  }

  /** Records everything queued so far, now; resolves when nothing is pending or in flight. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length > 0 || this.flushing.size > 0) {
      if (this.pending.length > 0 && this.flushing.size < this.maxFlushes) void this.startFlush();
      else await Promise.race(this.flushing);
    }
  }

  private schedule(): void {
    if (this.pending.length === 0) return;
    if (this.flushing.size >= this.maxFlushes) return; // a finishing flush picks the queue up
    if (this.pending.length >= this.maxBatch) {
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.startFlush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.startFlush();
      }, this.delayMs);
    }
  }

  private startFlush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending.splice(0, this.maxBatch);
    const flushing = this.write(batch).finally(() => {
      this.flushing.delete(flushing);
      this.schedule();
    });
    this.flushing.add(flushing);
    return flushing;
  }

  private async write(batch: PendingCompletion[]): Promise<void> {
    const successes = batch.filter((item) => item.kind === 'success');
    const continuations = batch.filter((item) => item.kind === 'continue');
    await Promise.all([this.writeSuccesses(successes), this.writeContinuations(continuations)]);
  }

  private async writeContinuations(batch: Extract<PendingCompletion, { kind: 'continue' }>[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      const leases = batch.map((item) => item.item.lease);
      const outcomes = await retryUntilLeasesExpire(leases)(() =>
        continueJobs(
          this.db,
          batch.map((item) => item.item),
        ),
      );
      for (const [index, item] of batch.entries()) item.resolve(outcomes[index] ?? { jobId: item.item.lease.jobId, outcome: 'lease_owner_mismatch' });
    } catch (error) {
      for (const item of batch) item.resolve({ jobId: item.item.lease.jobId, outcome: 'error', error });
    }
  }

  private async writeSuccesses(batch: Extract<PendingCompletion, { kind: 'success' }>[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      const leases = batch.map((item) => item.lease);
      const outcomes = await confirmCompletions(
        this.db,
        leases,
        // The leases are the claim's and the outputs passed toStorableJson: no second validation.
        await completeTrustedSettled(
          this.db,
          batch.map((item) => ({ lease: item.lease, output: item.output })),
          retryUntilLeasesExpire(leases),
        ),
      );
      for (const [index, item] of batch.entries()) item.resolve(outcomes[index] ?? { jobId: item.lease.jobId, outcome: 'lease_owner_mismatch' });
    } catch (error) {
      for (const item of batch) item.resolve({ jobId: item.lease.jobId, outcome: 'error', error });
    }
  }
}
