/**
 * Rate keys' starts read from the ledger (issue 35), for the chaos run (chaos/rate-ledger.ts) and the
 * rate_limit bench (bench/workloads/rate-limit.ts): every attempt of a rate-keyed job is a start, at the claim
 * transaction's now() (job_queue.attempt_started_at for a job's last attempt, job_attempts.started_at for
 * archived ones), and a bucket of `burst` tokens gaining `limit` per period lets at most limit + burst start
 * in any window of one period.
 *
 * Two clocks. `at` is the recorded start, the claim's now(), i.e. its statement's start. A claim that queued on
 * the key's row records a start before the moment its tokens were counted: the bucket refills to
 * GREATEST(refilled_at, now()) (src/queue/statements/rate-slots.ts), so a late-locking claim with an early
 * now() spends tokens of the row's later time. `bucketAt` is that time: claims of one key draw their attempt
 * numbers (job_events' sequence) after locking the key's row, so in sequence order the row's refill time is the
 * running maximum of the starts' `at`. Windows on `bucketAt` are the bucket's own invariant; windows on `at`
 * are what a reader of the ledger sees, and can exceed it by about limit x (lock wait) / period.
 */
import type pg from 'pg';

export interface RateStart {
  key: string;
  /** job#run.attempt@seq, named in a violation (a released attempt's number is given back: the seq tells them apart). */
  id: string;
  /** The attempt's place in job_events' sequence (drawn under the key row's lock). */
  seq: bigint;
  /** The recorded start (the claim's now()), in ms since the epoch, microsecond precision. */
  at: number;
  /** When the bucket counted this start's token: the running maximum of `at` in sequence order. */
  bucketAt: number;
}

/** Every start of a rate-keyed job (of `keys`, or all), per key in sequence order with its bucket time. */
export async function ledgerRateStarts(db: pg.Pool | pg.Client, keys?: readonly string[]): Promise<Map<string, RateStart[]>> {
  // UNION, not UNION ALL: an attempt archived and still on the job row would otherwise count twice.
  const { rows } = await db.query<{ key: string; job_id: string; run_number: number; attempt: number; seq: string; at_us: string }>(
    `WITH keyed AS (SELECT id, rate_key FROM runledger.job_queue
                     WHERE rate_key IS NOT NULL AND ($1::text[] IS NULL OR rate_key = ANY ($1::text[])))
     SELECT k.rate_key AS key, a.job_id, a.run_number, a.attempt, a.seq::text AS seq,
            (extract(epoch FROM a.started_at) * 1000000)::bigint::text AS at_us
       FROM runledger.job_attempts a JOIN keyed k ON k.id = a.job_id
     UNION
     SELECT j.rate_key, j.id, j.run_number, j.attempt, j.attempt_seq::text, (extract(epoch FROM j.attempt_started_at) * 1000000)::bigint::text
       FROM runledger.job_queue j JOIN keyed k ON k.id = j.id
      WHERE j.attempt_seq IS NOT NULL AND j.attempt_started_at IS NOT NULL`,
    [keys === undefined ? null : [...keys]],
  );
  const byKey = new Map<string, Omit<RateStart, 'bucketAt'>[]>();
  for (const row of rows) {
    const list = byKey.get(row.key) ?? [];
    list.push({ key: row.key, id: `${row.job_id}#${row.run_number}.${row.attempt}@${row.seq}`, seq: BigInt(row.seq), at: Number(row.at_us) / 1000 });
    byKey.set(row.key, list);
  }
  const result = new Map<string, RateStart[]>();
  for (const [key, list] of byKey) result.set(key, withBucketTimes(list));
  return result;
}

/** Sorts one key's starts by sequence and gives each its bucket time (the running maximum of `at`). */
export function withBucketTimes(starts: readonly Omit<RateStart, 'bucketAt'>[]): RateStart[] {
  const sorted = [...starts].sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
  let latest = Number.NEGATIVE_INFINITY;
  return sorted.map((start) => {
    latest = Math.max(latest, start.at);
    return { ...start, bucketAt: latest };
  });
}

