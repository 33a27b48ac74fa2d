import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { label, seconds, when } from '../format.js';

interface Overview {
  jobs: { jobType: string; status: string; count: number }[];
  runs: { workflowType: string; status: string; count: number }[];
  oldestReadySeconds: number | null;
  lastHour: { succeeded: number; deadLettered: number; canceled: number };
  generatedAt: string;
}

const JOB_STATUSES = ['PENDING', 'LEASED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'];
const RUN_STATUSES = ['RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'];

function matrix(caption: string, rows: { type: string; status: string; count: number }[], statuses: string[], link: (type: string, status?: string) => string): HTMLElement {
  const types = [...new Set(rows.map((row) => row.type))].sort();
  const count = (type: string | undefined, status: string) =>
    rows.filter((row) => (type === undefined || row.type === type) && row.status === status).reduce((sum, row) => sum + row.count, 0);
  const cell = (type: string | undefined, status: string) => {
    const n = count(type, status);
    return h('td', { class: 'num', 'data-status': status, 'data-type': type ?? '*' }, n === 0 ? '0' : h('a', { href: link(type ?? '', status) }, n));
  };
  return h(
    'table',
    { class: 'grid' },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'type'), statuses.map((status) => h('th', { scope: 'col', class: 'num' }, label(status))))),
    h(
      'tbody',
      {},
      types.map((type) => h('tr', {}, h('th', { scope: 'row' }, h('a', { href: link(type) }, type)), statuses.map((status) => cell(type, status)))),
      h('tr', { class: 'total' }, h('th', { scope: 'row' }, 'all types'), statuses.map((status) => cell(undefined, status))),
    ),
  );
}

export function overviewView(_context: Context): View {
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'overview-title' }, h('h1', { id: 'overview-title' }, 'Overview'), body);
  return {
    root,
    async refresh() {
      const data = await get<Overview>('overview');
      const pending = data.jobs.filter((row) => row.status === 'PENDING').reduce((sum, row) => sum + row.count, 0);
      replace(
        body,
        h(
          'div',
          { class: 'cards' },
          h('div', { class: 'card' }, h('span', { class: 'big', 'data-testid': 'pending-total' }, pending), h('span', {}, 'jobs pending')),
          h('div', { class: 'card' }, h('span', { class: 'big' }, seconds(data.oldestReadySeconds)), h('span', {}, 'oldest due job has waited')),
          h('div', { class: 'card' }, h('span', { class: 'big' }, data.lastHour.succeeded), h('span', {}, 'succeeded in the last hour')),
          h('div', { class: 'card' }, h('span', { class: 'big' }, data.lastHour.deadLettered), h('span', {}, 'dead-lettered in the last hour')),
        ),
        matrix('Jobs by type and status', data.jobs.map((row) => ({ type: row.jobType, status: row.status, count: row.count })), JOB_STATUSES, (type, status) =>
          `#/jobs?${new URLSearchParams({ ...(type ? { type } : {}), ...(status ? { status } : {}) }).toString()}`,
        ),
        matrix('Workflow runs by type and status', data.runs.map((row) => ({ type: row.workflowType, status: row.status, count: row.count })), RUN_STATUSES, (type, status) =>
          `#/runs?${new URLSearchParams({ ...(type ? { type } : {}), ...(status ? { status } : {}) }).toString()}`,
        ),
        h('p', { class: 'muted' }, `As of ${when(data.generatedAt)}.`),
      );
    },
  };
}
