/**
 * Wake-ups at the moments jobs this worker deferred fall due: a continuation with a delay (a durable
 * function's sleep, a handler's `continueAfter`) is due at a time the worker knows, so instead of finding
 * it at the next poll (up to `pollIntervalMs` late) the worker claims once when it falls due.
 *
 * A local accelerator, like the LISTEN wake-up: another worker may take the job first, and a worker that
 * stops forgets its wakes (the poll finds the job). Due times come from the write's delay, counted from
 * when the write was reported (after the database's clock read for `next_run_at`), so a wake is never
 * before the job is due. One timer for the earliest wake; the rest wait in a binary min-heap.
 */

/** Wakes kept at most; beyond, the latest are dropped (the poll finds their jobs). */
const MAX_WAKES = 100_000;
/** setTimeout's longest delay; a farther wake re-arms on firing. */
const MAX_TIMER_MS = 2_147_483_647;

export class DueWakes {
  private readonly heap: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private closed = false;

  /** `onDue` is called (synchronously, on the timer) when one or more wakes fall due. */
  constructor(private readonly onDue: () => void) {}

  /** A job deferred by this worker is due `delayMs` from now (a write reported now). */
  after(delayMs: number): void {
    if (this.closed || !Number.isFinite(delayMs) || delayMs < 0) return;
    this.at(Date.now() + delayMs + 1);
  }

  /** How many wakes are waiting (tests, diagnostics). */
  get size(): number {
    return this.heap.length;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.heap.length = 0;
  }

  private at(atMs: number): void {
    if (this.heap.length >= MAX_WAKES) return;
    push(this.heap, atMs);
    if (atMs < this.timerAt) this.arm();
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const next = this.heap[0];
    if (next === undefined || this.closed) return;
    this.timerAt = next;
    this.timer = setTimeout(() => this.fire(), Math.min(MAX_TIMER_MS, Math.max(0, next - Date.now())));
    // A worker with only far wakes left must not keep the process alive on their account.
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    const now = Date.now();
    let due = false;
    // Every wake due by now is taken by one claim request: a burst of sleeps due together wakes once.
    while (this.heap.length > 0 && this.heap[0]! <= now) {
      pop(this.heap);
      due = true;
    }
    this.arm();
    if (due) this.onDue();
  }
}

function push(heap: number[], value: number): void {
  heap.push(value);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]! <= value) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = value;
}

function pop(heap: number[]): void {
  const last = heap.pop()!;
  if (heap.length === 0) return;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && heap[right]! < heap[left]! ? right : left;
    if (heap[child]! >= last) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = last;
}
