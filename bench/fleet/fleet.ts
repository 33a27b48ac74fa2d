/**
 * A fleet of runledger worker processes against one database (runledger
 * only): P child processes (bench/fleet/worker-process.ts), each a
 * `createWorker` with its defaults and the bench's concurrency, its own pool,
 * its own LISTEN connection and its own maintenance loops.
 *
 * - Scaling: the drain (no-op jobs) and chains (A -> B -> C) workloads with
 *   P = 1, 2, 4, 8 processes, each on a fresh clone; the clock runs from `go`
 *   (every process connected and built, none started) to the last expected
 *   success reported. The figure is jobs (steps) per second, and the ratio to
 *   P = 1.
 * - Maintenance: every process runs the reaper (every 15 s), the scheduler
 *   (every 5 s) and the intent promoter (every 5 s) unless told not
 *   to: they are leader-free (each pass is a set-based statement that is
 *   correct however many processes run it at once), so a fleet of P runs P of
 *   each. Their cost is measured on an idle fleet: commits per second of the
 *   database (pg_stat_database, settled after the processes exit) and
 *   statements the processes sent, with the loops on (defaults) and off.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { BenchConfig } from '../config.js';
import { settledCommits, sleep } from '../db.js';
import { seedChainRuns, seedNoopJobs } from '../systems/runledger.js';
import { BENCH_JOB_TYPE, CHAIN_STEPS } from '../systems/types.js';
import type { BenchContext, TableResult, Workload } from '../workloads/types.js';
import type { FleetChildMessage, FleetParentMessage } from './messages.js';

const WORKER_SCRIPT = fileURLToPath(new URL('./worker-process.ts', import.meta.url));
const READY_TIMEOUT_MS = 120_000;
const RUN_TIMEOUT_MS = 600_000;

export interface FleetSizes {
  processes: number[];
  drainJobs: number;
  chains: number;
  concurrency: number;
  idleSeconds: number;
}

export function readFleetSizes(config: BenchConfig): FleetSizes {
  const raw = process.env.BENCH_FLEET_PROCESSES;
  const processes = raw ? raw.split(',').map((p) => Number(p.trim())) : [1, 2, 4, 8];
  if (processes.some((p) => !Number.isInteger(p) || p < 1)) throw new Error(`BENCH_FLEET_PROCESSES must be positive integers, got "${raw}"`);
  const idle = Number(process.env.BENCH_FLEET_IDLE_SECONDS ?? (config.quick ? 5 : 30));
  if (!(idle > 0)) throw new Error('BENCH_FLEET_IDLE_SECONDS must be positive');
  return { processes, drainJobs: config.drainJobs, chains: config.chains, concurrency: config.concurrency, idleSeconds: idle };
}

interface Child {
  process: ChildProcess;
  ready: Promise<void>;
  stopped: Promise<number>;
  exited: Promise<void>;
}

function startChild(url: string, env: Record<string, string>, onDone: (n: number) => void): Child {
  const child = fork(WORKER_SCRIPT, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, FLEET_URL: url, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let ready!: () => void;
  let stopped!: (statements: number) => void;
  const readyP = new Promise<void>((resolve) => (ready = resolve));
  const stoppedP = new Promise<number>((resolve) => (stopped = resolve));
  const exited = new Promise<void>((resolve, reject) => {
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`fleet worker ${child.pid} exited (code ${code}, signal ${signal})`))));
  });
  // An early exit must fail the waits on ready/stopped too, not hang them.
  exited.catch(() => undefined);
  child.on('message', (message: FleetChildMessage) => {
    if (message.t === 'ready') ready();
    else if (message.t === 'done') onDone(message.n);
    else if (message.t === 'stopped') stopped(message.statements);
  });
  return {
    process: child,
    ready: Promise.race([readyP, exited.then(() => Promise.reject(new Error('fleet worker exited before ready')))]),
    stopped: stoppedP,
    exited,
  };
}

const tell = (child: Child, message: FleetParentMessage): void => {
  if (child.process.connected) child.process.send(message);
};

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts P processes, waits until each is ready, says go, runs `until`, stops them; returns the wall time from go and the statements they sent. */
export async function runFleet(
  url: string,
  processes: number,
  env: Record<string, string>,
  until: (count: () => number) => Promise<void>,
): Promise<{ wallMs: number; statements: number }> {
  let done = 0;
  const children = Array.from({ length: processes }, () => startChild(url, env, (n) => (done += n)));
  try {
    await withTimeout(Promise.all(children.map((c) => c.ready)), READY_TIMEOUT_MS, 'fleet start-up');
    const started = performance.now();
    for (const child of children) tell(child, { t: 'go' });
    await until(() => done);
    const wallMs = performance.now() - started;
    for (const child of children) tell(child, { t: 'stop' });
    const statements = (await withTimeout(Promise.all(children.map((c) => c.stopped)), 60_000, 'fleet stop')).reduce((a, b) => a + b, 0);
    await Promise.all(children.map((c) => c.exited));
    return { wallMs, statements };
  } finally {
    for (const child of children) if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  }
}

export async function untilCount(count: () => number, target: number): Promise<void> {
  const deadline = performance.now() + RUN_TIMEOUT_MS;
  while (count() < target) {
    if (performance.now() > deadline) throw new Error(`fleet: ${count()} of ${target} done after ${RUN_TIMEOUT_MS} ms`);
    await sleep(5);
  }
}

interface ScalingMeasure {
  workload: 'drain' | 'chains';
  processes: number;
  units: number;
  wallMs: number;
  rate: number;
  statementsPerUnit: number;
}

interface IdleMeasure {
  processes: number;
  maintenance: boolean;
  seconds: number;
  commitsPerSecond: number;
  statementsPerSecond: number;
}

