/**
 * DBOS Transact 5.3 (`@dbos-inc/dbos-sdk`, bench/peers), in this process, on
 * its own system database (the run's clone of a template that `DBOS.migrate`
 * built and that holds the bench's queues). Workflows and steps are
 * registered once per process, as DBOS requires before its first launch;
 * each run launches DBOS on its database and shuts it down after.
 *
 * Queues are DBOS 5.x's database-backed queues (`DBOS.registerQueue`, written
 * into the template at install, so a launch dispatches them at once), limited
 * by `workerConcurrency` (running workflows in this process; one process, so
 * the same as a global limit). Two poll settings: `minPollingIntervalMs` the
 * bench's (10 ms) and DBOS's default (1 s). Children's results are awaited
 * with `getResult`, whose database poll is given the same interval (DBOS's
 * default: 1 s).
 *
 * A workflow's end is seen in process (its body returned) and then, as for
 * the other peers, from its table: `dbos.workflow_status` polled until no
 * workflow is left unfinished (those polls are harness commits).
 */
import { performance } from 'node:perf_hooks';
import type { DbosStatic, DbosWorkflowHandle } from '../peers/api.js';
import { loadDbos, peerVersion } from '../peers/load.js';
import { Countdown, pollUntilZero, runInFlight } from '../done.js';
import type { BenchSystem, FunctionFanOutInput, FunctionSleepInput, FunctionSleepMeasure, Timed } from './types.js';

const APP_NAME = 'runledger_bench';
const UNFINISHED_SQL = `SELECT count(*) AS n FROM dbos.workflow_status WHERE status IN ('ENQUEUED', 'PENDING', 'DELAYED')`;
/** Start calls in flight, as runledger's enqueue workloads. */
const START_IN_FLIGHT = 10;
/** The slot probe's sleepers wake this long after the first is enqueued. */
const PROBE_LEAD_MS = 3_000;

/** The queues written into the template: workflows and, for the fan-out, children (a parent holds its slot while it waits). */
const QUEUES = {
  fast: { workflows: 'bench_fn_fast', children: 'bench_fn_children_fast' },
  default: { workflows: 'bench_fn_default', children: 'bench_fn_children_default' },
} as const;

type Poll = keyof typeof QUEUES;

/** Where the registered workflows report, pointed at the current run (registration is once per process). */
interface Sink {
  workflowDone(): void;
  slept(enteredAt: number, wokeAt: number): void;
  fail(error: unknown): void;
}

let sink: Sink | undefined;
const report = (): Sink => {
  if (!sink) throw new Error('a DBOS workflow ran outside a timed run');
  return sink;
};

interface Registered {
  DBOS: DbosStatic;
  chain3(index: number): Promise<number>;
  fanParentQueued(index: number, width: number, childQueue: string, resultPollMs: number | null): Promise<number>;
  fanParentSteps(index: number, width: number): Promise<number>;
  sleeper(wakeAt: number): Promise<void>;
}

let registered: Promise<Registered> | undefined;

async function guarded<R>(body: () => Promise<R>): Promise<R> {
  try {
    return await body();
  } catch (error) {
    sink?.fail(error);
    throw error;
  }
}

function register(): Promise<Registered> {
  registered ??= (async () => {
    const { DBOS } = await loadDbos();
    const step = (name: string, value: number) => DBOS.runStep(async () => value, { name });
    const chain3 = DBOS.registerWorkflow(
      (index: number) =>
        guarded(async () => {
          await step('a', index);
          await step('b', index);
          await step('c', index);
          report().workflowDone();
          return index;
        }),
      { name: 'bench_chain3' },
    );
    const fanChild = DBOS.registerWorkflow((_index: number, i: number) => guarded(() => step('child', i)), { name: 'bench_fan_child' });
    // DBOS's documented fan-out: enqueue child workflows, then await each handle's result.
    const fanParentQueued = DBOS.registerWorkflow(
      (index: number, width: number, childQueue: string, resultPollMs: number | null) =>
        guarded(async () => {
          await step('root', index);
          const handles: DbosWorkflowHandle<number>[] = [];
          for (let i = 0; i < width; i += 1) handles.push(await DBOS.startWorkflow(fanChild, { queueName: childQueue })(index, i));
          for (const handle of handles) await handle.getResult(resultPollMs === null ? undefined : { pollingIntervalMs: resultPollMs });
          await step('fan_in', index);
          report().workflowDone();
          return index;
        }),
      { name: 'bench_fan_parent_queued' },
    );
    const fanParentSteps = DBOS.registerWorkflow(
      (index: number, width: number) =>
        guarded(async () => {
          await step('root', index);
          await Promise.all(Array.from({ length: width }, (_, i) => step(`child_${i}`, i)));
          await step('fan_in', index);
          report().workflowDone();
          return index;
        }),
      { name: 'bench_fan_parent_steps' },
    );
    // The duration is taken from the clock at the first run (DBOS records the wake time then); a recovery would recompute it.
    const sleeper = DBOS.registerWorkflow(
      (wakeAt: number) =>
        guarded(async () => {
          const enteredAt = Date.now();
          await DBOS.sleep(Math.max(0, wakeAt - enteredAt));
          report().slept(enteredAt, Date.now());
        }),
      { name: 'bench_sleeper' },
    );
    return { DBOS, chain3, fanParentQueued, fanParentSteps, sleeper };
  })();
  return registered;
}

