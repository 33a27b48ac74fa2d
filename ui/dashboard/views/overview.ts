import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { label, millis, when } from '../format.js';
import { throughputChart, type Throughput } from './throughput-chart.js';
import { attentionSection, type Attention } from './attention.js';

interface Overview {
  jobs: { jobType: string; status: string; count: number }[];
  runs: { workflowType: string; status: string; count: number }[];
  /** Finished jobs and runs are counted over this window (live ones all); it starts at finishedSince. */
  finishedWindowMs: number;
  finishedSince: string;
  oldestReadySeconds: number | null;
  lastHour: { succeeded: number; deadLettered: number; canceled: number };
  generatedAt: string;
  /** getQueueMetrics for the same scope. */
  metrics: {
    asOf: string;
    jobs: {
      pending: number;
      runnable: number;
      leased: number;
      /** PENDING jobs waiting for their debounce window to close (getQueueMetrics). */
      debounceWaiting?: number;
      finishedRecently: { succeeded: number; deadLettered: number; canceled: number };
    };
    oldestRunnableAgeMs: number | null;
    waitTimeMs: { samples: number; p50: number | null; p95: number | null };
    runTimeMs: { samples: number; p50: number | null; p95: number | null };
    deadLetteredLast24h: number;
    intents: { pending: number; oldestPendingAgeMs: number | null };
  };
  /** The last hour per minute (src/dashboard/throughput.ts). */
  throughput: Throughput;
  /** What needs a person now (src/dashboard/attention.ts). */
  attention: Attention;
}

function card(testId: string, value: string | number, caption: string): HTMLElement {
  return h('div', { class: 'card' }, h('span', { class: 'big', 'data-testid': testId }, value), h('span', {}, caption));
}

const JOB_STATUSES = ['PENDING', 'LEASED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'];

const RUN_STATUSES = ['RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'];
/** Not a status: the runs (RUNNING or WAITING_FOR_EXTERNAL) with a step waiting for an external completion. */
const WAITING_ON_PERSON = 'WAITING_ON_PERSON';
/** Counted over the overview's finished window only (the API's finishedWindowMs), not all history. */
const FINISHED_STATUSES = new Set(['SUCCEEDED', 'DEAD_LETTERED', 'CANCELED', 'COMPLETED_WITH_ERRORS']);

