/**
 * Sequential latency probe shared by the adapters: the producer enqueues job
 * `seq`, then waits until the worker side reports it done before enqueuing the
 * next. Times are taken with one monotonic clock in this process.
 */
import { performance } from 'node:perf_hooks';
import type { LatencySample } from './systems/types.js';

interface Pending {
  enqueuedAt: number;
  pickedAt?: number;
  completedAt?: number;
  done: () => void;
}

export class LatencyProbe {
  private readonly pending = new Map<number, Pending>();
  readonly samples: LatencySample[] = [];

  /**
   * Runs `count` sequential rounds: `enqueue(seq)` then wait for `markDone(seq)`.
   * A round that takes longer than `timeoutMs` fails the scenario.
   */
  async run(count: number, enqueue: (seq: number) => Promise<void>, timeoutMs = 10_000): Promise<LatencySample[]> {
    for (let seq = 0; seq < count; seq += 1) {
      let timer: NodeJS.Timeout | undefined;
      const finished = new Promise<void>((resolve, reject) => {
        this.pending.set(seq, { enqueuedAt: performance.now(), done: resolve });
        timer = setTimeout(() => reject(new Error(`latency job ${seq} not done within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await enqueue(seq);
        await finished;
      } finally {
        clearTimeout(timer);
      }
      const entry = this.pending.get(seq)!;
      this.pending.delete(seq);
      this.samples.push({
        pickupMs: (entry.pickedAt ?? Number.NaN) - entry.enqueuedAt,
        completeMs: entry.completedAt === undefined ? null : entry.completedAt - entry.enqueuedAt,
      });
    }
    return this.samples;
  }

  /** The handler of job `seq` started. */
  picked(seq: number): void {
    const entry = this.pending.get(seq);
    if (entry && entry.pickedAt === undefined) entry.pickedAt = performance.now();
  }

  /** Job `seq` is finished; `committed` says whether its completion is known to be committed. */
  markDone(seq: number, committed: boolean): void {
    const entry = this.pending.get(seq);
    if (!entry) return;
    if (committed && entry.completedAt === undefined) entry.completedAt = performance.now();
    entry.done();
  }
}

/** Reads the sequence number the probe put in a job's payload. */
export function seqOf(payload: unknown): number {
  const seq = (payload as { seq?: unknown } | null)?.seq;
  if (typeof seq !== 'number') throw new Error('bench job payload has no numeric seq');
  return seq;
}
