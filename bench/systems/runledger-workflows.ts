/**
 * The workflow runs the runledger variants seed: chains A -> B -> C and
 * fan-out/fan-in root -> width x child -> fan-in, built with the public
 * `workflow()` builder. Seeding uses `enqueueWorkflowRuns(db, runs)` (one
 * batch call) when src exports it, else `enqueueWorkflowRun` per run.
 */
import type { Db, WorkflowRunInput } from '../../src/index.js';
import { runledger } from '../runledger-package.js';
import { CHAIN_STEPS, FAN_CHILD, FAN_IN, FAN_ROOT } from './types.js';

/** Runs per `enqueueWorkflowRuns` call when the batch API exists. */
const RUNS_PER_BATCH = 100;
const { enqueueWorkflowRun, workflow } = runledger;

type EnqueueWorkflowRuns = (db: Db, runs: WorkflowRunInput[]) => Promise<unknown>;

/** The batch API, when this checkout of src has it (it is being added while this bench is written). */
export function batchEnqueueApi(): EnqueueWorkflowRuns | undefined {
  const candidate = (runledger as Record<string, unknown>).enqueueWorkflowRuns;
  return typeof candidate === 'function' ? (candidate as EnqueueWorkflowRuns) : undefined;
}

export function chainRun(index: number): WorkflowRunInput {
  const [a, b, c] = CHAIN_STEPS;
  return workflow('bench.chain', { index })
    .job('a', a, { index })
    .job('b', b, { index })
    .afterSuccess('b', ['a'])
    .job('c', c, { index })
    .afterSuccess('c', ['b'])
    .build();
}

export function fanOutRun(index: number, width: number): WorkflowRunInput {
  const builder = workflow('bench.fan', { index }).job('root', FAN_ROOT, { index });
  const children: string[] = [];
  for (let i = 0; i < width; i += 1) {
    const key = `child_${i}`;
    children.push(key);
    builder.job(key, FAN_CHILD, { index, i }).afterSuccess(key, ['root']);
  }
  return builder.job('fan_in', FAN_IN, { index }).afterSuccess('fan_in', children).build();
}

/** A run whose one root job has `width` dependents (the wide fan-out workload). */
export function wideRun(width: number): WorkflowRunInput {
  const builder = workflow('bench.wide').job('root', 'wide_root', {});
  for (let i = 0; i < width; i += 1) builder.job(`leaf_${i}`, 'wide_leaf', { i }).afterSuccess(`leaf_${i}`, ['root']);
  return builder.build();
}

export async function enqueueRuns(db: Db, runs: WorkflowRunInput[]): Promise<'batch' | 'loop'> {
  const batch = batchEnqueueApi();
  if (batch) {
    for (let start = 0; start < runs.length; start += RUNS_PER_BATCH) await batch(db, runs.slice(start, start + RUNS_PER_BATCH));
    return 'batch';
  }
  for (const run of runs) await enqueueWorkflowRun(db, run);
  return 'loop';
}
