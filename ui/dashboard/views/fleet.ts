/** The fleet: queues per job type (`#/queues`) and the worker registry (`#/workers`). */
import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { millis, when } from '../format.js';

interface Queue {
  jobType: string;
  depth: number;
  pending: number;
  runnable: number;
  leased: number;
  oldestWaitMs: number | null;
  succeeded: number;
  deadLettered: number;
  canceled: number;
  failureRate: number | null;
  liveWorkers: number;
  unserved: boolean;
}

interface Worker {
  id: string;
  host: string;
  pid: number;
  jobTypes: string[];
  concurrency: number;
  inFlight: number;
  startedAt: string;
  lastSeenAt: string;
  expiresAt: string;
  live: boolean;
}

function table(caption: string, columns: string[], rows: HTMLTableRowElement[]): HTMLTableElement {
  return h(
    'table',
    { class: 'list' },
    h('caption', { class: 'sr-only' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h('tbody', {}, rows),
  );
}

function ago(value: string, now: number): string {
  const ms = now - new Date(value).getTime();
  return ms < 0 ? 'just now' : `${millis(Math.round(ms))} ago`;
}

export function queuesView(_context: Context): View {
  const body = h('div');
  const root = h(
    'section',
    { 'aria-labelledby': 'queues-title' },
    h('h1', { id: 'queues-title' }, 'Queues'),
    h('p', { class: 'muted' }, 'Per job type: jobs waiting and running now, the last hour’s outcomes, and the live workers that handle the type.'),
    body,
  );
  return {
    root,
    async refresh() {
      const { queues } = await get<{ queues: Queue[]; windowMs: number }>('queues');
      const unserved = queues.filter((queue) => queue.unserved);
      replace(
        body,
        unserved.length > 0
          ? h(
              'p',
              { class: 'warning', role: 'note', 'data-testid': 'unserved-warning' },
              `No live worker handles ${unserved.map((queue) => queue.jobType).join(', ')}, and ${unserved.length === 1 ? 'it has' : 'they have'} runnable jobs.`,
            )
          : null,
        queues.length === 0
          ? h('p', {}, 'No job type yet.')
          : table(
              'Queues by job type',
              ['type', 'depth', 'runnable now', 'oldest wait', 'running', 'succeeded (1 h)', 'failure rate (1 h)', 'live workers'],
              queues.map((queue) =>
                h(
                  'tr',
                  { 'data-type': queue.jobType, class: queue.unserved ? 'flagged' : undefined },
                  h('td', {}, h('a', { href: `#/jobs?${new URLSearchParams({ type: queue.jobType }).toString()}` }, queue.jobType)),
                  h('td', { class: 'num', 'data-col': 'depth' }, queue.depth),
                  h('td', { class: 'num', 'data-col': 'runnable' }, queue.runnable),
                  h('td', { class: 'num' }, millis(queue.oldestWaitMs)),
                  h('td', { class: 'num' }, queue.leased),
                  h('td', { class: 'num' }, queue.succeeded),
                  h('td', { class: 'num' }, queue.failureRate === null ? '—' : `${(queue.failureRate * 100).toFixed(1)}% (${queue.deadLettered} dead)`),
                  h('td', { class: 'num', 'data-col': 'workers' }, queue.unserved ? h('strong', {}, '0 — no worker') : queue.liveWorkers),
                ),
              ),
            ),
      );
    },
  };
}

export function workersView(_context: Context): View {
  const body = h('div');
  const root = h(
    'section',
    { 'aria-labelledby': 'workers-title' },
    h('h1', { id: 'workers-title' }, 'Workers'),
    h('p', { class: 'muted' }, 'Each running worker heartbeats here every 15 s; one that stops heartbeating shows as gone for an hour.'),
    body,
  );
  return {
    root,
    async refresh() {
      const { workers } = await get<{ workers: Worker[] }>('workers');
      const now = Date.now();
      replace(
        body,
        workers.length === 0
          ? h('p', {}, 'No worker has registered.')
          : table(
              'Workers, live first',
              ['worker', 'state', 'host', 'pid', 'job types', 'in flight / concurrency', 'started', 'last seen'],
              workers.map((worker) =>
                h(
                  'tr',
                  { 'data-worker': worker.id },
                  h('td', { class: 'mono' }, worker.id),
                  h('td', {}, h('span', { class: `badge ${worker.live ? 'status-SUCCEEDED' : 'status-CANCELED'}` }, worker.live ? 'live' : 'gone')),
                  h('td', {}, worker.host),
                  h('td', { class: 'num' }, worker.pid),
                  h('td', {}, worker.jobTypes.join(', ') || '—'),
                  h('td', { class: 'num', 'data-col': 'in-flight' }, `${worker.inFlight} / ${worker.concurrency}`),
                  h('td', {}, when(worker.startedAt)),
                  h('td', {}, ago(worker.lastSeenAt, now)),
                ),
              ),
            ),
      );
    },
  };
}