/** DBOS's systemDatabasePoolSize for every launch; undefined: its default (10). */
let poolSize: number | undefined;

async function withDbos<R>(url: string, fn: (r: Registered) => Promise<R>, runMigrations = false): Promise<R> {
  const r = await register();
  r.DBOS.setConfig({
    name: APP_NAME,
    systemDatabaseUrl: url,
    logLevel: 'error',
    runMigrations,
    ...(poolSize === undefined ? {} : { systemDatabasePoolSize: poolSize }),
  });
  await r.DBOS.launch();
  try {
    return await fn(r);
  } finally {
    sink = undefined;
    await r.DBOS.shutdown();
  }
}

/** Starts `count` workflows (START_IN_FLIGHT calls at once) and times them to the last completion committed. */
async function timedStarts(url: string, count: number, what: string, start: (r: Registered, index: number) => Promise<unknown>): Promise<Timed> {
  return withDbos(url, async (r) => {
    const countdown = new Countdown(count, what);
    sink = { workflowDone: () => countdown.hit(), slept: () => undefined, fail: (error) => countdown.fail(error) };
    const started = performance.now();
    await runInFlight(count, START_IN_FLIGHT, async (index) => void (await start(r, index)));
    await countdown.done;
    const harnessCommits = await pollUntilZero(url, UNFINISHED_SQL, [], what);
    return { wallMs: performance.now() - started, harnessCommits };
  });
}

/** Sleepers started until every one has resumed; returns their enter and wake times. */
async function runSleepers(r: Registered, count: number, wakeAt: number, queueName: string | null, what: string) {
  const entered: number[] = [];
  const woke: number[] = [];
  const countdown = new Countdown(count, what);
  sink = {
    workflowDone: () => undefined,
    slept(enteredAt, wokeAt) {
      entered.push(enteredAt);
      woke.push(wokeAt);
      countdown.hit();
    },
    fail: (error) => countdown.fail(error),
  };
  const started = performance.now();
  const start = queueName === null ? r.DBOS.startWorkflow(r.sleeper) : r.DBOS.startWorkflow(r.sleeper, { queueName });
  await runInFlight(count, START_IN_FLIGHT, async () => void (await start(wakeAt)));
  const startMs = performance.now() - started;
  await countdown.done;
  return { entered, woke, startMs };
}

async function timedSleep(url: string, input: FunctionSleepInput, queues: (typeof QUEUES)[Poll]): Promise<FunctionSleepMeasure> {
  return withDbos(url, async (r) => {
    const wakeAt = Date.now() + input.leadMs;
    const main = await runSleepers(r, input.sleepers, wakeAt, null, 'DBOS sleepers');
    let sleptBeforeWake = 0;
    if (input.probeSleepers > 0) {
      const probeWake = Date.now() + PROBE_LEAD_MS;
      const probe = await runSleepers(r, input.probeSleepers, probeWake, queues.workflows, 'DBOS queued sleepers');
      sleptBeforeWake = probe.entered.filter((at) => at < probeWake).length;
    }
    sink = undefined;
    await pollUntilZero(url, UNFINISHED_SQL, [], 'DBOS sleepers');
    return {
      startMs: main.startMs,
      leadMs: input.leadMs,
      startedAfterWake: main.entered.filter((at) => at >= wakeAt).length,
      // A sleeper that began after the wake time measures the start rate, not the wake-up: counted apart.
      latenessMs: main.woke.filter((_at, i) => main.entered[i]! < wakeAt).map((at) => at - wakeAt),
      probe: { queued: input.probeSleepers, concurrency: input.concurrency, sleptBeforeWake },
    };
  });
}

