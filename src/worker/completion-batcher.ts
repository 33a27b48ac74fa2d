/**
 * Batched success completion: handlers that finish close together are
 * recorded by one `completeJobsSuccess` statement (one commit, one autocommit
 * round trip for direct jobs) instead of one commit each.
 *
 * A success waits at most `delayMs` (0: until the next turn of the event
 * loop) for company; a batch that reaches `maxBatch` leaves at once. One
 * flush is in flight at a time, so under load the next batch grows while the
 * previous one commits (group commit). Each caller gets its own job's
 * outcome: `succeeded`, `lease_owner_mismatch` (the fence refused it; the
 * others in the batch are unaffected), or `error` (the statement failed even
 * after transient retries; the lease is then left to expire and the reaper
 * retries the job). Direct jobs are completed by one statement and
 * workflow-managed ones in a transaction after it
 * (`completeJobsSuccessSettled`): each step is retried on its own, and an
 * error is reported only for the items of the step that failed, so a success
 * already committed is never reported as an error or, on a retry, as a lost
 * lease.
 */
import type { Db } from '../client/types.js';
import { completeJobsSuccessSettled, type LeaseIdentity, type SettledCompleteOutcome } from '../queue/lifecycle.js';
import type { JsonValue } from '../validation/primitives.js';
import { retryTransient } from './timing.js';

export type CompletionResult = SettledCompleteOutcome;

interface PendingCompletion {
  lease: LeaseIdentity;
  output: JsonValue | undefined;
  resolve: (result: CompletionResult) => void;
}

export class CompletionBatcher {
  private pending: PendingCompletion[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly delayMs: number,
    private readonly maxBatch: number,
  ) {}

  /** Queues one success; resolves once it is committed (or refused). Never rejects. */
  complete(lease: LeaseIdentity, output: JsonValue | undefined): Promise<CompletionResult> {
    return new Promise((resolve) => {
      this.pending.push({ lease, output, resolve });
      this.schedule();
    });
  }

  /** Records everything queued so far, now; resolves when nothing is pending or in flight. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length > 0 || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.startFlush();
    }
  }

  private schedule(): void {
    if (this.flushing) return; // the in-flight flush picks the queue up when it finishes
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
      this.flushing = undefined;
      if (this.pending.length > 0) this.schedule();
    });
    this.flushing = flushing;
    return flushing;
  }

  private async write(batch: PendingCompletion[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      const outcomes = await completeJobsSuccessSettled(
        this.db,
        batch.map((item) => ({ lease: item.lease, output: item.output })),
        (step) => retryTransient(step),
      );
      batch.forEach((item, index) => item.resolve(outcomes[index] ?? { jobId: item.lease.jobId, outcome: 'lease_owner_mismatch' }));
    } catch (error) {
      for (const item of batch) item.resolve({ jobId: item.lease.jobId, outcome: 'error', error });
    }
  }
}
