/** Markdown for a run's results: the headline table and one table per workload. */
import type { Spread } from './stats.js';
import type { BenchResults, LatencyResult, TableResult, ThroughputResult, WorkloadResult } from './workloads/types.js';
import { singular } from './workloads/throughput.js';

const num = (value: number | null | undefined, digits = 0): string =>
  value === null || value === undefined || Number.isNaN(value)
    ? 'n/a'
    : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (value: number | null): string => (value === null || Number.isNaN(value) ? '-' : `${value.toFixed(2)}x`);
const range = (s: Spread | null, digits = 0): string => (s === null ? 'n/a' : `${num(s.min, digits)}-${num(s.max, digits)}`);

function table(headers: string[], rows: string[][]): string {
  const align = headers.map((_, i) => (i === 0 ? '---' : '---:'));
  return [headers, align, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

function throughputTable(w: ThroughputResult): string {
  const unit = singular(w.unit);
  return table(
    [
      'system',
      `${w.unit}/s (median)`,
      'min-max',
      `commits/${unit}`,
      `statements/${unit}`,
      `rows written/${unit}`,
      `HOT updates/${unit}`,
      `index entries/${unit}`,
      `Node CPU us/${unit}`,
      'ratio to best peer',
    ],
    w.rows.map((r) => [
      r.system === w.bestPeer ? `${r.label} (best peer)` : r.label,
      num(r.rate.median),
      range(r.rate),
      num(r.commitsPerUnit.median, 3),
      r.statementsPerUnit ? num(r.statementsPerUnit.median, 3) : 'n/a',
      num(r.rowsWrittenPerUnit?.median, 2),
      num(r.hotUpdatesPerUnit?.median, 2),
      r.indexEntriesPerUnit ? num(r.indexEntriesPerUnit.median, 2) : 'n/a',
      num(r.nodeCpuUsPerUnit?.median, 1),
      ratio(r.ratioToBestPeer),
    ]),
  );
}

function latencyTable(w: LatencyResult): string {
  return table(
    ['system', 'pickup p50 ms', 'min-max', 'pickup p95 ms', 'min-max', 'complete p50 ms', 'ratio p50', 'ratio p95'],
    w.rows.map((r) => [
      r.system === w.bestPeer ? `${r.label} (best peer)` : r.label,
      num(r.pickupP50.median, 2),
      range(r.pickupP50, 2),
      num(r.pickupP95.median, 2),
      range(r.pickupP95, 2),
      r.completeP50 ? num(r.completeP50.median, 2) : 'n/a',
      ratio(r.ratioP50ToBestPeer),
      ratio(r.ratioP95ToBestPeer),
    ]),
  );
}

function genericTable(w: TableResult): string {
  return table(
    w.headers,
    w.rows.map((row) => row.map((cell) => (cell === null ? 'n/a' : String(cell)))),
  );
}

function workloadSection(w: WorkloadResult): string {
  const body = w.kind === 'throughput' ? throughputTable(w) : w.kind === 'latency' ? latencyTable(w) : genericTable(w);
  const notes = w.notes.map((n) => `- ${n}`);
  return [`### ${w.title}`, '', `Size: ${w.size}.`, '', body, ...(notes.length > 0 ? ['', ...notes] : [])].join('\n');
}

/**
 * One line per workload: each runledger variant's median and its ratio to the
 * best peer variant. Ratios > 1 are better for runledger (faster, or lower
 * latency); the runledger-only workloads summarise their own target.
 */
export function headlineTable(results: BenchResults): string {
  const ours = results.systems.filter((s) => !s.peer);
  const headers = ['workload', ...ours.map((s) => s.label), 'best peer'];
  const rows: string[][] = [];
  for (const w of results.workloads) {
    if (w.kind === 'throughput') {
      const best = w.rows.find((r) => r.system === w.bestPeer);
      rows.push([
        w.title,
        ...ours.map((s) => {
          const row = w.rows.find((r) => r.system === s.key);
          return row ? `${num(row.rate.median)} ${w.unit}/s (${ratio(row.ratioToBestPeer)})` : '-';
        }),
        best ? `${best.label}: ${num(best.rate.median)} ${w.unit}/s` : '-',
      ]);
    } else if (w.kind === 'latency') {
      const best = w.rows.find((r) => r.system === w.bestPeer);
      rows.push([
        `${w.title}, p50 / p95`,
        ...ours.map((s) => {
          const row = w.rows.find((r) => r.system === s.key);
          return row
            ? `${num(row.pickupP50.median, 2)} / ${num(row.pickupP95.median, 2)} ms (${ratio(row.ratioP50ToBestPeer)} / ${ratio(row.ratioP95ToBestPeer)})`
            : '-';
        }),
        best ? `${best.label}: ${num(best.pickupP50.median, 2)} / ${num(best.pickupP95.median, 2)} ms` : '-',
      ]);
    } else if (w.peerOnly) {
      rows.push([w.title, ...ours.map(() => '-'), w.headlineSummary ?? '-']);
    } else if (w.headlineBySystem) {
      rows.push([w.title, ...ours.map((s) => w.headlineBySystem?.[s.key] ?? '-'), w.headlineSummary ?? '-']);
    } else {
      rows.push([w.title, ...ours.map((_s, i) => (i === 0 ? (w.notes.at(-1) ?? '') : '')), 'runledger only']);
    }
  }
  return table(headers, rows);
}

/**
 * Rows written per unit of work, one line per throughput workload, one column
 * per system (every variant, peers included): the medians of the throughput
 * tables' "rows written" column side by side and, in brackets where the
 * workload seeds anything, the same with the seeding's rows.
 */
export function rowWritesTable(results: BenchResults): string {
  const throughput = results.workloads.filter((w): w is ThroughputResult => w.kind === 'throughput');
  const headers = ['workload', 'per', ...results.systems.map((s) => s.label)];
  const rows = throughput.map((w) => [
    w.title,
    singular(w.unit),
    ...results.systems.map((s) => {
      const row = w.rows.find((r) => r.system === s.key);
      if (!row) return '-';
      const timed = num(row.rowsWrittenPerUnit?.median, 2);
      const withSeed = row.rowsWrittenWithSeedPerUnit?.median;
      return withSeed === undefined || withSeed === row.rowsWrittenPerUnit?.median ? timed : `${timed} (${num(withSeed, 2)})`;
    }),
  ]);
  return table(headers, rows);
}

/**
 * The bench process's Node CPU per unit of work, one line per throughput
 * workload, one column per system: the medians of the throughput tables'
 * "Node CPU" column side by side (the client's own cost; the server's is apart).
 */
export function nodeCpuTable(results: BenchResults): string {
  const throughput = results.workloads.filter((w): w is ThroughputResult => w.kind === 'throughput');
  const headers = ['workload', 'per', ...results.systems.map((s) => s.label)];
  const rows = throughput.map((w) => [
    w.title,
    singular(w.unit),
    ...results.systems.map((s) => {
      const row = w.rows.find((r) => r.system === s.key);
      return row ? num(row.nodeCpuUsPerUnit?.median, 1) : '-';
    }),
  ]);
  return table(headers, rows);
}

export function environmentLine(results: BenchResults): string {
  const settings = Object.entries(results.server.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  return `${results.date}, ${results.quick ? 'quick sizes (BENCH_QUICK=1)' : 'full sizes'}, ${results.config.repeats} run(s) per figure (median; min-max in the tables); PostgreSQL ${results.server.version} (${results.server.kind}; ${settings}); Node ${results.node}, ${results.cpus} CPUs${results.runledgerFrom ? `; runledger from ${results.runledgerFrom === 'dist' ? 'the built package (dist/)' : 'its TypeScript sources (tsx)'}` : ''}`;
}

export function renderMarkdown(results: BenchResults): string {
  return [
    `# runledger benchmark, ${results.date}`,
    '',
    environmentLine(results),
    '',
    "Ratios compare each runledger variant with the best peer variant of the same workload: > 1 means runledger is faster (throughput) or starts handlers sooner (latency). Commits are the `pg_stat_database.xact_commit` delta of the system's database (harness commits subtracted); statements are counted in runledger's client pool (BEGIN/COMMIT included); rows written are the `pg_stat_user_tables` delta of n_tup_ins + n_tup_upd + n_tup_del over the system's tables (HOT updates: n_tup_hot_upd, included in the updates); index entries are the btree entries the WAL records for the indexes of the system's database (pg_walinspect, bench/wal.ts); Node CPU is the bench process's user + system CPU over the timed part (`process.cpuUsage`) per unit: the client side of the system measured, since runledger and both peers run inside it (the database server's CPU is not in it).",
    '',
    '## Headline',
    '',
    headlineTable(results),
    '',
    '## Rows written per unit of work',
    '',
    "Tuples inserted + updated + deleted on the system's tables per job enqueued or drained, or per workflow step, in the timed part (medians; the peers' fan-out includes their fan-in counter row). In brackets: with the untimed seeding's rows (the drained jobs' enqueue; runledger's workflow runs, steps, dependencies and first jobs; the peers' first job of each chain or run), which is what one counter delta over the whole workload says.",
    '',
    rowWritesTable(results),
    '',
    '## Node CPU per unit of work',
    '',
    "Microseconds of user + system CPU of the bench process (`process.cpuUsage` around the timed part) per job enqueued or drained, or per workflow step (medians): the client's work, each system's workers, enqueuers and driver, since every system runs in-process; the database server is another process and is not in it. The bench's own harness (counting, countdowns) is in every system's figure alike.",
    '',
    nodeCpuTable(results),
    '',
    '## Systems',
    '',
    ...results.systems.map((s) => `- **${s.label}**: ${s.description}`),
    '',
    '## Workloads',
    '',
    results.workloads.map(workloadSection).join('\n\n'),
    '',
    `Total bench time: ${results.wallSeconds.toFixed(0)} s.`,
    '',
  ].join('\n');
}
