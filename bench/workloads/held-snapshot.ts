/**
 * Held snapshot: how each system degrades while dead tuples cannot be
 * vacuumed, and how fast it recovers. The method is the long-horizon phases
 * of hardbyte/postgresql-job-queue-benchmarking (its `idle_in_tx_saturation`
 * scenario): a producer at a fixed rate, a consumer pool, and phases
 *
 *   warm-up (excluded) -> clean -> hold -> recovery
 *
 * where `hold` is another session of the same database in
 * `BEGIN; SELECT txid_current();` left idle in transaction: its XID pins the
 * xmin horizon, so neither vacuum nor page pruning can remove a row version
 * that died after it began. Vacuum is the server's own autovacuum on its
 * default schedule (the report lists how many times it ran in each phase).
 *
 * Per phase: pickup latency (enqueue call start -> handler start, one clock
 * in this process; a job counts in the phase its handler started in)
 * p50/p95/p99, jobs produced and handlers finished per second against the
 * offered rate, queue depth (the system's unfinished jobs, sampled once a
 * second), and the `n_dead_tup` delta of the system's tables per job
 * finished. After the hold is released: the time until a 5-second window's
 * pickup p95 is back within 1.5x the clean phase's and the queue depth within
 * the clean phase's maximum; and the growth of the system's tables (heap,
 * indexes, TOAST) per job over the measured phases.
 *
 * Each system runs once (this is a long, steady-state workload, not a
 * repeated figure) on a fresh clone of its template.
 */
import pg from 'pg';
import type { BenchConfig } from '../config.js';
import { sleep } from '../db.js';
import { now, STEADY_ADAPTERS, type SteadyAdapter, type SteadyRun } from '../held/adapters.js';
import { percentile } from '../stats.js';
import type { BenchContext, TableResult, Workload } from './types.js';

export interface HeldSnapshotSizes {
  /** Jobs per second offered by the producer. */
  rate: number;
  /** Consumer concurrency. */
  workers: number;
  /** Handler work per job (ms). */
  workMs: number;
  warmupSeconds: number;
  cleanSeconds: number;
  holdSeconds: number;
  recoverySeconds: number;
  /** pg-boss `batchSize`. */
  pgBossBatch: number;
}

const PHASES = ['clean', 'hold', 'recovery'] as const;
type Phase = (typeof PHASES)[number];
/** Enqueue calls in flight at most; beyond it the producer falls behind, and the report shows it. */
const PRODUCER_IN_FLIGHT = 64;
const PACER_TICK_MS = 5;
/** Recovery windows: a window's p95 within this factor of the clean phase's counts as recovered. */
const RECOVERED_P95_FACTOR = 1.5;
const RECOVERY_WINDOW_SECONDS = 5;

function secondsFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

/** BENCH_HOLD_* variables; the issue's figures by default, a 30-second smoke version under BENCH_QUICK. */
export function readHeldSnapshotSizes(config: BenchConfig): HeldSnapshotSizes {
  const { quick } = config;
  return {
    pgBossBatch: config.claimBatch,
    rate: secondsFromEnv('BENCH_HOLD_RATE', 200),
    workers: Math.round(secondsFromEnv('BENCH_HOLD_WORKERS', 8)),
    workMs: secondsFromEnv('BENCH_HOLD_WORK_MS', 1),
    warmupSeconds: secondsFromEnv('BENCH_HOLD_WARMUP_SECONDS', quick ? 3 : 10),
    cleanSeconds: secondsFromEnv('BENCH_HOLD_CLEAN_SECONDS', quick ? 5 : 30),
    holdSeconds: secondsFromEnv('BENCH_HOLD_SECONDS', quick ? 15 : 120),
    recoverySeconds: secondsFromEnv('BENCH_HOLD_RECOVERY_SECONDS', quick ? 10 : 60),
  };
}

interface TableStats {
  deadTuples: number;
  /** n_tup_upd + n_tup_del: row versions made dead (each update or delete leaves one), whatever vacuum does after. */
  versionsKilled: number;
  liveTuples: number;
  bytes: number;
  autovacuums: number;
  byTable: Record<string, { dead: number; live: number; bytes: number }>;
}

async function tableStats(client: pg.Client, schema: string): Promise<TableStats> {
  const { rows } = await client.query<{ name: string; dead: string; killed: string; live: string; bytes: string; autovacuums: string }>(
    `SELECT relname AS name, n_dead_tup AS dead, n_tup_upd + n_tup_del AS killed, n_live_tup AS live, pg_total_relation_size(relid) AS bytes, autovacuum_count AS autovacuums
       FROM pg_stat_user_tables WHERE schemaname = $1`,
    [schema],
  );
  const sum = (key: 'dead' | 'killed' | 'live' | 'bytes' | 'autovacuums') => rows.reduce((acc, r) => acc + Number(r[key]), 0);
  return {
    deadTuples: sum('dead'),
    versionsKilled: sum('killed'),
    liveTuples: sum('live'),
    bytes: sum('bytes'),
    autovacuums: sum('autovacuums'),
    byTable: Object.fromEntries(rows.map((r) => [r.name, { dead: Number(r.dead), live: Number(r.live), bytes: Number(r.bytes) }])),
  };
}

