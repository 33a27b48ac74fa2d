/**
 * The durable-function workloads (issue 37): DBOS Transact's workflows beside
 * runledger's. Each clock runs from the first start call to the last
 * completion committed, so starting the workflows is inside it (unlike the
 * chains and fan_out_in workloads, which seed first).
 *
 * - function_chain3: three-step workflows, `concurrency` running at once; workflows/s.
 * - function_fanout: 1 -> width -> 1, `concurrency` parents at once; steps/s.
 * - function_sleep: N workflows sleeping to one wake time; wake lateness, and
 *   whether a sleeping workflow holds its queue slot (a probe of 3 x
 *   concurrency sleepers on a queue of `concurrency`).
 *
 * runledger's rows are its durable functions (systems/runledger-function.ts,
 * key RUNLEDGER_FUNCTION_KEY) and, beside them, the same work as DAG runs
 * (systems/runledger-dag.ts); a table says when the function system is absent.
 */
import type { BenchConfig } from '../config.js';
import { percentile } from '../stats.js';
import type { BenchSystem, FunctionSleepMeasure } from '../systems/types.js';
import { throughputWorkload } from './throughput.js';
import type { TableResult, Workload } from './types.js';

/** The system key runledger's durable functions are measured under. */
export const RUNLEDGER_FUNCTION_KEY = 'runledger_function';

/** The note a function table carries while no runledger_function system ran. */
export function functionSlotNote(systems: readonly Pick<BenchSystem, 'key'>[]): string | null {
  return systems.some((s) => s.key === RUNLEDGER_FUNCTION_KEY)
    ? null
    : `${RUNLEDGER_FUNCTION_KEY}: not measured, not among this run's systems (BENCH_SYSTEMS; bench/README.md, "Durable-function workloads")`;
}

function withSlotNote(workload: Workload): Workload {
  return {
    key: workload.key,
    async run(context, systems) {
      const result = await workload.run(context, systems);
      const note = functionSlotNote(systems);
      for (const r of [result].flat()) if (note) r.notes.push(note);
      return result;
    },
  };
}

export function functionChain3Workload(config: BenchConfig): Workload {
  const { functionWorkflows: workflows, concurrency } = config;
  return withSlotNote(
    throughputWorkload({
      key: 'function_chain3',
      title: `${workflows.toLocaleString('en-US')} three-step workflows, ${concurrency} at once, started inside the clock`,
      size: `${workflows} workflows x 3 steps`,
      unit: 'workflows',
      units: workflows,
      notes: [
        'clock: first start call -> last completion committed; DBOS: DBOS.startWorkflow on a queue, steps by DBOS.runStep; runledger functions: ctx.step a -> b -> c under createWorker; runledger DAG: runs A -> B -> C',
      ],
      supports: (s) => typeof s.functionChain3 === 'function',
      run: (s, url) => s.functionChain3!(url, { workflows, concurrency }),
    }),
  );
}

export function functionFanOutWorkload(config: BenchConfig): Workload {
  const { functionFanOutRuns: runs, fanOutWidth: width, concurrency } = config;
  return withSlotNote(
    throughputWorkload({
      key: 'function_fanout',
      title: `${runs} x (1 -> ${width} -> 1) function fan-out, ${concurrency} at once, started inside the clock`,
      size: `${runs} runs x ${width + 2} steps = ${runs * (width + 2)} steps`,
      unit: 'steps',
      units: runs * (width + 2),
      notes: [
        `DBOS: a parent workflow per run on a queue of ${concurrency}; its ${width} children either child workflows on a second queue (DBOS's documented pattern; a waiting parent keeps its slot) or Promise.all over DBOS.runStep; runledger functions: a root ctx.step, Promise.all over ${width} ctx.steps, a fan-in ctx.step; runledger DAG: runs root -> ${width} x child -> fan-in`,
      ],
      supports: (s) => typeof s.functionFanOut === 'function',
      run: (s, url) => s.functionFanOut!(url, { runs, width, concurrency }),
    }),
  );
}

