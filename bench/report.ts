/** Result shapes, percentiles and the printed tables. */
import type { BenchConfig } from './config.js';
import type { LatencySample } from './systems/types.js';

export interface PhaseResult {
  jobs: number;
  wallMs: number;
  jobsPerSecond: number;
  /** xact_commit delta on the system's database, the harness's own commits subtracted. */
  commits: number;
  commitsPerJob: number;
}

export interface LatencyResult {
  count: number;
  pickupP50Ms: number;
  pickupP95Ms: number;
  completeP50Ms: number | null;
  completeP95Ms: number | null;
}

export interface SystemResult {
  key: string;
  label: string;
  description: string;
  enqueue: PhaseResult;
  drain: PhaseResult & { unfinishedAfter: number };
  latency: LatencyResult;
}

export interface BenchResults {
  date: string;
  node: string;
  cpus: number;
  server: { kind: string; version: string; settings: Record<string, string> };
  config: BenchConfig;
  systems: SystemResult[];
  notes: string[];
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function summarizeLatency(samples: readonly LatencySample[]): LatencyResult {
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

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(headers), rule, ...rows.map(line)].join('\n');
}

const fmt = (value: number | null, digits = 0): string => (value === null || Number.isNaN(value) ? 'n/a' : value.toFixed(digits));
const ratio = (ours: number | null, theirs: number | null): string =>
  ours === null || theirs === null || theirs === 0 || Number.isNaN(ours) || Number.isNaN(theirs) ? 'n/a' : `${(ours / theirs).toFixed(2)}x`;

/** Renders every scenario's table. Systems whose key starts with "runledger" are the references of the ratio columns. */
export function renderReport(results: BenchResults): string {
  const refs = results.systems.filter((s) => s.key.startsWith('runledger'));
  const [ours] = refs;
  if (!ours) return 'no runledger results';
  const { config } = results;
  const out: string[] = [];
  const ratioHeaders = (what: string) => refs.map((r) => `${r.label}/${what}`);
  const ratios = (pick: (s: SystemResult) => number | null) => (s: SystemResult) =>
    refs.map((r) => (s === r ? '(self)' : ratio(pick(r), pick(s))));

  out.push(
    `runledger benchmark, ${results.date}`,
    `server: PostgreSQL ${results.server.version} (${results.server.kind}); settings: ${Object.entries(results.server.settings).map(([k, v]) => `${k}=${v}`).join(', ')}`,
    `node ${results.node}, ${results.cpus} CPUs; N=${config.jobs} jobs, concurrency=${config.concurrency}, enqueue batch=${config.enqueueBatch}, claim batch=${config.claimBatch}, latency jobs=${config.latencyJobs}`,
    '',
    'systems:',
    ...results.systems.map((s) => `  ${s.label}: ${s.description}`),
    '',
  );

  out.push(`(a) enqueue throughput: ${config.jobs} jobs in batches of ${config.enqueueBatch}. Ratio x/peer: >1 means x (runledger) is faster.`);
  out.push(
    table(
      ['system', 'wall ms', 'jobs/s', 'commits', ...ratioHeaders('peer')],
      results.systems.map((s) => [s.label, fmt(s.enqueue.wallMs), fmt(s.enqueue.jobsPerSecond), fmt(s.enqueue.commits), ...ratios((x) => x.enqueue.jobsPerSecond)(s)]),
    ),
    '',
  );

  out.push(`(b) claim + run + complete of the ${config.jobs} enqueued no-op jobs. Ratio x/peer: >1 means x (runledger) is faster.`);
  out.push(
    table(
      ['system', 'wall ms', 'jobs/s', 'left unfinished', ...ratioHeaders('peer')],
      results.systems.map((s) => [s.label, fmt(s.drain.wallMs), fmt(s.drain.jobsPerSecond), String(s.drain.unfinishedAfter), ...ratios((x) => x.drain.jobsPerSecond)(s)]),
    ),
    '',
  );

  out.push(
    `(c) commits per job during (b): pg_stat_database.xact_commit delta, harness commits subtracted. Lower is better; ratio x/peer <1 means x (runledger) commits less. runledger target: <= 1.5.`,
  );
  out.push(
    table(
      ['system', 'commits', 'commits/job', ...ratioHeaders('peer')],
      results.systems.map((s) => [s.label, fmt(s.drain.commits), fmt(s.drain.commitsPerJob, 3), ...ratios((x) => x.drain.commitsPerJob)(s)]),
    ),
  );
  for (const r of refs) out.push(`${r.label} commits/job ${fmt(r.drain.commitsPerJob, 3)} vs target 1.5: ${r.drain.commitsPerJob <= 1.5 ? 'PASS' : 'FAIL'}`);
  out.push('');

  out.push(
    `(d) end-to-end latency, ${config.latencyJobs} jobs enqueued one at a time with a worker running (ms). Lower is better; ratio x/peer <1 means x (runledger) is faster.`,
    '    pickup = enqueue call -> handler start; complete = enqueue call -> completion committed (n/a where the system does not expose it).',
  );
  out.push(
    table(
      ['system', 'pickup p50', 'pickup p95', 'complete p50', 'complete p95', ...ratioHeaders('peer pickup p50')],
      results.systems.map((s) => [
        s.label,
        fmt(s.latency.pickupP50Ms, 1),
        fmt(s.latency.pickupP95Ms, 1),
        fmt(s.latency.completeP50Ms, 1),
        fmt(s.latency.completeP95Ms, 1),
        ...ratios((x) => x.latency.pickupP50Ms)(s),
      ]),
    ),
    '',
  );
  if (results.notes.length > 0) out.push('notes:', ...results.notes.map((n) => `  - ${n}`));
  return out.join('\n');
}
