/**
 * `getQueueMetrics`: a point-in-time summary of the queue for dashboards and
 * `runledger stats`, cheap on a table of millions of finished rows (see the
 * cost notes in queries.ts). Read-only: it takes no lock and joins the
 * caller's transaction when given one (then it reads that snapshot).
 */
import type { Db, Tx } from '../client/types.js';
import { withStatement } from '../client/transaction.js';
import { asTemplate } from '../db/sql-template.js';
import type { Scope } from '../db/scope.js';
import { parseInput } from '../validation/parse.js';
import { readEnqueueIntentStats, type EnqueueIntentStats } from '../queue/intent-stats.js';
import {
  METRICS_QUERIES,
  type ConcurrencyKeyRow,
  type ContinuationCountRow,
  type CountRow,
  type DebounceWaitRow,
  type DurationRow,
  type FinishedCountRow,
  type LiveCountRow,
  type MetricsQueryContext,
  type OldestRunnableRow,
  type RateKeyRow,
  type RunCountRow,
} from './queries.js';
import { DEAD_LETTER_WINDOW_MS, METRICS_INVALID_INPUT, RECENT_WINDOW_MS, getQueueMetricsInputSchema, type GetQueueMetricsInput } from './inputs.js';

/** Jobs finished in the recent window, by terminal status. */
export interface FinishedJobCounts {
  succeeded: number;
  deadLettered: number;
  canceled: number;
}

/** One job type's counts. A type used both directly and as workflow steps has two entries. */
export interface JobTypeMetrics {
  jobType: string;
  /** 'direct': enqueued on its own; 'workflow': a workflow step's job. */
  kind: 'direct' | 'workflow';
  /** PENDING now (due or not). */
  pending: number;
  /** PENDING and due (`next_run_at <= now`): claimable now. */
  runnable: number;
  /** LEASED now. */
  leased: number;
  /** Of `pending`, jobs waiting for their debounce window to close (enqueued with `debounce`, not yet due). */
  debounceWaiting: number;
  /** Finished in the recent window. */
  finishedRecently: FinishedJobCounts;
}

/** One concurrency key with jobs waiting or leased in the scope (listConcurrencyLimits' counts). */
export interface ConcurrencyKeyMetrics {
  key: string;
  /** At most this many of the key's jobs are LEASED at once (shared by every organization's jobs of the key). */
  limit: number;
  /** Live leases holding the key: in the admin scope the key's own count, in a narrower scope the scope's. */
  leased: number;
  /** PENDING and due jobs of the key in the scope: waiting for a slot (when the key is full) or the next claim. */
  waiting: number;
  /** 'enqueue': the last enqueue naming the key set the limit; 'operator': setConcurrencyLimit pinned it. */
  setBy: 'enqueue' | 'operator';
}

/** One rate key with due jobs waiting in the scope (listRateLimits' counts). */
export interface RateKeyMetrics {
  key: string;
  /** Starts per `periodMs` on average (shared by every organization's jobs of the key). */
  limit: number;
  periodMs: number;
  /** Most starts at once: the bucket's size. */
  burst: number;
  /** Tokens in the bucket at `asOf` (fractional: it refills continuously); a start takes a whole one. */
  tokens: number;
  /** PENDING and due jobs of the key in the scope: waiting for a token (when the bucket is empty) or the next claim. */
  waiting: number;
  /** 'enqueue': the last enqueue naming the key set the limit; 'operator': setRateLimit pinned it. */
  setBy: 'enqueue' | 'operator';
}

/** Percentiles in milliseconds; null when no job is in the sample. */
export interface DurationPercentiles {
  /** Jobs the percentiles were computed from (at most `MAX_DURATION_SAMPLES`, the latest). */
  samples: number;
  p50: number | null;
  p95: number | null;
}

