/**
 * runledger's rows in the durable-function workloads until its
 * durable-function API exists: the same work as DAG workflow runs under
 * createWorker (its defaults, `concurrency`, reaper off), started inside the
 * clock as DBOS's workflows are. Two ways to start them: one
 * `enqueueWorkflowRun` call per run with ten in flight, or
 * `enqueueWorkflowRuns` with 100 runs per call. The clock runs from the first
 * enqueue call to the last fan-in or last step's success committed
 * (`job:success` fires after the commit); the worker is started before it.
 *
 * The durable-function API's own rows belong to a system with key
 * `runledger_function` (bench/README.md, "Durable-function workloads").
 */
import { performance } from 'node:perf_hooks';
import type { WorkflowRunInput } from '../../src/index.js';
import { runledger } from '../runledger-package.js';
import { Countdown, runInFlight } from '../done.js';
import { withCountingPrisma } from './runledger-client.js';
import { runledgerLoopSystem } from './runledger.js';
import { newWorker } from './runledger-worker.js';
import { batchEnqueueApi, chainRun, fanOutRun } from './runledger-workflows.js';
import { CHAIN_STEPS, FAN_CHILD, FAN_IN, FAN_ROOT, type BenchSystem, type Timed } from './types.js';

const { enqueueWorkflowRun } = runledger;

/** Calls in flight for one-run-per-call starts, as DBOS's start calls. */
const IN_FLIGHT = 10;
/** Runs per enqueueWorkflowRuns call. */
const RUNS_PER_CALL = 100;

type Starts = 'single' | 'batch';

async function timedDag(
  url: string,
  concurrency: number,
  starts: Starts,
  jobTypes: readonly string[],
  finalType: string,
  runs: WorkflowRunInput[],
  what: string,
): Promise<Timed> {
  const batch = batchEnqueueApi();
  if (starts === 'batch' && !batch) throw new Error('this checkout exports no enqueueWorkflowRuns');
  // The worker's claims and completions, the enqueue calls in flight, headroom.
  return withCountingPrisma(url, concurrency + IN_FLIGHT + 4, async (client) => {
    const countdown = new Countdown(runs.length, what);
    const worker = newWorker(client, url, concurrency, {}, jobTypes);
    worker.on('job:success', ({ job }) => {
      if (job.jobType === finalType) countdown.hit();
    });
    worker.on('job:failure', ({ error }) => countdown.fail(error));
    worker.on('worker:error', ({ error, operation }) => console.error(`[bench] createWorker ${operation} error:`, error));
    await worker.start();
    try {
      const before = client.statements();
      const started = performance.now();
      if (starts === 'batch' && batch) {
        for (let at = 0; at < runs.length; at += RUNS_PER_CALL) await batch(client.prisma, runs.slice(at, at + RUNS_PER_CALL));
      } else {
        await runInFlight(runs.length, IN_FLIGHT, async (i) => void (await enqueueWorkflowRun(client.prisma, runs[i]!)));
      }
      await countdown.done;
      return { wallMs: performance.now() - started, harnessCommits: 1, statements: client.statements() - before };
    } finally {
      await worker.stop({ drainMs: 5_000 });
    }
  });
}

export function runledgerDagSystem(starts: Starts): BenchSystem {
  const loop = runledgerLoopSystem({ claimBatch: 1 });
  const how = starts === 'single' ? `enqueueWorkflowRun, ${IN_FLIGHT} calls in flight` : `enqueueWorkflowRuns, ${RUNS_PER_CALL} runs per call`;
  return {
    key: starts === 'single' ? 'runledger_dag' : 'runledger_dag_batch',
    label: `runledger DAG runs (${how})`,
    peer: false,
    describe: () =>
      `durable-function workloads only: the same work as workflow runs (A -> B -> C; root -> width x child -> fan-in), started inside the clock with ${how}; createWorker({ concurrency }) with its defaults, reaper off, started before the clock`,
    install: loop.install,
    functionChain3: (url, { workflows, concurrency }) =>
      timedDag(
        url,
        concurrency,
        starts,
        CHAIN_STEPS,
        CHAIN_STEPS[2],
        Array.from({ length: workflows }, (_, i) => chainRun(i)),
        `runledger DAG chain3 (${starts})`,
      ),
    functionFanOut: (url, { runs, width, concurrency }) =>
      timedDag(
        url,
        concurrency,
        starts,
        [FAN_ROOT, FAN_CHILD, FAN_IN],
        FAN_IN,
        Array.from({ length: runs }, (_, i) => fanOutRun(i, width)),
        `runledger DAG fan-out (${starts})`,
      ),
  };
}
