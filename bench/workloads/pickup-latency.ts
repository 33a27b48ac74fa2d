/**
 * Enqueue -> handler start latency: with a worker running at the configured
 * concurrency, jobs enqueued one at a time, each after the previous one
 * finished (so every job finds an idle worker). pickup = enqueue call start
 * -> handler start; complete = enqueue call start -> completion committed,
 * where the system lets the caller observe that moment.
 */
import type { BenchConfig } from '../config.js';
import { percentile, spread } from '../stats.js';
import type { LatencySample } from '../systems/types.js';
import type { LatencyRep, LatencyResult, LatencyRow, Workload } from './types.js';

function summarize(samples: readonly LatencySample[]): LatencyRep {
  const pickups = samples.map((s) => s.pickupMs);
  const completes = samples.map((s) => s.completeMs).filter((v): v is number => v !== null);
  const complete = completes.length === samples.length && samples.length > 0;
  return {
    count: samples.length,
    pickupP50Ms: percentile(pickups, 50),
    pickupP95Ms: percentile(pickups, 95),
    completeP50Ms: complete ? percentile(completes, 50) : null,
    completeP95Ms: complete ? percentile(completes, 95) : null,
  };
}

const spreadOrNull = (values: (number | null)[]) => (values.every((v): v is number => v !== null) && values.length > 0 ? spread(values) : null);

export function pickupLatencyWorkload(config: BenchConfig): Workload {
  const { latencyJobs: jobs, concurrency } = config;
  return {
    key: 'pickup_latency',
    async run(context, systems): Promise<LatencyResult> {
      const rows: LatencyRow[] = [];
      for (const system of systems.filter((s) => typeof s.latency === 'function')) {
        const reps: LatencyRep[] = [];
        for (let rep = 0; rep < config.repeats; rep += 1) {
          context.log(`pickup_latency: ${system.label}, run ${rep + 1}/${config.repeats}`);
          const samples = await context.withDatabase(system, (url) => system.latency!(url, jobs, concurrency));
          const summary = summarize(samples);
          context.log(`  p50 ${summary.pickupP50Ms.toFixed(2)} ms, p95 ${summary.pickupP95Ms.toFixed(2)} ms`);
          reps.push(summary);
        }
        rows.push({
          system: system.key,
          label: system.label,
          peer: system.peer,
          reps,
          pickupP50: spread(reps.map((r) => r.pickupP50Ms)),
          pickupP95: spread(reps.map((r) => r.pickupP95Ms)),
          completeP50: spreadOrNull(reps.map((r) => r.completeP50Ms)),
          completeP95: spreadOrNull(reps.map((r) => r.completeP95Ms)),
          ratioP50ToBestPeer: null,
          ratioP95ToBestPeer: null,
        });
      }
      const peers = rows.filter((r) => r.peer);
      const best = peers.reduce<LatencyRow | null>((acc, r) => (acc === null || r.pickupP50.median < acc.pickupP50.median ? r : acc), null);
      for (const row of rows) {
        if (row.peer || !best) continue;
        row.ratioP50ToBestPeer = best.pickupP50.median / row.pickupP50.median;
        row.ratioP95ToBestPeer = best.pickupP95.median / row.pickupP95.median;
      }
      return {
        kind: 'latency',
        key: 'pickup_latency',
        title: `enqueue -> handler start latency, concurrency ${concurrency}`,
        size: `${jobs} sequential jobs per run`,
        notes: [
          'ratio = best peer / runledger, so > 1 means runledger starts handlers sooner; the best peer is the one with the lowest median p50',
          'complete latency is n/a where the system completes after the handler without exposing the commit (pg-boss work(), graphile-worker)',
        ],
        bestPeer: best?.system ?? null,
        rows,
      };
    },
  };
}
