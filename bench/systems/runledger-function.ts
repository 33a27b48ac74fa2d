/**
 * runledger's durable functions (`defineFunction`) in the durable-function
 * workloads (bench/workloads/functions.ts), the `runledger_function` slot:
 * the same shapes of work as DBOS's workflows, run by createWorker (its
 * defaults, `concurrency`, reaper off), started inside the clock as DBOS's
 * are: one `enqueueWorkflowRun(db, fn.run(input))` call per run with ten in
 * flight, or `enqueueWorkflowRuns` with 100 runs per call. The clock runs from
 * the first start call to the last function's success committed
 * (`job:success` fires after the commit); the worker is started before it.
 *
 * - function_chain3: `ctx.step` a -> b -> c, sequential;
 * - function_fanout: a root step, `Promise.all` over `width` `ctx.step`s, a fan-in step;
 * - function_sleep: each function records its start in a step, `ctx.sleepUntil(wake time)`, then records
 *   the resume in a step; a sleeping function is a PENDING job due at its wake time (no slot, no lease),
 *   found by the worker's poll (pollIntervalMs, default 1 s).
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { FunctionDefinition, WorkflowRunInput } from '../../src/index.js';
import { Countdown, runInFlight } from '../done.js';
import { runledger } from '../runledger-package.js';
import { withCountingPrisma, type CountingPrisma } from './runledger-client.js';
import { runledgerLoopSystem } from './runledger.js';
import { batchEnqueueApi } from './runledger-workflows.js';
import type { BenchSystem, FunctionSleepInput, FunctionSleepMeasure, Timed } from './types.js';

const { createWorker, defineFunction, enqueueWorkflowRun, silentLogger } = runledger;

/** Calls in flight for one-run-per-call starts, as DBOS's start calls. */
const IN_FLIGHT = 10;
/** Runs per enqueueWorkflowRuns call. */
const RUNS_PER_CALL = 100;
/** The slot probe's wake time, after its first start (as DBOS's). */
const PROBE_LEAD_MS = 3_000;

type Starts = 'single' | 'batch';

const chain3 = defineFunction('bench.fn_chain3', z.object({ n: z.number() }), async ({ n }, ctx) => {
  const a = await ctx.step('a', () => n + 1);
  const b = await ctx.step('b', () => a + 1);
  return ctx.step('c', () => b + 1);
});

const fanOut = defineFunction('bench.fn_fanout', z.object({ n: z.number(), width: z.number() }), async ({ n, width }, ctx) => {
  const root = await ctx.step('root', () => n);
  const children = await Promise.all(Array.from({ length: width }, (_, i) => ctx.step(`child_${i}`, () => root + i)));
  return ctx.step('fan_in', () => children.reduce((sum, value) => sum + value, 0));
});

/** Where the sleepers of the current timed run report their start and resume (local clock, ms). */
let sleepSink: { entered: Map<number, number>; woke: Map<number, number> } | undefined;
const sleeper = defineFunction('bench.fn_sleep', z.object({ n: z.number(), wakeAt: z.number() }), async ({ n, wakeAt }, ctx) => {
  await ctx.step('enter', () => void sleepSink?.entered.set(n, Date.now()));
  await ctx.sleepUntil(new Date(wakeAt));
  await ctx.step('woke', () => void sleepSink?.woke.set(n, Date.now()));
  return n;
});

async function start(client: CountingPrisma, starts: Starts, runs: WorkflowRunInput[]): Promise<void> {
  const batch = batchEnqueueApi();
  if (starts === 'batch') {
    if (!batch) throw new Error('this checkout exports no enqueueWorkflowRuns');
    for (let at = 0; at < runs.length; at += RUNS_PER_CALL) await batch(client.prisma, runs.slice(at, at + RUNS_PER_CALL));
    return;
  }
  await runInFlight(runs.length, IN_FLIGHT, async (i) => void (await enqueueWorkflowRun(client.prisma, runs[i]!)));
}

/** Runs `fn` with a started worker for `definition` whose `job:success` events count down `target`. */
async function withFunctionWorker<R, P, O, I>(
  url: string,
  concurrency: number,
  definition: FunctionDefinition<P, O, I>,
  fn: (client: CountingPrisma, successes: (target: number, what: string) => Countdown) => Promise<R>,
): Promise<R> {
  // The worker's attempts (each holds a connection per step statement), claims and completions, the start calls, headroom.
  return withCountingPrisma(url, concurrency + IN_FLIGHT + 4, async (client) => {
    let countdown: Countdown | undefined;
    const worker = createWorker({
      db: client.prisma,
      listenConnectionString: url,
      handlers: [definition],
      concurrency,
      logger: silentLogger,
      reaper: false,
    });
    worker.on('job:success', ({ job }) => {
      if (job.jobType === definition.jobType) countdown?.hit();
    });
    worker.on('job:failure', ({ error }) => countdown?.fail(error));
    worker.on('worker:error', ({ error, operation }) => console.error(`[bench] createWorker ${operation} error:`, error));
    await worker.start();
    try {
      return await fn(client, (target, what) => {
        countdown = new Countdown(target, what);
        return countdown;
      });
    } finally {
      await worker.stop({ drainMs: 5_000 });
    }
  });
}