export interface QueueMetrics {
  /** The instant the metrics describe: every window ends here. */
  asOf: Date;
  /** The window lengths, so a reader never has to assume them. */
  windows: { recentMs: number; deadLetteredMs: number };
  /** Totals over every type (the sums of `byType`). */
  jobs: { pending: number; runnable: number; leased: number; debounceWaiting: number; finishedRecently: FinishedJobCounts };
  /** Per job type and kind, ordered by type then kind. Types with nothing live and nothing recent are absent. */
  byType: JobTypeMetrics[];
  /** How long the oldest due PENDING job has been due (now - next_run_at); null when none is due. */
  oldestRunnableAgeMs: number | null;
  /** Due to first start, over jobs that finished (succeeded or dead-lettered) in the recent window. */
  waitTimeMs: DurationPercentiles;
  /** First start to finish, over the same jobs. */
  runTimeMs: DurationPercentiles;
  /** Jobs dead-lettered in the dead-letter window (24 h). */
  deadLetteredLast24h: number;
  /** Live runs by status, and runs finished in the recent window by status. */
  workflowRuns: {
    running: number;
    waitingForExternal: number;
    finishedRecently: { succeeded: number; completedWithErrors: number; canceled: number };
  };
  /** Handler continuations (`continueNow` / `continueAfter`) in the recent window: slices so ended, and their jobs. */
  continuationsRecently: { slices: number; jobs: number };
  /**
   * Concurrency keys: due keyed jobs in the scope (`waiting`), how many keys have waiting or leased jobs
   * (`keyCount`), and those keys, the most waiting first, at most MAX_CONCURRENCY_KEYS (50).
   */
  concurrency: { waiting: number; keyCount: number; keys: ConcurrencyKeyMetrics[] };
  /**
   * Rate keys: due rate-keyed jobs in the scope (`waiting`), how many keys have such jobs (`keyCount`), and those
   * keys, the most waiting first, at most MAX_RATE_KEYS (50).
   */
  rateLimits: { waiting: number; keyCount: number; keys: RateKeyMetrics[] };
  /** The durable enqueue intent backlog (`getEnqueueIntentStats`): pending, oldest pending age, attempts, conflicts. */
  intents: EnqueueIntentStats;
}

/**
 * Queue metrics within a scope: an organization scope counts only its own
 * jobs and runs, `noOrganizationScope()` only those without an organization,
 * `adminScope()` everything.
 *
 * @example
 * const metrics = await getQueueMetrics(prisma, { scope: adminScope() });
 * if (metrics.oldestRunnableAgeMs !== null && metrics.oldestRunnableAgeMs > 60_000) console.warn('queue is falling behind');
 */
export async function getQueueMetrics(db: Db, input: GetQueueMetricsInput): Promise<QueueMetrics> {
  const { scope, now } = parseInput(getQueueMetricsInputSchema, input, METRICS_INVALID_INPUT);
  return withStatement(db, 'get queue metrics', (tx) => readMetrics(tx, scope, now), { readCommitted: false });
}

