import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { when } from '../format.js';
import { filterForm, pager, SEARCH_HINT, searchNote, statusBadge, type SearchReport } from './list.js';

interface Run {
  id: string;
  workflowType: string;
  organizationId: string | null;
  status: string;
  createdAt: string;
  finishedAt: string | null;
}

export function runsView(_context: Context, query: URLSearchParams): View {
  const fields = [
    { name: 'q', label: 'Search', hint: SEARCH_HINT },
    { name: 'type', label: 'Workflow type' },
    { name: 'status', label: 'Status', options: ['RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'] },
  ];
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'runs-title' }, h('h1', { id: 'runs-title' }, 'Workflow runs'), filterForm('#/runs', query, fields), body);
  return {
    root,
    async refresh() {
      const params = Object.fromEntries(['q', 'type', 'status', 'cursor'].map((key) => [key, query.get(key) ?? undefined]));
      const page = await get<{ items: Run[]; nextCursor: string | null; search?: SearchReport }>('runs', params);
      replace(
        body,
        searchNote('#/runs', query, page.search, 'Runs'),
        page.items.length === 0
          ? h('p', {}, 'No run matches.')
          : h(
              'table',
              { class: 'list' },
              h('caption', { class: 'sr-only' }, 'Workflow runs, newest first'),
              h('thead', {}, h('tr', {}, ['id', 'type', 'status', 'organization', 'created', 'finished'].map((name) => h('th', { scope: 'col' }, name)))),
              h(
                'tbody',
                {},
                page.items.map((run) =>
                  h(
                    'tr',
                    {},
                    h('td', {}, h('a', { href: `#/runs/${run.id}`, class: 'mono' }, run.id)),
                    h('td', {}, run.workflowType),
                    h('td', {}, statusBadge(run.status)),
                    h('td', {}, run.organizationId ?? '—'),
                    h('td', {}, when(run.createdAt)),
                    h('td', {}, when(run.finishedAt)),
                  ),
                ),
              ),
            ),
        pager('#/runs', query, page.nextCursor),
      );
    },
  };
}