function timedFunctions<P, O, I>(
  url: string,
  concurrency: number,
  starts: Starts,
  definition: FunctionDefinition<P, O, I>,
  runs: WorkflowRunInput[],
  what: string,
): Promise<Timed> {
  return withFunctionWorker(url, concurrency, definition, async (client, successes) => {
    const countdown = successes(runs.length, what);
    const before = client.statements();
    const started = performance.now();
    await start(client, starts, runs);
    await countdown.done;
    return { wallMs: performance.now() - started, harnessCommits: 1, statements: client.statements() - before };
  });
}

/** Starts `count` sleepers waking at `wakeAt` (local ms) and waits for every one to finish. */
async function runSleepers(
  client: CountingPrisma,
  successes: (target: number, what: string) => Countdown,
  count: number,
  wakeAt: number,
  what: string,
): Promise<{ entered: number[]; woke: number[]; startMs: number }> {
  const sink = { entered: new Map<number, number>(), woke: new Map<number, number>() };
  sleepSink = sink;
  const countdown = successes(count, what);
  const started = performance.now();
  await start(
    client,
    'single',
    Array.from({ length: count }, (_, n) => sleeper.run({ n, wakeAt })),
  );
  const startMs = performance.now() - started;
  await countdown.done;
  sleepSink = undefined;
  const ns = Array.from({ length: count }, (_, n) => n);
  return { entered: ns.map((n) => sink.entered.get(n)!), woke: ns.map((n) => sink.woke.get(n)!), startMs };
}

function timedSleep(url: string, input: FunctionSleepInput): Promise<FunctionSleepMeasure> {
  return withFunctionWorker(url, input.concurrency, sleeper, async (client, successes) => {
    const wakeAt = Date.now() + input.leadMs;
    const main = await runSleepers(client, successes, input.sleepers, wakeAt, 'runledger sleepers');
    let sleptBeforeWake = 0;
    if (input.probeSleepers > 0) {
      // runledger has no separate queue: the probe's sleepers go to the same worker of `concurrency` slots.
      const probeWake = Date.now() + PROBE_LEAD_MS;
      const probe = await runSleepers(client, successes, input.probeSleepers, probeWake, 'runledger probe sleepers');
      sleptBeforeWake = probe.entered.filter((at) => at < probeWake).length;
    }
    return {
      startMs: main.startMs,
      leadMs: input.leadMs,
      startedAfterWake: main.entered.filter((at) => at >= wakeAt).length,
      latenessMs: main.woke.filter((_at, i) => main.entered[i]! < wakeAt).map((at) => at - wakeAt),
      probe: { queued: input.probeSleepers, concurrency: input.concurrency, sleptBeforeWake },
    };
  });
}

export function runledgerFunctionSystem(starts: Starts): BenchSystem {
  const loop = runledgerLoopSystem({ claimBatch: 1 });
  const how = starts === 'single' ? `enqueueWorkflowRun, ${IN_FLIGHT} calls in flight` : `enqueueWorkflowRuns, ${RUNS_PER_CALL} runs per call`;
  return {
    key: starts === 'single' ? 'runledger_function' : 'runledger_function_batch',
    label: `runledger functions (${how})`,
    peer: false,
    describe: () =>
      `durable-function workloads only: defineFunction bodies (ctx.step a -> b -> c; root step, Promise.all over width ctx.steps, fan-in step; ctx.sleepUntil between two steps), started inside the clock with ${how} of fn.run(input); createWorker({ concurrency }) with its defaults (pollIntervalMs 1000), reaper off, started before the clock`,
    install: loop.install,
    functionChain3: (url, { workflows, concurrency }) =>
      timedFunctions(
        url,
        concurrency,
        starts,
        chain3,
        Array.from({ length: workflows }, (_, n) => chain3.run({ n })),
        `runledger function chain3 (${starts})`,
      ),
    functionFanOut: (url, { runs, width, concurrency }) =>
      timedFunctions(
        url,
        concurrency,
        starts,
        fanOut,
        Array.from({ length: runs }, (_, n) => fanOut.run({ n, width })),
        `runledger function fan-out (${starts})`,
      ),
    // The sleepers are started one call per run in either variant (as DBOS's): one row, under the single key.
    ...(starts === 'single' ? { functionSleep: timedSleep } : {}),
  };
}