export interface DbosVariantOptions {
  /** The queues' `workerConcurrency` (the bench's handler concurrency). */
  concurrency: number;
  /** `minPollingIntervalMs` of the fast queues, and the children's result poll. */
  pollMs: number;
  /** systemDatabasePoolSize; null: DBOS's default (10). */
  poolSize: number | null;
}

export function dbosSystems(options: DbosVariantOptions): BenchSystem[] {
  const version = peerVersion('@dbos-inc/dbos-sdk');
  const { concurrency, pollMs } = options;
  poolSize = options.poolSize ?? undefined;
  const pool = options.poolSize === null ? 'system database pool: DBOS default (10)' : `systemDatabasePoolSize ${options.poolSize}`;

  async function install(url: string): Promise<void> {
    const { DBOS } = await register();
    await DBOS.migrate(url);
    await withDbos(
      url,
      async () => {
        for (const [poll, names] of Object.entries(QUEUES)) {
          const minPollingIntervalMs = poll === 'fast' ? { minPollingIntervalMs: pollMs } : {};
          await DBOS.registerQueue(names.workflows, { workerConcurrency: concurrency, ...minPollingIntervalMs, onConflict: 'always_update' });
          await DBOS.registerQueue(names.children, { workerConcurrency: concurrency, ...minPollingIntervalMs, onConflict: 'always_update' });
        }
      },
      true,
    );
  }

  const chain3 =
    (poll: Poll) =>
    (url: string, { workflows }: { workflows: number }) =>
      timedStarts(url, workflows, `DBOS chain3 (${poll} poll)`, (r, i) => r.DBOS.startWorkflow(r.chain3, { queueName: QUEUES[poll].workflows })(i));

  const fanOutQueued =
    (poll: Poll) =>
    (url: string, { runs, width }: FunctionFanOutInput) =>
      timedStarts(url, runs, `DBOS fan-out, child workflows (${poll} poll)`, (r, i) =>
        r.DBOS.startWorkflow(r.fanParentQueued, { queueName: QUEUES[poll].workflows })(i, width, QUEUES[poll].children, poll === 'fast' ? pollMs : null),
      );

  const base = { peer: true, install } as const;
  return [
    {
      ...base,
      key: 'dbos',
      label: `DBOS Transact ${version} (queue poll ${pollMs} ms)`,
      describe: () =>
        `DBOS.registerQueue(workerConcurrency ${concurrency}, minPollingIntervalMs ${pollMs}); workflows started with DBOS.startWorkflow(wf, { queueName }), ${START_IN_FLIGHT} calls in flight; steps by DBOS.runStep; fan-out: the parent enqueues its child workflows on a second queue of the same settings and awaits each getResult (polled every ${pollMs} ms); sleep: DBOS.sleep; ${pool}`,
      functionChain3: chain3('fast'),
      functionFanOut: fanOutQueued('fast'),
      functionSleep: (url, input) => timedSleep(url, input, QUEUES.fast),
    },
    {
      ...base,
      key: 'dbos_default_poll',
      label: `DBOS Transact ${version} (default queue poll)`,
      describe: () => `the same with DBOS's default polling: queue minPollingIntervalMs 1000 (adaptive, never below it), getResult's default 1 s database poll`,
      functionChain3: chain3('default'),
      functionFanOut: fanOutQueued('default'),
    },
    {
      ...base,
      key: 'dbos_steps',
      label: `DBOS Transact ${version} (Promise.all over steps)`,
      describe: () =>
        `fan-out inside one workflow: root step, Promise.all over the children as DBOS.runStep, fan-in step; the workflows on the ${pollMs} ms queue of workerConcurrency ${concurrency}`,
      functionFanOut: (url, { runs, width }) =>
        timedStarts(url, runs, 'DBOS fan-out, Promise.all over steps', (r, i) =>
          r.DBOS.startWorkflow(r.fanParentSteps, { queueName: QUEUES.fast.workflows })(i, width),
        ),
    },
  ];
}
