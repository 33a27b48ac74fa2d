/**
 * The durable-function workloads' pure parts (bench/workloads/functions.ts):
 * the sleep table's row and slot verdict, the note that marks the
 * runledger_function slot empty, the headline of a peer-only table, and the
 * sizes read from the environment. No timings are asserted.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readConfig } from '../../bench/config.js';
import { headlineTable } from '../../bench/report.js';
import type { FunctionSleepMeasure } from '../../bench/systems/types.js';
import { RUNLEDGER_FUNCTION_KEY, defaultSleepLeadMs, functionSlotNote, sleepRow, slotVerdict } from '../../bench/workloads/functions.js';
import type { BenchResults } from '../../bench/workloads/types.js';

const measure = (over: Partial<FunctionSleepMeasure> = {}): FunctionSleepMeasure => ({
  startMs: 12_345,
  leadMs: 40_000,
  startedAfterWake: 0,
  latenessMs: Array.from({ length: 100 }, (_, i) => i + 1),
  probe: { queued: 30, concurrency: 10, sleptBeforeWake: 10 },
  ...over,
});

describe('function_sleep table', () => {
  it('reports p50, p99 and max lateness, the start time and the lead in seconds', () => {
    expect(sleepRow('DBOS', 100, measure())).toEqual([
      'DBOS',
      100,
      '12.3',
      '40.0',
      0,
      '50.0',
      '99.0',
      '100.0',
      'yes (10 of 30 queued sleepers slept before the wake time, queue of 10)',
    ]);
  });

  it('says a sleeping workflow frees its slot when more queued sleepers than the concurrency slept before the wake time', () => {
    expect(slotVerdict({ queued: 30, concurrency: 10, sleptBeforeWake: 30 })).toMatch(/^no \(30 of 30/);
    expect(slotVerdict({ queued: 30, concurrency: 10, sleptBeforeWake: 11 })).toMatch(/^no /);
    expect(slotVerdict({ queued: 30, concurrency: 10, sleptBeforeWake: 10 })).toMatch(/^yes /);
  });

  it('shows n/a lateness when every sleeper began after the wake time, instead of a number', () => {
    const row = sleepRow('DBOS', 5, measure({ startedAfterWake: 5, latenessMs: [] }));
    expect(row.slice(4, 8)).toEqual([5, 'n/a', 'n/a', 'n/a']);
  });

  it('gives the sleepers 15 ms each to start by default, at least 5 s', () => {
    expect(defaultSleepLeadMs(10_000)).toBe(150_000);
    expect(defaultSleepLeadMs(100)).toBe(5_000);
  });

  it('says when the probe did not run', () => {
    expect(sleepRow('DBOS', 5, measure({ probe: { queued: 0, concurrency: 10, sleptBeforeWake: 0 } })).at(-1)).toBe('not probed');
  });
});

describe('runledger_function slot', () => {
  it('is named in each function table while no system fills it, and disappears once one runs', () => {
    expect(functionSlotNote([{ key: 'dbos' }, { key: 'runledger_dag' }])).toMatch(/^runledger_function: not measured/);
    expect(functionSlotNote([{ key: 'dbos' }, { key: RUNLEDGER_FUNCTION_KEY }])).toBeNull();
  });
});

describe('headline of a peer-only table', () => {
  it('puts the peer summary in the best-peer column and a dash under every runledger variant', () => {
    const results = {
      systems: [
        { key: 'runledger_dag', label: 'runledger DAG', peer: false, description: '' },
        { key: 'dbos', label: 'DBOS', peer: true, description: '' },
      ],
      workloads: [
        {
          kind: 'table',
          key: 'function_sleep',
          title: 'sleepers',
          size: '5',
          notes: ['a note that must not become a cell'],
          headers: [],
          rows: [],
          data: null,
          peerOnly: true,
          headlineSummary: 'DBOS: p50 1.0 / p99 2.0 ms late',
        },
      ],
    } as unknown as BenchResults;
    expect(headlineTable(results).split('\n').at(-1)).toBe('| sleepers | - | DBOS: p50 1.0 / p99 2.0 ms late |');
  });

  it('puts each runledger system its own cell once one ran it, a dash under the others', () => {
    const results = {
      systems: [
        { key: RUNLEDGER_FUNCTION_KEY, label: 'runledger functions', peer: false, description: '' },
        { key: 'runledger_dag', label: 'runledger DAG', peer: false, description: '' },
        { key: 'dbos', label: 'DBOS', peer: true, description: '' },
      ],
      workloads: [
        {
          kind: 'table',
          key: 'function_sleep',
          title: 'sleepers',
          size: '5',
          notes: ['a note that must not become a cell'],
          headers: [],
          rows: [],
          data: null,
          peerOnly: false,
          headlineSummary: 'DBOS: p50 1.0 / p99 2.0 ms late; holds a slot: yes',
          headlineBySystem: { [RUNLEDGER_FUNCTION_KEY]: 'p50 3.0 / p99 4.0 ms late; holds a slot: no' },
        },
      ],
    } as unknown as BenchResults;
    expect(headlineTable(results).split('\n').at(-1)).toBe(
      '| sleepers | p50 3.0 / p99 4.0 ms late; holds a slot: no | - | DBOS: p50 1.0 / p99 2.0 ms late; holds a slot: yes |',
    );
  });
});

describe('function workload sizes', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('default to the issue sizes, smaller in BENCH_QUICK, and take overrides', () => {
    vi.stubEnv('BENCH_QUICK', '');
    const full = readConfig();
    expect([full.functionWorkflows, full.functionFanOutRuns, full.functionSleepers, full.functionSleepLeadMs, full.functionQueuePollMs]).toEqual([
      1_000,
      100,
      10_000,
      null,
      10,
    ]);
    vi.stubEnv('BENCH_QUICK', '1');
    vi.stubEnv('BENCH_FUNCTION_SLEEP_LEAD_MS', '2500');
    const quick = readConfig();
    expect([quick.functionWorkflows, quick.functionFanOutRuns, quick.functionSleepers, quick.functionSleepLeadMs]).toEqual([200, 20, 500, 2_500]);
  });

  it('refuse a size that is not a positive integer, naming the variable', () => {
    vi.stubEnv('BENCH_FUNCTION_SLEEPERS', '0');
    expect(() => readConfig()).toThrow(/BENCH_FUNCTION_SLEEPERS/);
  });
});