export interface WindowCount {
  /** The most starts in one closed window [t, t + periodMs]. */
  max: number;
  /** Where such a window opens (a start's time); NaN when there is no start. */
  at: number;
  /** Windows opening at a start that hold more than `allowed` starts (0 when no `allowed` was given). */
  over: number;
}

/**
 * The most of `times` (ms) in any closed window of `periodMs`: a window holding the most starts can always be
 * slid to open at one of them, so only those windows are counted. Closed, because a bucket allows limit + burst
 * even when its first and last start are exactly one period apart.
 */
export function maxInWindow(times: readonly number[], periodMs: number, allowed = Number.POSITIVE_INFINITY): WindowCount {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  let at = Number.NaN;
  let over = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start += 1) {
    if (end < start) end = start;
    while (end < sorted.length && sorted[end]! <= sorted[start]! + periodMs) end += 1;
    const n = end - start;
    if (n > allowed) over += 1;
    if (n > max) {
      max = n;
      at = sorted[start]!;
    }
  }
  return { max, at, over };
}

export interface SteadyRate {
  /** Starts per second after the first burst: (starts - burst) / (last - first). NaN with under two starts. */
  afterBurst: number;
  /** Starts per second in the middle 60% of [first, last] (a cross-check that ignores both ends). */
  middle: number;
  spanMs: number;
}

/**
 * The observed rate of a saturated key: a full bucket's `burst` start at once, then `limit` per period, so
 * (n - burst) / (last - first) is the refill rate the starts kept up with.
 */
export function steadyRate(times: readonly number[], burst: number): SteadyRate {
  const sorted = [...times].sort((a, b) => a - b);
  if (sorted.length < 2 || sorted[sorted.length - 1] === sorted[0]) return { afterBurst: Number.NaN, middle: Number.NaN, spanMs: 0 };
  const first = sorted[0]!;
  const spanMs = sorted[sorted.length - 1]! - first;
  const from = first + spanMs * 0.2;
  const to = first + spanMs * 0.8;
  const inMiddle = sorted.filter((t) => t >= from && t < to).length;
  return { afterBurst: ((sorted.length - burst) / spanMs) * 1000, middle: (inMiddle / (to - from)) * 1000, spanMs };
}

export interface BucketReplay {
  /** Refill that came while the bucket was full, in tokens: starts the key could have had and lost. */
  lostTokens: number;
  /** How long the bucket sat full between its first and last start, in ms. */
  fullMs: number;
  /** The longest time between two claims of the key (distinct bucket times), in ms. */
  longestGapMs: number;
  /** Starts that found less than one token in the replayed bucket (the bucket's invariant: 0). */
  withoutToken: number;
}

/**
 * One key's bucket replayed over its starts in sequence order on the bucket's clock, from full at the first
 * start: where the rate a saturated key falls short of its limit went (refill lost at a full bucket, i.e.
 * claims that came late), and a second form of the limit check (no start without a whole token; a float
 * tolerance for the row's own arithmetic).
 */
export function replayBucket(starts: readonly RateStart[], setting: { limit: number; periodMs: number; burst: number }): BucketReplay {
  const perMs = setting.limit / setting.periodMs;
  let tokens = setting.burst;
  let last = starts[0]?.bucketAt ?? 0;
  let lostTokens = 0;
  let fullMs = 0;
  let longestGapMs = 0;
  let withoutToken = 0;
  for (const start of starts) {
    const dt = start.bucketAt - last;
    if (dt > 0) longestGapMs = Math.max(longestGapMs, dt);
    const untilFull = (setting.burst - tokens) / perMs;
    if (dt > untilFull) {
      fullMs += dt - untilFull;
      lostTokens += (dt - untilFull) * perMs;
    }
    tokens = Math.min(setting.burst, tokens + dt * perMs);
    last = start.bucketAt;
    if (tokens < 1 - 1e-3) withoutToken += 1;
    tokens = Math.max(0, tokens - 1);
  }
  return { lostTokens, fullMs, longestGapMs, withoutToken };
}
