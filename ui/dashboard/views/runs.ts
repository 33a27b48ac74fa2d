import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { duration, timeAgo } from '../time.js';
import { markedKey } from './jobs.js';
import { filterForm, pager, SEARCH_HINT, searchNote, statusBadge, type SearchReport } from './list.js';

/** src/dashboard/metadata-filter.ts MetadataReport */
interface MetadataReport {
  kind: 'metadata';
  key: string;
  value: string;
  searchedNewest: number;
}

interface Run {
  id: string;
  workflowType: string;
  organizationId: string | null;
  status: string;
  /** Some step waits for an external completion, whatever the status (WorkflowRun.waitingForExternal). */
  waitingForExternal: boolean;
  idempotencyKey: string | null;
  createdAt: string;
  finishedAt: string | null;
  /** src/dashboard/run-insights.ts RunStepSummary */
  steps: {
    total: number;
    succeeded: number;
    failed: number;
    canceled: number;
    open: number;
    failingStep: { stepKey: string; errorCode: string | null } | null;
  } | null;
}

function stepCounts(run: Run): string {
  const s = run.steps;
  if (!s) return '—';
  return [`${s.succeeded}/${s.total} succeeded`, s.failed && `${s.failed} failed`, s.canceled && `${s.canceled} canceled`, s.open && `${s.open} open`]
    .filter(Boolean)
    .join(', ');
}

export function runsView(context: Context, query: URLSearchParams): View {
  const fields = [
    { name: 'q', label: 'Search', hint: SEARCH_HINT },
    { name: 'type', label: 'Workflow type' },
    { name: 'status', label: 'Status', options: ['RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'], multiple: true },
    { name: 'waiting', label: 'Waiting on a person (any status)', flag: true },
    { name: 'meta', label: 'Metadata', hint: 'Metadata: key=value (customer=acme), among the newest 5,000 runs in scope.' },
    { name: 'from', label: 'Created from', datetime: true },
    { name: 'to', label: 'Created to', datetime: true },
    ...(context.session.scope.kind === 'admin' ? [{ name: 'org', label: 'Organization' }] : []),
  ];
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'runs-title' }, h('h1', { id: 'runs-title' }, 'Workflow runs'), filterForm('#/runs', query, fields), body);
  return {
    root,
    async refresh() {
      const params = Object.fromEntries(
        ['q', 'type', 'status', 'waiting', 'org', 'from', 'to', 'meta', 'cursor'].map((key) => [key, query.get(key) ?? undefined]),
      );
      const page = await get<{ items: Run[]; nextCursor: string | null; search?: SearchReport | MetadataReport }>('runs', params);
      const metadata = page.search?.kind === 'metadata' ? page.search : undefined;
      const keySearch = page.search?.kind === 'key_substring' ? page.search.text : undefined;
      replace(
        body,
        metadata
          ? h(
              'p',
              { class: 'search-note', 'data-testid': 'search-note', 'data-kind': 'metadata' },
              `Runs whose metadata has ${metadata.key} = “${metadata.value}”, among the newest ${metadata.searchedNewest.toLocaleString('en-US')} in scope.`,
            )
          : searchNote('#/runs', query, page.search?.kind === 'metadata' ? undefined : page.search, 'Runs'),
        page.items.length === 0
          ? h('p', {}, 'No run matches.')
          : h(
              'table',
              { class: 'list' },
              h('caption', { class: 'sr-only' }, 'Workflow runs, newest first'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  [
                    'id',
                    'type',
                    ...(keySearch !== undefined ? ['matched key'] : []),
                    'status',
                    'steps',
                    'failing step',
                    'organization',
                    'created',
                    'duration',
                  ].map((name) => h('th', { scope: 'col' }, name)),
                ),
              ),
              h(
                'tbody',
                {},
                page.items.map((run) =>
                  h(
                    'tr',
                    { 'data-run-id': run.id },
                    h('td', {}, h('a', { href: `#/runs/${run.id}`, class: 'mono', title: run.id }, run.id)),
                    h('td', {}, run.workflowType),
                    keySearch !== undefined ? h('td', { 'data-testid': 'matched-key' }, markedKey(run.idempotencyKey, keySearch)) : null,
                    h(
                      'td',
                      {},
                      statusBadge(run.status),
                      run.waitingForExternal && run.status !== 'WAITING_FOR_EXTERNAL'
                        ? h('span', { class: 'badge status-WAITING_FOR_EXTERNAL', 'data-testid': 'run-waiting' }, 'waiting on a person')
                        : null,
                    ),
                    h('td', { 'data-testid': 'run-steps' }, stepCounts(run)),
                    h(
                      'td',
                      { 'data-testid': 'run-failing-step' },
                      run.steps?.failingStep
                        ? h(
                            'span',
                            {},
                            h('code', {}, run.steps.failingStep.stepKey),
                            run.steps.failingStep.errorCode ? ` ${run.steps.failingStep.errorCode}` : '',
                          )
                        : '—',
                    ),
                    h('td', {}, run.organizationId ?? '—'),
                    h('td', {}, timeAgo(run.createdAt)),
                    h('td', { class: 'num', 'data-testid': 'run-duration' }, duration(run.createdAt, run.finishedAt)),
                  ),
                ),
              ),
            ),
        pager('#/runs', query, page.nextCursor),
      );
    },
  };
}