/** "24 h", "90 min": the finished window as the column headers show it. */
function windowLabel(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 60_000)} min`;
}

/**
 * The counts are by stored status; a LEASED job is one a worker holds, nearly always running. Finished columns
 * name their window.
 */
function columnLabel(status: string, window: string): string {
  if (status === WAITING_ON_PERSON) return 'of which waiting on a person';
  const base = status === 'LEASED' ? 'leased / running' : label(status);
  return FINISHED_STATUSES.has(status) ? `${base} (last ${window})` : base;
}

function matrix(
  caption: string,
  rows: { type: string; status: string; count: number }[],
  statuses: string[],
  window: string,
  link: (type: string, status?: string) => string,
): HTMLElement {
  const types = [...new Set(rows.map((row) => row.type))].sort();
  const count = (type: string | undefined, status: string) =>
    rows.filter((row) => (type === undefined || row.type === type) && row.status === status).reduce((sum, row) => sum + row.count, 0);
  const cell = (type: string | undefined, status: string) => {
    const n = count(type, status);
    // A sub-state column is not a stored status: its cells are marked apart, so a count by status never reads them.
    const column = status === WAITING_ON_PERSON ? { 'data-substate': status } : { 'data-status': status };
    return h('td', { class: 'num', ...column, 'data-type': type ?? '*' }, n === 0 ? '0' : h('a', { href: link(type ?? '', status) }, n));
  };
  return h(
    'table',
    { class: 'grid' },
    h('caption', {}, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'type'),
        statuses.map((status) => h('th', { scope: 'col', class: 'num' }, columnLabel(status, window))),
      ),
    ),
    h(
      'tbody',
      {},
      types.map((type) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, h('a', { href: link(type) }, type)),
          statuses.map((status) => cell(type, status)),
        ),
      ),
      h(
        'tr',
        { class: 'total' },
        h('th', { scope: 'row' }, 'all types'),
        statuses.map((status) => cell(undefined, status)),
      ),
    ),
  );
}

export function overviewView(context: Context): View {
  const attention = h('div');
  const body = h('div');
  const chart = throughputChart();
  const tables = h('div');
  const root = h('section', { 'aria-labelledby': 'overview-title' }, h('h1', { id: 'overview-title' }, 'Overview'), attention, body, chart.root, tables);
  return {
    root,
    async refresh() {
      const data = await get<Overview>('overview');
      const window = windowLabel(data.finishedWindowMs);
      const m = data.metrics;
      const finished = m.jobs.finishedRecently.succeeded + m.jobs.finishedRecently.deadLettered + m.jobs.finishedRecently.canceled;
      const pending = data.jobs.filter((row) => row.status === 'PENDING').reduce((sum, row) => sum + row.count, 0);
      replace(attention, attentionSection(data.attention, context.session.scope.kind === 'admin'));
      replace(
        body,
        h(
          'div',
          { class: 'cards' },
          card('pending-total', pending, `${jobs(pending)} pending`),
          card('runnable-total', m.jobs.runnable, 'runnable now'),
          card('leased-total', m.jobs.leased, 'running (leased)'),
          card('oldest-runnable', m.oldestRunnableAgeMs === null ? 'none waiting' : millis(m.oldestRunnableAgeMs), 'oldest runnable job has waited'),
          // Only where debounce is used: pending jobs that wait on purpose, for their window to close.
          ...(m.jobs.debounceWaiting ? [card('debounce-waiting', m.jobs.debounceWaiting, 'waiting for a debounce window')] : []),
        ),
        h('h2', {}, 'Last hour'),
        h(
          'div',
          { class: 'cards' },
          card('finished-hour', finished, 'finished (throughput)'),
          card('succeeded-hour', m.jobs.finishedRecently.succeeded, 'succeeded'),
          card('dead-lettered-hour', m.jobs.finishedRecently.deadLettered, 'dead-lettered'),
          card('canceled-hour', m.jobs.finishedRecently.canceled, 'canceled'),
          card(
            'wait-p50-p95',
            `${millis(m.waitTimeMs.p50)} / ${millis(m.waitTimeMs.p95)}`,
            `wait p50 / p95 (${m.waitTimeMs.samples} ${jobs(m.waitTimeMs.samples)})`,
          ),
          card(
            'run-p50-p95',
            `${millis(m.runTimeMs.p50)} / ${millis(m.runTimeMs.p95)}`,
            `run time p50 / p95 (${m.runTimeMs.samples} ${jobs(m.runTimeMs.samples)})`,
          ),
        ),
        h(
          'div',
          { class: 'cards' },
          card('dead-lettered-day', m.deadLetteredLast24h, 'dead-lettered in 24 h'),
          card('intents-pending', m.intents.pending, 'enqueue intents pending'),
          card('intents-oldest', m.intents.oldestPendingAgeMs === null ? '—' : millis(m.intents.oldestPendingAgeMs), 'oldest pending intent'),
        ),
      );
      chart.update(data.throughput);
      replace(
        tables,
        matrix(
          `Jobs by type and status (finished: last ${window})`,
          data.jobs.map((row) => ({ type: row.jobType, status: row.status, count: row.count })),
          JOB_STATUSES,
          window,
          (type, status) => `#/jobs?${new URLSearchParams({ ...(type ? { type } : {}), ...(status ? { status } : {}) }).toString()}`,
        ),
        matrix(
          `Workflow runs by type and status (finished: last ${window})`,
          [
            ...data.runs.map((row) => ({ type: row.workflowType, status: row.status, count: row.count })),
            ...data.attention.waiting.byType.map((row) => ({ type: row.workflowType, status: WAITING_ON_PERSON, count: row.count })),
          ],
          [...RUN_STATUSES, WAITING_ON_PERSON],
          window,
          (type, status) =>
            `#/runs?${new URLSearchParams({
              ...(type ? { type } : {}),
              ...(status === WAITING_ON_PERSON ? { waiting: '1' } : status ? { status } : {}),
            }).toString()}`,
        ),
        h(
          'p',
          { class: 'muted' },
          `As of ${when(data.generatedAt)}. Pending, leased, running and waiting are counted in full; finished jobs and runs since ${when(data.finishedSince)} only. Wait is due to first start and run time first start to finish, over jobs finished in the last hour.`,
        ),
      );
    },
  };
}

/** "1 job", not "1 jobs". */
const jobs = (n: number) => (n === 1 ? 'job' : 'jobs');
