/**
 * pg-boss 12 (bench/peers). Two variants:
 * - "work()": its worker API the way its docs recommend for throughput:
 *   `work(queue, { batchSize, localConcurrency, burstWhenBatchFull })`, with
 *   `useListenNotify` and `notify: true` queues so new jobs wake workers.
 *   Chains: the handler inserts each job's next step. Fan-out/fan-in: a
 *   `transactional` worker whose transaction decrements a counter row and,
 *   when it reaches 0, sends the fan-in job with the same transaction.
 *   pg-boss completes after the handler returns without telling the caller
 *   when that committed, so the end is read from its job table.
 * - "fetch loop": `concurrency` loops of fetch({ batchSize }) + complete(ids),
 *   the shape of the runledger hand loop (drain only).
 * Maintenance (`supervise`) and cron (`schedule`) are off while measuring.
 */
import { performance } from 'node:perf_hooks';
import type { PgBoss, PgBossDb, PgBossJob, PgBossWorkOptions } from '../peers/api.js';
import { loadPgBoss, peerVersion } from '../peers/load.js';
import { withClient } from '../db.js';
import { Countdown, pollUntilZero, runInFlight } from '../done.js';
import { LatencyProbe, seqOf } from '../latency.js';
import { BENCH_JOB_TYPE, FAN_COUNTER_TABLE, HOST_ROWS_TABLE, type BenchSystem, type LatencySample, type Timed } from './types.js';
import pg from 'pg';

const CHAIN_QUEUE = 'bench_chain';
const FAN_QUEUE = 'bench_fan';
/**
 * The enqueue workloads' queue, with notify off (pg-boss's default): without a
 * worker to wake, NOTIFY only costs, and this is pg-boss's faster enqueue
 * (about one commit per send instead of two with notify on).
 */
const ENQUEUE_QUEUE = 'bench_enqueue';
const QUEUES = [BENCH_JOB_TYPE, CHAIN_QUEUE, FAN_QUEUE];
/** The base poll; NOTIFY wakes workers sooner (its documented minimum is 0.5 s). */
const POLLING_INTERVAL_SECONDS = 0.5;
const UNFINISHED_SQL = `SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state <> 'completed'`;

interface ChainData {
  chain: number;
  step: number;
}
interface FanData {
  kind: 'root' | 'child' | 'in';
  run: number;
  width: number;
}

async function withBoss<R>(url: string, max: number, fn: (boss: PgBoss) => Promise<R>): Promise<R> {
  const { PgBoss: PgBossClass } = await loadPgBoss();
  const boss = new PgBossClass({ connectionString: url, max, supervise: false, schedule: false, migrate: true, useListenNotify: true });
  boss.on('error', (error: Error) => console.error(`pg-boss error: ${error.message}`));
  await boss.start();
  try {
    return await fn(boss);
  } finally {
    await boss.stop({ graceful: false, close: true, timeout: 5_000 });
  }
}

export interface PgBossVariantOptions {
  claimBatch: number;
}

function workOptions(claimBatch: number, concurrency: number): PgBossWorkOptions {
  return { batchSize: claimBatch, localConcurrency: concurrency, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS, burstWhenBatchFull: true };
}

/**
 * Runs `work()` on `queue` until `countdown` is done (the handler counts), then until the
 * queue has no unfinished job (the completions are committed); returns the timing.
 */
async function timedWork<T>(
  url: string,
  queue: string,
  options: PgBossWorkOptions,
  countdown: Countdown,
  handler: (boss: PgBoss, jobs: PgBossJob<T>[], tx: PgBossDb) => Promise<void>,
): Promise<Timed> {
  const concurrency = options.localConcurrency ?? 1;
  return withBoss(url, concurrency + 4, async (boss) => {
    const started = performance.now();
    await boss.work<T>(queue, options, async (jobs, tx) => {
      try {
        await handler(boss, jobs, tx);
      } catch (error) {
        countdown.fail(error);
        throw error;
      }
    });
    try {
      await countdown.done;
      const harnessCommits = await pollUntilZero(url, UNFINISHED_SQL, [queue], `pg-boss ${queue}`);
      return { wallMs: performance.now() - started, harnessCommits };
    } finally {
      await boss.offWork(queue, { wait: true });
    }
  });
}

