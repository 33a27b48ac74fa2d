/**
 * `runledger stats`: the queue metrics (src/metrics/) as a table, or with
 * --json the `QueueMetrics` object itself. Honours --org / --without-org like
 * every read.
 */
import type { Command } from 'commander';
import { getQueueMetrics, type DurationPercentiles, type QueueMetrics } from '../metrics/queue-metrics.js';
import type { CliContext } from './context.js';
import { table } from './format.js';

function ms(value: number | null): string {
  if (value === null) return '-';
  if (value < 1_000) return `${value} ms`;
  if (value < 120_000) return `${(value / 1_000).toFixed(1)} s`;
  if (value < 7_200_000) return `${(value / 60_000).toFixed(1)} min`;
  return `${(value / 3_600_000).toFixed(1)} h`;
}

const percentiles = (p: DurationPercentiles) => `p50 ${ms(p.p50)}, p95 ${ms(p.p95)} (${p.samples} job(s))`;

export function formatMetrics(m: QueueMetrics): string {
  const recent = m.jobs.finishedRecently;
  const runs = m.workflowRuns;
  const lines = [
    `Queue at ${m.asOf.toISOString()}`,
    `  pending ${m.jobs.pending} (runnable ${m.jobs.runnable}), leased ${m.jobs.leased}`,
    `  last hour: succeeded ${recent.succeeded}, dead-lettered ${recent.deadLettered}, canceled ${recent.canceled}`,
    `  dead-lettered in the last 24 h: ${m.deadLetteredLast24h}`,
    `  oldest runnable job due for: ${ms(m.oldestRunnableAgeMs)}`,
    `  continuations in the last hour: ${m.continuationsRecently.slices} slice(s) of ${m.continuationsRecently.jobs} job(s)`,
    `  enqueue intents: ${m.intents.pending} pending (oldest ${ms(m.intents.oldestPendingAgeMs)}, ${m.intents.failing} failing), ${m.intents.conflicts} conflicts`,
    `  wait (due to start), last hour: ${percentiles(m.waitTimeMs)}`,
    `  run (start to finish), last hour: ${percentiles(m.runTimeMs)}`,
    `  workflow runs: running ${runs.running}, waiting for external ${runs.waitingForExternal}; last hour: succeeded ${runs.finishedRecently.succeeded}, completed with errors ${runs.finishedRecently.completedWithErrors}, canceled ${runs.finishedRecently.canceled}`,
  ];
  if (m.concurrency.keys.length > 0) {
    const shown = m.concurrency.keys.length < m.concurrency.keyCount ? ` (the ${m.concurrency.keys.length} with the most waiting)` : '';
    lines.push(
      '',
      `Concurrency keys: ${m.concurrency.waiting} due job(s) waiting over ${m.concurrency.keyCount} key(s)${shown}`,
      table([
        ['KEY', 'LIMIT', 'LEASED', 'WAITING', 'SET BY'],
        ...m.concurrency.keys.map((k) => [k.key, String(k.limit), String(k.leased), String(k.waiting), k.setBy]),
      ]),
    );
  }
  if (m.rateLimits.keys.length > 0) {
    const shown = m.rateLimits.keys.length < m.rateLimits.keyCount ? ` (the ${m.rateLimits.keys.length} with the most waiting)` : '';
    lines.push(
      '',
      `Rate keys: ${m.rateLimits.waiting} due job(s) waiting over ${m.rateLimits.keyCount} key(s)${shown}`,
      table([
        ['KEY', 'LIMIT', 'PER', 'BURST', 'TOKENS', 'WAITING', 'SET BY'],
        // Whole tokens: a start takes one.
        ...m.rateLimits.keys.map((k) => [k.key, String(k.limit), ms(k.periodMs), String(k.burst), String(Math.floor(k.tokens)), String(k.waiting), k.setBy]),
      ]),
    );
  }
  if (m.byType.length > 0) {
    lines.push(
      '',
      table([
        ['JOB TYPE', 'KIND', 'PENDING', 'RUNNABLE', 'LEASED', 'SUCCEEDED 1H', 'DEAD 1H', 'CANCELED 1H'],
        ...m.byType.map((t) => [
          t.jobType,
          t.kind,
          String(t.pending),
          String(t.runnable),
          String(t.leased),
          String(t.finishedRecently.succeeded),
          String(t.finishedRecently.deadLettered),
          String(t.finishedRecently.canceled),
        ]),
      ]),
    );
  }
  return lines.join('\n');
}

export function registerStatsCommand(program: Command, context: CliContext): void {
  program
    .command('stats')
    .description('queue metrics: jobs by status and type, oldest runnable job, wait and run time, dead letters, workflow runs')
    .action(async () => {
      const metrics = await getQueueMetrics(context.db(), { scope: context.scope });
      context.print(formatMetrics(metrics), metrics);
    });
}
