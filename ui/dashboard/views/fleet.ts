/** The fleet: queues per job type (`#/queues`) and the worker registry (`#/workers`). */
import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { distinctId, millis, when } from '../format.js';
import { concurrencySection } from './concurrency.js';
import { rateLimitSection } from './rate-limits.js';

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
  /** Every slot of its live workers busy while its oldest runnable job has waited (src/dashboard/fleet.ts). */
  saturated: boolean;
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
  /** src/dashboard/fleet.ts WorkerEntry: stale = live but it missed a heartbeat. */
  state: 'live' | 'stale' | 'gone';
  heartbeatIntervalMs: number;
  held: number;
  heldJobs: { id: string; jobType: string; organizationId: string | null; attemptStartedAt: string | null; leaseExpiresAt: string; leaseExpired: boolean }[];
}

const STATE_BADGE = { live: 'status-SUCCEEDED', stale: 'status-FAILED_RETRY', gone: 'status-CANCELED' } as const;

/** The jobs a worker holds, each a link to its page; an expired lease (the reaper has not taken it back) says so. */
function heldList(worker: Worker): HTMLElement | string {
  if (worker.held === 0) return '—';
  return h(
    'ul',
    { class: 'held' },
    worker.heldJobs.map((job) =>
      h(
        'li',
        {},
        h('a', { href: `#/jobs/${job.id}`, class: 'mono', title: job.id }, distinctId(job.id)),
        ` ${job.jobType}`,
        job.leaseExpired ? h('strong', {}, ' (lease expired)') : '',
      ),
    ),
    worker.held > worker.heldJobs.length ? h('li', { class: 'muted' }, `and ${worker.held - worker.heldJobs.length} more`) : null,
  );
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

export function queuesView(context: Context, query: URLSearchParams): View {
  const body = h('div');
  const keys = concurrencySection(context, query.get('after'));
  const rates = rateLimitSection(context, query.get('rateAfter'));
  const root = h(
    'section',
    { 'aria-labelledby': 'queues-title' },
    h('h1', { id: 'queues-title' }, 'Queues'),
    h('p', { class: 'muted' }, 'Per job type: jobs waiting and running now, the last hour’s outcomes, and the live workers that handle the type.'),
    body,
    keys.root,
    rates.root,
  );
  return {
    root,
    async refresh() {
      const [{ queues }] = await Promise.all([get<{ queues: Queue[]; windowMs: number }>('queues'), keys.refresh(), rates.refresh()]);
      const unserved = queues.filter((queue) => queue.unserved);
      const saturated = queues.filter((queue) => queue.saturated);
      replace(
        body,
        saturated.length > 0
          ? h(
              'p',
              { class: 'warning', role: 'note', 'data-testid': 'saturated-warning' },
              `Every slot of the live workers handling ${saturated.map((queue) => queue.jobType).join(', ')} is busy while runnable jobs wait: add workers or concurrency.`,
            )
          : null,
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
                  { 'data-type': queue.jobType, class: queue.unserved || queue.saturated ? 'flagged' : undefined },
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
    h(
      'p',
      { class: 'muted' },
      'Each running worker heartbeats here (every 15 s by default). One whose last heartbeat is older than two of its intervals is stale (it missed one); after three it is gone, shown for an hour.',
    ),
    body,
  );
  return {
    root,
    async refresh() {
      const { workers } = await get<{ workers: Worker[] }>('workers');
      const now = Date.now();
      const stale = workers.filter((worker) => worker.state === 'stale');
      replace(
        body,
        stale.length > 0
          ? h(
              'p',
              { class: 'warning', role: 'note', 'data-testid': 'stale-warning' },
              `${stale.length === 1 ? 'A worker missed its' : `${stale.length} workers missed their`} heartbeat: ${stale.map((worker) => worker.id).join(', ')}. Its jobs stay leased until it beats again or its leases expire.`,
            )
          : null,
        workers.length === 0
          ? h('p', {}, 'No worker has registered.')
          : table(
              'Workers, live first',
              ['worker', 'state', 'host', 'pid', 'job types', 'in flight / concurrency', 'slots used', 'jobs held', 'started', 'last seen'],
              workers.map((worker) =>
                h(
                  'tr',
                  { 'data-worker': worker.id, 'data-state': worker.state, class: worker.state === 'stale' ? 'flagged' : undefined },
                  h('td', { class: 'mono' }, worker.id),
                  h('td', { 'data-col': 'state' }, h('span', { class: `badge ${STATE_BADGE[worker.state]}` }, worker.state)),
                  h('td', {}, worker.host),
                  h('td', { class: 'num' }, worker.pid),
                  h('td', {}, worker.jobTypes.join(', ') || '—'),
                  h('td', { class: 'num', 'data-col': 'in-flight' }, `${worker.inFlight} / ${worker.concurrency}`),
                  h('td', { class: 'num', 'data-col': 'slots' }, `${Math.min(worker.held, worker.concurrency)} of ${worker.concurrency}`),
                  h('td', { 'data-col': 'held' }, heldList(worker)),
                  h('td', { title: when(worker.startedAt) }, ago(worker.startedAt, now)),
                  h(
                    'td',
                    { 'data-col': 'last-seen' },
                    ago(worker.lastSeenAt, now),
                    worker.state === 'stale' ? h('div', {}, h('strong', {}, `stale: beats every ${millis(worker.heartbeatIntervalMs)}`)) : null,
                  ),
                ),
              ),
            ),
      );
    },
  };
}