/** Enqueues at `rate` jobs/s from `start()` until `stop()`, counting what it produced. */
class Producer {
  private produced = 0;
  private issued = 0;
  private inFlight = 0;
  private errors: unknown[] = [];
  private timer: NodeJS.Timeout | undefined;
  private started = 0;

  constructor(
    private readonly rate: number,
    private readonly run: SteadyRun,
  ) {}

  start(): void {
    this.started = now();
    this.timer = setInterval(() => this.tick(), PACER_TICK_MS);
  }

  private tick(): void {
    const due = Math.floor(((now() - this.started) / 1000) * this.rate);
    while (this.issued < due && this.inFlight < PRODUCER_IN_FLIGHT) {
      this.issued += 1;
      this.inFlight += 1;
      void this.run
        .enqueue(now())
        .then(
          () => {
            this.produced += 1;
          },
          (error: unknown) => void this.errors.push(error),
        )
        .finally(() => {
          this.inFlight -= 1;
        });
    }
    // Behind by more than the in-flight cap: the backlog is not carried, the shortfall shows as a lower produced rate.
    if (due - this.issued > PRODUCER_IN_FLIGHT) this.issued = due - PRODUCER_IN_FLIGHT;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    while (this.inFlight > 0) await sleep(5);
    if (this.errors.length > 0) throw new Error(`producer: ${this.errors.length} enqueue calls failed; first: ${String(this.errors[0])}`);
  }

  get count(): number {
    return this.produced;
  }
}

interface PhaseFigures {
  phase: Phase;
  seconds: number;
  producedPerSecond: number;
  finishedPerSecond: number;
  pickups: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  depthMean: number;
  depthMax: number;
  deadTuplesDelta: number;
  deadTuplesPerJob: number;
  /** Row versions made dead (updates + deletes) per job finished. */
  versionsKilledPerJob: number;
  autovacuums: number;
}

export interface HeldSnapshotMeasure {
  system: string;
  label: string;
  phases: PhaseFigures[];
  /** Seconds from the hold's release until pickup and depth were back to clean figures; null if not within the recovery phase. */
  recoverySeconds: number | null;
  bytesPerJob: number;
  /** Per table at the end of the hold (dead, live tuples, bytes). */
  atHoldEnd: TableStats['byTable'];
}

export interface RecoveryInput {
  /** Handler starts (`at`, ms on the bench clock) and their pickup latency. */
  pickups: readonly { at: number; ms: number }[];
  /** Queue depth samples. */
  depth: readonly { at: number; n: number }[];
  cleanPickups: readonly number[];
  cleanDepth: readonly number[];
  /** When the hold was released (ms on the bench clock). */
  release: number;
  recoverySeconds: number;
}

/**
 * Seconds from the release to the first RECOVERY_WINDOW_SECONDS window whose
 * pickup p95 is within RECOVERED_P95_FACTOR of the clean phase's and whose
 * depth samples stay within the clean maximum (at least 1); null when no
 * window inside the recovery phase is.
 */
export function recoveredAfter({ pickups, depth, cleanPickups, cleanDepth, release, recoverySeconds }: RecoveryInput): number | null {
  const cleanP95 = percentile(cleanPickups, 95);
  const depthLimit = Math.max(cleanDepth.length === 0 ? 0 : Math.max(...cleanDepth), 1);
  for (let s = 0; s + RECOVERY_WINDOW_SECONDS <= recoverySeconds; s += 1) {
    const from = release + s * 1000;
    const to = from + RECOVERY_WINDOW_SECONDS * 1000;
    const ms = pickups.filter((p) => p.at >= from && p.at < to).map((p) => p.ms);
    const ds = depth.filter((d) => d.at >= from && d.at < to).map((d) => d.n);
    if (ms.length > 0 && percentile(ms, 95) <= cleanP95 * RECOVERED_P95_FACTOR && ds.every((n) => n <= depthLimit)) return s;
  }
  return null;
}

const inRange = (values: readonly number[], from: number, to: number): number => values.filter((t) => t >= from && t < to).length;