async function readMetrics(tx: Tx, scope: Scope, now: Date | undefined): Promise<QueueMetrics> {
  // The database clock, rounded UP to the millisecond a JS Date holds: rounded down (as the driver would), a row
  // written in the same millisecond before this read would fall outside the windows that end at `asOf`.
  const asOf =
    now ??
    (
      await tx.$queryRaw<{ now: Date }[]>`
      SELECT date_trunc('milliseconds', t) + CASE WHEN t > date_trunc('milliseconds', t) THEN interval '1 millisecond' ELSE interval '0' END AS now
        FROM (SELECT statement_timestamp() AS t) c`
    )[0]!.now;
  const context: MetricsQueryContext = { now: asOf, scope };
  const read = <Row>(section: keyof typeof METRICS_QUERIES) => tx.$queryRaw<Row[]>(...asTemplate(METRICS_QUERIES[section](context)));
  // One after another: a transaction client runs one statement at a time.
  const live = await read<LiveCountRow>('liveJobCounts');
  const finished = await read<FinishedCountRow>('recentlyFinishedJobCounts');
  const [oldest] = await read<OldestRunnableRow>('oldestRunnable');
  const [durations] = await read<DurationRow>('durationSample');
  const [deadLettered] = await read<CountRow>('deadLetteredCount');
  const runs = await read<RunCountRow>('workflowRunCounts');
  const [continuations] = await read<ContinuationCountRow>('continuationCounts');
  const keys = await read<ConcurrencyKeyRow>('concurrencyKeys');
  const rates = await read<RateKeyRow>('rateKeys');
  const debounce = await read<DebounceWaitRow>('debounceWaits');
  const intents = await readEnqueueIntentStats(tx, scope);

  const byType = typeMetrics(live, finished, debounce);
  const runCount = (status: RunCountRow['status']) => runs.find((r) => r.status === status)?.count ?? 0;
  const sum = (pick: (t: JobTypeMetrics) => number) => byType.reduce((total, t) => total + pick(t), 0);
  return {
    asOf,
    windows: { recentMs: RECENT_WINDOW_MS, deadLetteredMs: DEAD_LETTER_WINDOW_MS },
    jobs: {
      pending: sum((t) => t.pending),
      runnable: sum((t) => t.runnable),
      leased: sum((t) => t.leased),
      debounceWaiting: sum((t) => t.debounceWaiting),
      finishedRecently: {
        succeeded: sum((t) => t.finishedRecently.succeeded),
        deadLettered: sum((t) => t.finishedRecently.deadLettered),
        canceled: sum((t) => t.finishedRecently.canceled),
      },
    },
    byType,
    oldestRunnableAgeMs: oldest?.oldest ? Math.max(0, asOf.getTime() - oldest.oldest.getTime()) : null,
    waitTimeMs: percentiles(durations, 'wait'),
    runTimeMs: percentiles(durations, 'run'),
    deadLetteredLast24h: deadLettered?.count ?? 0,
    workflowRuns: {
      running: runCount('RUNNING'),
      waitingForExternal: runCount('WAITING_FOR_EXTERNAL'),
      finishedRecently: { succeeded: runCount('SUCCEEDED'), completedWithErrors: runCount('COMPLETED_WITH_ERRORS'), canceled: runCount('CANCELED') },
    },
    continuationsRecently: { slices: continuations?.slices ?? 0, jobs: continuations?.jobs ?? 0 },
    concurrency: {
      waiting: keys[0]?.total_waiting ?? 0,
      keyCount: keys[0]?.keys ?? 0,
      keys: keys.map((row) => ({ key: row.key, limit: row.max_leased, leased: row.leased, waiting: row.waiting, setBy: row.set_by })),
    },
    rateLimits: {
      waiting: rates[0]?.total_waiting ?? 0,
      keyCount: rates[0]?.keys ?? 0,
      keys: rates.map((row) => ({
        key: row.key,
        limit: row.max_starts,
        periodMs: row.period_ms,
        burst: row.burst,
        tokens: row.tokens,
        waiting: row.waiting,
        setBy: row.set_by,
      })),
    },
    intents,
  };
}

function typeMetrics(live: readonly LiveCountRow[], finished: readonly FinishedCountRow[], debounce: readonly DebounceWaitRow[]): JobTypeMetrics[] {
  const byKey = new Map<string, JobTypeMetrics>();
  const entry = (jobType: string, workflow: boolean): JobTypeMetrics => {
    const kind = workflow ? 'workflow' : 'direct';
    const key = JSON.stringify([jobType, kind]);
    let metrics = byKey.get(key);
    if (!metrics) {
      metrics = { jobType, kind, pending: 0, runnable: 0, leased: 0, debounceWaiting: 0, finishedRecently: { succeeded: 0, deadLettered: 0, canceled: 0 } };
      byKey.set(key, metrics);
    }
    return metrics;
  };
  for (const row of live) {
    const metrics = entry(row.job_type, row.workflow);
    if (row.status === 'PENDING') {
      metrics.pending += row.count;
      metrics.runnable += row.runnable;
    } else {
      metrics.leased += row.count;
    }
  }
  const field = { SUCCEEDED: 'succeeded', DEAD_LETTERED: 'deadLettered', CANCELED: 'canceled' } as const;
  for (const row of finished) entry(row.job_type, row.workflow).finishedRecently[field[row.status]] += row.count;
  // A debounced job is a direct job.
  for (const row of debounce) entry(row.job_type, false).debounceWaiting += row.count;
  return [...byKey.values()].sort((a, b) => (a.jobType < b.jobType ? -1 : a.jobType > b.jobType ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
}

function percentiles(row: DurationRow | undefined, which: 'wait' | 'run'): DurationPercentiles {
  const round = (value: number | null | undefined) => (value === null || value === undefined ? null : Math.round(value));
  return { samples: row?.samples ?? 0, p50: round(row?.[`${which}_p50`]), p95: round(row?.[`${which}_p95`]) };
}