/** One table row of the sleep workload. */
export function sleepRow(label: string, sleepers: number, m: FunctionSleepMeasure): (string | number)[] {
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
  const held = m.probe.queued === 0 ? 'not probed' : slotVerdict(m.probe);
  return [
    label,
    sleepers,
    (m.startMs / 1000).toFixed(1),
    (m.leadMs / 1000).toFixed(1),
    m.startedAfterWake,
    ms(percentile(m.latenessMs, 50)),
    ms(percentile(m.latenessMs, 99)),
    ms(m.latenessMs.length === 0 ? Number.NaN : Math.max(...m.latenessMs)),
    held,
  ];
}

/** Whether a sleeping queued workflow kept its slot: only `concurrency` of the queued sleepers got to sleep before the wake time. */
export function slotVerdict(probe: FunctionSleepMeasure['probe']): string {
  const verdict = probe.sleptBeforeWake <= probe.concurrency ? 'yes' : 'no';
  return `${verdict} (${probe.sleptBeforeWake} of ${probe.queued} queued sleepers slept before the wake time, queue of ${probe.concurrency})`;
}

/** 15 ms per sleeper (DBOS started ~80 a second here under load), at least 5 s. */
export function defaultSleepLeadMs(sleepers: number): number {
  return Math.max(5_000, sleepers * 15);
}

export function functionSleepWorkload(config: BenchConfig): Workload {
  const { functionSleepers: sleepers, concurrency } = config;
  const leadMs = config.functionSleepLeadMs ?? defaultSleepLeadMs(sleepers);
  const probeSleepers = 3 * concurrency;
  return {
    key: 'function_sleep',
    async run(context, systems): Promise<TableResult> {
      const rows: (string | number)[][] = [];
      const summaries: { key: string; label: string; peer: boolean; cell: string }[] = [];
      const data: { system: string; measure: FunctionSleepMeasure }[] = [];
      for (const system of systems.filter((s) => typeof s.functionSleep === 'function')) {
        context.log(`function_sleep: ${system.label}, ${sleepers} sleepers`);
        const measure = await context.withDatabase(system, (url) => system.functionSleep!(url, { sleepers, leadMs, probeSleepers, concurrency }));
        const row = sleepRow(system.label, sleepers, measure);
        context.log(`  lateness p50 ${row[5]} ms, p99 ${row[6]} ms; holds a queue slot: ${row[8]}`);
        rows.push(row);
        summaries.push({
          key: system.key,
          label: system.label,
          peer: system.peer,
          cell: `p50 ${row[5]} / p99 ${row[6]} ms late; holds a slot: ${String(row[8]).split(' ')[0]}`,
        });
        data.push({ system: system.key, measure: { ...measure, latenessMs: [] } });
      }
      const notes = [
        `each DBOS workflow computes its sleep as (wake time - now) and calls DBOS.sleep once, each runledger function ctx.sleepUntil(wake time) between two steps; the wake time is ${leadMs} ms after the first start call (BENCH_FUNCTION_SLEEP_LEAD_MS); lateness = resume in the workflow (the step after the sleep) - wake time, over the sleepers that began sleeping before the wake time (the others are counted under "started after wake")`,
        `the sleepers are started without a queue (${concurrency} start calls in flight); the slot probe then puts ${probeSleepers} sleepers on the queue of ${concurrency} (runledger: on the worker of ${concurrency} handler slots) with a wake time 3 s ahead`,
        'runledger wakes a sleeping function by its worker poll (pollIntervalMs, default 1,000 ms); the DAG has no durable sleep (no DAG row)',
      ];
      const slot = functionSlotNote(systems);
      if (slot) notes.push(slot);
      return {
        kind: 'table',
        key: 'function_sleep',
        title: `${sleepers.toLocaleString('en-US')} workflows sleeping to one wake time`,
        size: `${sleepers} sleepers`,
        headers: ['system', 'sleepers', 'start s', 'lead s', 'started after wake', 'lateness p50 ms', 'p99 ms', 'max ms', 'sleeping holds a queue slot'],
        rows,
        notes,
        peerOnly: !systems.some((s) => !s.peer && typeof s.functionSleep === 'function'),
        headlineSummary:
          summaries
            .filter((x) => x.peer)
            .map((x) => `${x.label}: ${x.cell}`)
            .join('; ') || '-',
        headlineBySystem: Object.fromEntries(summaries.filter((x) => !x.peer).map((x) => [x.key, x.cell])),
        data,
      };
    },
  };
}