export function fleetWorkload(sizes: FleetSizes): Workload {
  return {
    key: 'fleet',
    async run(context: BenchContext, systems): Promise<TableResult> {
      const system = systems.find((s) => s.key === 'runledger');
      const scaling: ScalingMeasure[] = [];
      const idle: IdleMeasure[] = [];
      if (system) {
        for (const workload of ['drain', 'chains'] as const) {
          for (const processes of sizes.processes) {
            context.log(`fleet: ${workload}, ${processes} process(es) x concurrency ${sizes.concurrency}`);
            const units = workload === 'drain' ? sizes.drainJobs : sizes.chains * CHAIN_STEPS.length;
            const measured = await context.withDatabase(
              system,
              async (url) => {
                if (workload === 'drain') await seedNoopJobs(url, sizes.drainJobs);
                else await seedChainRuns(url, sizes.chains);
                const env =
                  workload === 'drain'
                    ? { FLEET_TYPES: BENCH_JOB_TYPE, FLEET_COUNT_TYPE: '', FLEET_CONCURRENCY: String(sizes.concurrency) }
                    : { FLEET_TYPES: CHAIN_STEPS.join(','), FLEET_COUNT_TYPE: CHAIN_STEPS[2], FLEET_CONCURRENCY: String(sizes.concurrency) };
                const target = workload === 'drain' ? sizes.drainJobs : sizes.chains;
                return runFleet(url, processes, env, (count) => untilCount(count, target));
              },
              'fleet',
            );
            const measure = {
              workload,
              processes,
              units,
              wallMs: measured.wallMs,
              rate: units / (measured.wallMs / 1000),
              statementsPerUnit: measured.statements / units,
            };
            context.log(
              `  ${Math.round(measure.rate)} ${workload === 'drain' ? 'jobs' : 'steps'}/s, ${measure.statementsPerUnit.toFixed(2)} statements per unit`,
            );
            scaling.push(measure);
          }
        }
        const idleSizes = [...new Set([1, Math.max(...sizes.processes)])];
        for (const processes of idleSizes) {
          for (const maintenance of [true, false]) {
            context.log(`fleet: idle, ${processes} process(es), maintenance loops ${maintenance ? 'on (defaults)' : 'off'}, ${sizes.idleSeconds} s`);
            const measured = await context.withDatabase(
              system,
              async (url, database) => {
                const before = await settledCommits(context.admin, database);
                const env = {
                  FLEET_TYPES: BENCH_JOB_TYPE,
                  FLEET_COUNT_TYPE: '',
                  FLEET_CONCURRENCY: String(sizes.concurrency),
                  FLEET_MAINTENANCE: maintenance ? '1' : '0',
                };
                const run = await runFleet(url, processes, env, () => sleep(sizes.idleSeconds * 1_000));
                const after = await settledCommits(context.admin, database);
                return { commits: after - before, ...run };
              },
              'fleet',
            );
            const seconds = measured.wallMs / 1000;
            const measure = {
              processes,
              maintenance,
              seconds,
              commitsPerSecond: measured.commits / seconds,
              statementsPerSecond: measured.statements / seconds,
            };
            context.log(`  ${measure.commitsPerSecond.toFixed(1)} commits/s, ${measure.statementsPerSecond.toFixed(1)} statements/s`);
            idle.push(measure);
          }
        }
      }
      const base = (workload: string) => scaling.find((m) => m.workload === workload && m.processes === 1)?.rate;
      const rows: (string | number | null)[][] = scaling.map((m) => {
        const one = base(m.workload);
        return [
          `${m.workload}, ${m.processes} process${m.processes === 1 ? '' : 'es'}`,
          `${Math.round(m.rate).toLocaleString('en-US')} ${m.workload === 'drain' ? 'jobs' : 'steps'}/s`,
          one ? `${(m.rate / one).toFixed(2)}x` : 'n/a',
          m.statementsPerUnit.toFixed(2),
        ];
      });
      for (const m of idle) {
        rows.push([
          `idle, ${m.processes} process${m.processes === 1 ? '' : 'es'}, maintenance loops ${m.maintenance ? 'on' : 'off'}`,
          `${m.commitsPerSecond.toFixed(1)} commits/s`,
          '',
          `${m.statementsPerSecond.toFixed(1)} statements/s`,
        ]);
      }
      const idleOn = idle.find((m) => m.processes === Math.max(...sizes.processes) && m.maintenance);
      const idleOff = idle.find((m) => m.processes === Math.max(...sizes.processes) && !m.maintenance);
      return {
        kind: 'table',
        key: 'fleet',
        title: `fleet: ${sizes.processes.join(' / ')} worker processes against one database (createWorker defaults, concurrency ${sizes.concurrency} each)`,
        size: `drain ${sizes.drainJobs.toLocaleString('en-US')} jobs, chains ${sizes.chains.toLocaleString('en-US')} x ${CHAIN_STEPS.length}; idle fleets ${sizes.idleSeconds} s`,
        headers: ['fleet', 'rate', 'vs 1 process', 'statements per unit (or per second, idle)'],
        rows,
        data: { sizes, scaling, idle },
        notes: [
          'each process: its own pg.Pool (concurrency + 4), its own LISTEN connection, its own reaper (every 15 s), scheduler (5 s) and intent promoter (5 s): leader-free, so every process runs all three',
          'the clock starts when every process is connected and built (tsx start-up excluded) and stops at the last expected success reported over IPC',
          ...(idleOn && idleOff
            ? [
                `an idle fleet of ${idleOn.processes}: ${idleOn.commitsPerSecond.toFixed(1)} commits/s with the maintenance loops, ${idleOff.commitsPerSecond.toFixed(1)} without (the rest is the idle poll, every 1 s per process)`,
              ]
            : []),
        ],
      };
    },
  };
}