async function measureSystem(context: BenchContext, adapter: SteadyAdapter, sizes: HeldSnapshotSizes, url: string): Promise<HeldSnapshotMeasure> {
  const monitor = new pg.Client({ connectionString: url });
  const holder = new pg.Client({ connectionString: url });
  await monitor.connect();
  await holder.connect();
  const pickups: { at: number; ms: number }[] = [];
  const finishedAt: number[] = [];
  const depth: { at: number; n: number }[] = [];
  let run: SteadyRun | undefined;
  let sampling = true;
  let sampler: Promise<void> = Promise.resolve();
  try {
    run = await adapter.start(url, {
      concurrency: sizes.workers,
      workMs: sizes.workMs,
      pgBossBatch: sizes.pgBossBatch,
      picked: (enqueuedAt) => {
        const at = now();
        pickups.push({ at, ms: at - enqueuedAt });
      },
      finished: () => finishedAt.push(now()),
    });
    const producer = new Producer(sizes.rate, run);
    producer.start();
    sampler = (async () => {
      while (sampling) {
        const { rows } = await monitor.query<{ n: string }>(adapter.depthSql);
        depth.push({ at: now(), n: Number(rows[0]?.n ?? 0) });
        await sleep(1_000);
      }
    })();
    await sleep(sizes.warmupSeconds * 1_000);

    const bounds: Record<Phase, { from: number; to: number; before: TableStats; after: TableStats; produced: number }> = {} as never;
    const firstStats = await tableStats(monitor, adapter.schema);
    let before = firstStats;
    for (const phase of PHASES) {
      const from = now();
      const producedBefore = producer.count;
      context.log(
        `held_snapshot: ${adapter.label}, ${phase} (${phase === 'hold' ? sizes.holdSeconds : phase === 'clean' ? sizes.cleanSeconds : sizes.recoverySeconds} s)`,
      );
      if (phase === 'hold') {
        await holder.query('BEGIN');
        await holder.query('SELECT txid_current()');
        await sleep(sizes.holdSeconds * 1_000);
      } else {
        await sleep((phase === 'clean' ? sizes.cleanSeconds : sizes.recoverySeconds) * 1_000);
      }
      // The hold ends with the phase; its last statistics are read while it still holds.
      const after = await tableStats(monitor, adapter.schema);
      if (phase === 'hold') await holder.query('ROLLBACK');
      bounds[phase] = { from, to: now(), before, after, produced: producer.count - producedBefore };
      before = after;
    }
    await producer.stop();
    sampling = false;
    await sampler;

    const cleanPickups = pickups.filter((p) => p.at >= bounds.clean.from && p.at < bounds.clean.to).map((p) => p.ms);
    const cleanDepth = depth.filter((d) => d.at >= bounds.clean.from && d.at < bounds.clean.to).map((d) => d.n);
    const phases = PHASES.map((phase): PhaseFigures => {
      const { from, to, before: b, after: a, produced } = bounds[phase];
      const seconds = (to - from) / 1000;
      const ms = pickups.filter((p) => p.at >= from && p.at < to).map((p) => p.ms);
      const ds = depth.filter((d) => d.at >= from && d.at < to).map((d) => d.n);
      const finished = inRange(finishedAt, from, to);
      const deadTuplesDelta = a.deadTuples - b.deadTuples;
      return {
        phase,
        seconds,
        producedPerSecond: produced / seconds,
        finishedPerSecond: finished / seconds,
        pickups: ms.length,
        p50Ms: percentile(ms, 50),
        p95Ms: percentile(ms, 95),
        p99Ms: percentile(ms, 99),
        depthMean: ds.length === 0 ? Number.NaN : ds.reduce((x, y) => x + y, 0) / ds.length,
        depthMax: ds.length === 0 ? Number.NaN : Math.max(...ds),
        deadTuplesDelta,
        deadTuplesPerJob: finished === 0 ? Number.NaN : deadTuplesDelta / finished,
        versionsKilledPerJob: finished === 0 ? Number.NaN : (a.versionsKilled - b.versionsKilled) / finished,
        autovacuums: a.autovacuums - b.autovacuums,
      };
    });

    const recoverySeconds = recoveredAfter({ pickups, depth, cleanPickups, cleanDepth, release: bounds.recovery.from, recoverySeconds: sizes.recoverySeconds });
    const measuredJobs = PHASES.reduce((acc, phase) => acc + bounds[phase].produced, 0);
    return {
      system: adapter.system,
      label: adapter.label,
      phases,
      recoverySeconds,
      bytesPerJob: (bounds.recovery.after.bytes - firstStats.bytes) / measuredJobs,
      atHoldEnd: bounds.hold.after.byTable,
    };
  } finally {
    sampling = false;
    await sampler.catch(() => undefined);
    // A failed run must not leave the snapshot held (the database is dropped next, but the session would linger).
    await holder.query('ROLLBACK').catch(() => undefined);
    if (run) await run.stop();
    await holder.end();
    await monitor.end();
  }
}

