import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { when } from '../format.js';
import { filterForm, pager, SEARCH_HINT, searchNote, statusBadge, type SearchReport } from './list.js';

interface Job {
  id: string;
  jobType: string;
  organizationId: string | null;
  status: string;
  /** status, except RUNNING for a LEASED job whose handler has started */
  state: string;
  attempt: number;
  maxAttempts: number;
  runNumber: number;
  createdAt: string;
  lastErrorCode: string | null;
}

export function jobsView(context: Context, query: URLSearchParams): View {
  const fields = [
    { name: 'q', label: 'Search', hint: SEARCH_HINT },
    { name: 'type', label: 'Type' },
    { name: 'status', label: 'Status', options: ['PENDING', 'LEASED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'] },
    ...(context.session.scope.kind === 'admin' ? [{ name: 'org', label: 'Organization' }] : []),
  ];
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'jobs-title' }, h('h1', { id: 'jobs-title' }, 'Jobs'), filterForm('#/jobs', query, fields), body);
  return {
    root,
    async refresh() {
      const params = Object.fromEntries(['q', 'type', 'status', 'org', 'id', 'key', 'cursor'].map((key) => [key, query.get(key) ?? undefined]));
      const page = await get<{ items: Job[]; nextCursor: string | null; search?: SearchReport }>('jobs', params);
      replace(
        body,
        searchNote('#/jobs', query, page.search, 'Jobs'),
        page.items.length === 0
          ? h('p', {}, 'No job matches.')
          : h(
              'table',
              { class: 'list' },
              h('caption', { class: 'sr-only' }, 'Jobs, newest first'),
              h('thead', {}, h('tr', {}, ['id', 'type', 'status', 'attempt', 'run', 'organization', 'created', 'last error'].map((name) => h('th', { scope: 'col' }, name)))),
              h(
                'tbody',
                {},
                page.items.map((job) =>
                  h(
                    'tr',
                    {},
                    h('td', {}, h('a', { href: `#/jobs/${job.id}`, class: 'mono' }, job.id)),
                    h('td', {}, job.jobType),
                    h('td', {}, statusBadge(job.state)),
                    h('td', { class: 'num' }, `${job.attempt}/${job.maxAttempts}`),
                    h('td', { class: 'num' }, job.runNumber),
                    h('td', {}, job.organizationId ?? '—'),
                    h('td', {}, when(job.createdAt)),
                    h('td', {}, job.lastErrorCode ?? ''),
                  ),
                ),
              ),
            ),
        pager('#/jobs', query, page.nextCursor),
      );
    },
  };
}
