/**
 * Workflow-shaped workloads: chains A -> B -> C and fan-out/fan-in
 * root -> width x child -> fan-in, at the configured concurrency. runledger
 * runs real workflows (seeded as workflow runs; each completion releases the
 * next steps, exactly once). The peers have no workflows: their handlers
 * enqueue the next step, and a counter row decides the fan-in, which is what
 * their users write by hand. The timed part starts with the workers and ends
 * when the last step's completion is committed; seeding (the runs, or the
 * peers' first jobs) is outside it.
 */
import type { BenchConfig } from '../config.js';
import { throughputWorkload } from './throughput.js';
import type { Workload } from './types.js';

export function chainsWorkload(config: BenchConfig): Workload {
  const { chains, concurrency } = config;
  return throughputWorkload({
    key: 'chains',
    title: `${chains.toLocaleString('en-US')} chains A -> B -> C, concurrency ${concurrency}`,
    size: `${chains} chains x 3 steps = ${chains * 3} steps`,
    unit: 'steps',
    units: chains * 3,
    notes: ['runledger: workflow runs (seeded untimed); peers: the first job of each chain seeded, each handler enqueues the next step'],
    supports: (s) => typeof s.chains === 'function' && typeof s.seedChains === 'function',
    seed: (s, url) => s.seedChains!(url, chains),
    run: (s, url) => s.chains!(url, { chains, concurrency }),
  });
}

export function fanOutWorkload(config: BenchConfig): Workload {
  const { fanOutRuns: runs, fanOutWidth: width, concurrency } = config;
  return throughputWorkload({
    key: 'fan_out_in',
    title: `${runs} x (1 -> ${width} -> 1) fan-out/fan-in, concurrency ${concurrency}`,
    size: `${runs} runs x ${width + 2} steps = ${runs * (width + 2)} steps`,
    unit: 'steps',
    units: runs * (width + 2),
    notes: [
      'runledger: workflow runs; peers: the root enqueues the children, each child decrements a counter row in a transaction and the last one enqueues the fan-in (no exactly-once release: a retried child decrements again)',
    ],
    supports: (s) => typeof s.fanOut === 'function' && typeof s.seedFanOut === 'function',
    seed: (s, url) => s.seedFanOut!(url, runs, width),
    run: (s, url) => s.fanOut!(url, { runs, width, concurrency }),
  });
}