export function pgBossSystems(options: PgBossVariantOptions): BenchSystem[] {
  const { claimBatch } = options;
  const version = peerVersion('pg-boss');

  const work: BenchSystem = {
    key: 'pgboss',
    label: `pg-boss ${version} work()`,
    peer: true,

    describe() {
      return `work(batchSize ${claimBatch}, localConcurrency = concurrency, burstWhenBatchFull), useListenNotify + notify queues; fan-out: transactional worker + counter row; enqueue workloads on a notify-off queue; supervise/schedule off`;
    },

    async install(url) {
      await withBoss(url, 2, async (boss) => {
        for (const queue of QUEUES) await boss.createQueue(queue, { notify: true });
        await boss.createQueue(ENQUEUE_QUEUE, { notify: false });
      });
    },

    async enqueueBulk(url, batches, batchSize): Promise<Timed> {
      return withBoss(url, 2, async (boss) => {
        const started = performance.now();
        for (let b = 0; b < batches; b += 1) {
          await boss.insert(
            ENQUEUE_QUEUE,
            Array.from({ length: batchSize }, (_, i) => ({ data: { n: b * batchSize + i } })),
          );
        }
        return { wallMs: performance.now() - started, harnessCommits: 0 };
      });
    },

    async enqueueSingle(url, jobs, inFlight): Promise<Timed> {
      return withBoss(url, inFlight + 1, async (boss) => {
        const started = performance.now();
        await runInFlight(jobs, inFlight, async (n) => {
          await boss.send(ENQUEUE_QUEUE, { n });
        });
        return { wallMs: performance.now() - started, harnessCommits: 0 };
      });
    },

    async seedNoop(url, jobs) {
      await withBoss(url, 2, async (boss) => {
        for (let start = 0; start < jobs; start += 1_000) {
          const size = Math.min(1_000, jobs - start);
          await boss.insert(
            BENCH_JOB_TYPE,
            Array.from({ length: size }, (_, i) => ({ data: { n: start + i } })),
          );
        }
      });
    },

    drain(url, { jobs, concurrency }) {
      const countdown = new Countdown(jobs, 'pg-boss drain');
      return timedWork(url, BENCH_JOB_TYPE, workOptions(claimBatch, concurrency), countdown, async (_boss, batch) => countdown.hit(batch.length));
    },

    async hostWrite(url, { jobs, concurrency }) {
      // The handler's own pool, as a host application's: each row autocommits, then pg-boss completes the batch.
      const host = new pg.Pool({ connectionString: url, max: concurrency });
      try {
        const countdown = new Countdown(jobs, 'pg-boss host write');
        return await timedWork<{ n: number }>(url, BENCH_JOB_TYPE, workOptions(claimBatch, concurrency), countdown, async (_boss, batch) => {
          for (const job of batch) await host.query(`INSERT INTO ${HOST_ROWS_TABLE} (n) VALUES ($1)`, [job.data.n]);
          countdown.hit(batch.length);
        });
      } finally {
        await host.end();
      }
    },

    async seedChains(url, chains) {
      await withBoss(url, 2, async (boss) => {
        await boss.insert(
          CHAIN_QUEUE,
          Array.from({ length: chains }, (_, chain) => ({ data: { chain, step: 0 } satisfies ChainData })),
        );
      });
    },

    chains(url, { chains, concurrency }) {
      const countdown = new Countdown(chains, 'pg-boss chains');
      return timedWork<ChainData>(url, CHAIN_QUEUE, workOptions(claimBatch, concurrency), countdown, async (boss, batch) => {
        const next = batch.filter((job) => job.data.step < 2).map((job) => ({ data: { chain: job.data.chain, step: job.data.step + 1 } }));
        if (next.length > 0) await boss.insert(CHAIN_QUEUE, next);
        countdown.hit(batch.length - next.length);
      });
    },

    async seedFanOut(url, runs, width) {
      await withClient(url, async (client) => {
        await client.query(`CREATE TABLE ${FAN_COUNTER_TABLE} (run int PRIMARY KEY, remaining int NOT NULL)`);
        await client.query(`INSERT INTO ${FAN_COUNTER_TABLE} SELECT g, $1 FROM generate_series(0, $2 - 1) g`, [width, runs]);
      });
      await withBoss(url, 2, async (boss) => {
        await boss.insert(
          FAN_QUEUE,
          Array.from({ length: runs }, (_, run) => ({ data: { kind: 'root', run, width } satisfies FanData })),
        );
      });
    },

    fanOut(url, { runs, concurrency }) {
      const countdown = new Countdown(runs, 'pg-boss fan-out');
      const options: PgBossWorkOptions = { ...workOptions(claimBatch, concurrency), transactional: true };
      return timedWork<FanData>(url, FAN_QUEUE, options, countdown, async (boss, batch, tx) => {
        const children: { data: FanData }[] = [];
        const finishedChildren = new Map<number, number>();
        let fanIns = 0;
        for (const { data } of batch) {
          if (data.kind === 'root') for (let i = 0; i < data.width; i += 1) children.push({ data: { kind: 'child', run: data.run, width: data.width } });
          else if (data.kind === 'child') finishedChildren.set(data.run, (finishedChildren.get(data.run) ?? 0) + 1);
          else fanIns += 1;
        }
        if (children.length > 0) await boss.insert(FAN_QUEUE, children, { db: tx });
        // Counter rows in run order: two batches holding children of the same runs must lock them in one order
        // (insertion order deadlocked, 40P01, when batches interleaved runs differently).
        for (const [run, n] of [...finishedChildren].sort((a, b) => a[0] - b[0])) {
          const { rows } = await tx.executeSql(`UPDATE ${FAN_COUNTER_TABLE} SET remaining = remaining - $2 WHERE run = $1 RETURNING remaining`, [run, n]);
          // The last child to finish enqueues the fan-in, in the transaction that completes it.
          if (Number(rows[0]?.remaining) === 0) await boss.send(FAN_QUEUE, { kind: 'in', run, width: 0 } satisfies FanData, { db: tx });
        }
        countdown.hit(fanIns);
      });
    },

    async latency(url, jobs, concurrency): Promise<LatencySample[]> {
      return withBoss(url, concurrency + 4, async (boss) => {
        const probe = new LatencyProbe();
        await boss.work<{ seq: number }>(BENCH_JOB_TYPE, workOptions(claimBatch, concurrency), async (batch) => {
          for (const job of batch) probe.picked(seqOf(job.data));
          // work() completes after the handler without exposing the commit: order only (n/a).
          for (const job of batch) queueMicrotask(() => probe.markDone(seqOf(job.data), false));
        });
        try {
          return await probe.run(jobs, async (seq) => {
            await boss.send(BENCH_JOB_TYPE, { seq });
          });
        } finally {
          await boss.offWork(BENCH_JOB_TYPE, { wait: true });
        }
      });
    },
  };

  const fetchLoop: BenchSystem = {
    key: 'pgboss_fetch',
    label: `pg-boss ${version} fetch loop`,
    peer: true,

    describe() {
      return `concurrency loops x fetch(batchSize ${claimBatch}) + complete(ids) (drain only)`;
    },

    install: work.install,
    seedNoop: work.seedNoop!,

    async drain(url, { jobs, concurrency }): Promise<Timed> {
      return withBoss(url, concurrency + 2, async (boss) => {
        const started = performance.now();
        const loops = Array.from({ length: concurrency }, async () => {
          let done = 0;
          for (;;) {
            const batch = await boss.fetch<{ n: number }>(BENCH_JOB_TYPE, { batchSize: claimBatch });
            if (batch.length === 0) return done;
            await boss.complete(
              BENCH_JOB_TYPE,
              batch.map((job) => job.id),
            );
            done += batch.length;
          }
        });
        const total = (await Promise.all(loops)).reduce((sum, n) => sum + n, 0);
        if (total !== jobs) throw new Error(`pg-boss fetch loop completed ${total} of ${jobs}`);
        return { wallMs: performance.now() - started, harnessCommits: 0 };
      });
    },
  };

  return [work, fetchLoop];
}