const fmt = (value: number, digits = 0): string =>
  Number.isNaN(value) ? 'n/a' : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function heldSnapshotWorkload(sizes: HeldSnapshotSizes, skip: boolean): Workload {
  return {
    key: 'held_snapshot',
    async run(context, systems): Promise<TableResult> {
      const measures: HeldSnapshotMeasure[] = [];
      if (!skip) {
        for (const adapter of STEADY_ADAPTERS) {
          const system = systems.find((s) => s.key === adapter.system);
          if (!system) continue;
          measures.push(await context.withDatabase(system, (url) => measureSystem(context, adapter, sizes, url), 'held'));
          const m = measures.at(-1)!;
          for (const p of m.phases) {
            context.log(
              `  ${p.phase}: pickup p50/p95/p99 ${fmt(p.p50Ms, 1)}/${fmt(p.p95Ms, 1)}/${fmt(p.p99Ms, 1)} ms, ${fmt(p.finishedPerSecond)}/s done of ${fmt(p.producedPerSecond)}/s produced, depth max ${fmt(p.depthMax)}, dead tuples/job ${fmt(p.deadTuplesPerJob, 2)} (versions made dead ${fmt(p.versionsKilledPerJob, 2)}), autovacuums ${p.autovacuums}`,
            );
          }
          context.log(
            `  recovered after ${m.recoverySeconds === null ? `> ${sizes.recoverySeconds}` : m.recoverySeconds} s; ${fmt(m.bytesPerJob)} bytes per job`,
          );
        }
      }
      const rows = measures.flatMap((m) =>
        m.phases.map((p) => [
          m.label,
          p.phase,
          `${fmt(p.producedPerSecond)} / ${fmt(p.finishedPerSecond)}`,
          `${fmt(p.p50Ms, 1)} / ${fmt(p.p95Ms, 1)} / ${fmt(p.p99Ms, 1)}`,
          `${fmt(p.depthMean, 1)} / ${fmt(p.depthMax)}`,
          `${fmt(p.deadTuplesPerJob, 2)} / ${fmt(p.versionsKilledPerJob, 2)}`,
          p.autovacuums,
          p.phase === 'recovery' ? (m.recoverySeconds === null ? `> ${sizes.recoverySeconds - RECOVERY_WINDOW_SECONDS} s` : `${m.recoverySeconds} s`) : '',
          p.phase === 'recovery' ? fmt(m.bytesPerJob) : '',
        ]),
      );
      const hold = (system: string) => measures.find((m) => m.system === system)?.phases.find((p) => p.phase === 'hold');
      const ours = hold('runledger_worker');
      return {
        kind: 'table',
        key: 'held_snapshot',
        title: `held snapshot: ${sizes.rate} jobs/s, ${sizes.workers} workers, ${sizes.workMs} ms of work, a transaction holding xmin for ${sizes.holdSeconds} s`,
        size: `warm-up ${sizes.warmupSeconds} s (excluded), clean ${sizes.cleanSeconds} s, hold ${sizes.holdSeconds} s, recovery ${sizes.recoverySeconds} s; one run per system`,
        headers: [
          'system',
          'phase',
          'produced / finished per s',
          'pickup p50 / p95 / p99 ms',
          'queue depth mean / max',
          'dead tuples per job: n_dead_tup delta / versions made dead',
          'autovacuums',
          'recovered to clean after',
          'bytes per job (tables + indexes)',
        ],
        rows,
        data: { sizes, measures },
        notes: [
          "hold: another session of the system's database in `BEGIN; SELECT txid_current()`, idle in transaction for the phase (the method of hardbyte/postgresql-job-queue-benchmarking's idle-in-transaction phase); vacuum is the server's autovacuum on its own schedule",
          'pickup = enqueue call start -> handler start; a job counts in the phase its handler started in; finished = handlers returned (the completion commit follows)',
          `recovered: the first ${RECOVERY_WINDOW_SECONDS}-second window after the release with pickup p95 <= ${RECOVERED_P95_FACTOR}x the clean phase's and queue depth <= the clean phase's maximum`,
          "dead tuples per job: the n_dead_tup delta over the phase (summed over the system's tables; a vacuum resets it to what it found and could not remove) / handlers finished in it; versions made dead: the n_tup_upd + n_tup_del delta / the same (each update or delete leaves one dead version, which a held snapshot keeps)",
          ...(skip
            ? ['skipped (BENCH_SKIP_HELD_SNAPSHOT=1)']
            : ours
              ? [
                  `runledger during the hold: pickup p50/p95/p99 ${fmt(ours.p50Ms, 1)}/${fmt(ours.p95Ms, 1)}/${fmt(ours.p99Ms, 1)} ms, ${fmt(ours.deadTuplesPerJob, 2)} dead tuples per job`,
                ]
              : []),
        ],
      };
    },
  };
}
