import { get } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { duration, relative, timeAgo } from '../time.js';
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
  nextRunAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  idempotencyKey: string | null;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
}

export const JOB_STATUSES = ['PENDING', 'LEASED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'];

/** The job types of the definitions catalog, for the type filter's suggestions (read once per page visit). */
export const catalogJobTypes = () => get<{ jobTypes: string[] }>('catalog').then((catalog) => catalog.jobTypes);

/**
 * When a job runs: a PENDING job due later says "in 5 min" (scheduled, not
 * stuck); a PENDING one already due says how long it has waited; a job that
 * holds a lease or has ended has no next run to show.
 */
function scheduledFor(job: Job): HTMLElement | string {
  if (job.status !== 'PENDING') return '—';
  const due = new Date(job.nextRunAt).getTime();
  return h(
    'time',
    { datetime: job.nextRunAt, title: new Date(due).toLocaleString(), class: due > Date.now() ? 'scheduled' : 'due' },
    due > Date.now() ? relative(job.nextRunAt) : `due ${relative(job.nextRunAt)}`,
  );
}

/**
 * A succeeded job's last error is history (a retry that then succeeded): only a job that has not succeeded shows it,
 * its code and, beside it, the message cut to the column (whole on hover, and to a screen reader).
 */
function lastError(job: Job): (HTMLElement | string)[] {
  if (job.status === 'SUCCEEDED' || job.lastErrorCode === null) return [];
  const message = job.lastErrorMessage ?? '';
  return [
    h('span', { class: 'error-line' }, h('code', {}, job.lastErrorCode), message ? h('span', { class: 'error-message', title: message }, message) : null),
  ];
}

export function markedKey(key: string | null, needle: string): HTMLElement | string {
  if (key === null) return '—';
  const at = key.toLowerCase().indexOf(needle.toLowerCase());
  if (needle === '' || at < 0) return h('code', {}, key);
  return h('code', {}, key.slice(0, at), h('mark', {}, key.slice(at, at + needle.length)), key.slice(at + needle.length));
}

export function jobsView(context: Context, query: URLSearchParams): View {
  const fields = [
    { name: 'q', label: 'Search', hint: SEARCH_HINT },
    { name: 'type', label: 'Type', suggestions: catalogJobTypes },
    { name: 'status', label: 'Status', options: JOB_STATUSES, multiple: true },
    { name: 'from', label: 'Created from', datetime: true },
    { name: 'to', label: 'Created to', datetime: true },
    ...(context.session.scope.kind === 'admin' ? [{ name: 'org', label: 'Organization' }] : []),
  ];
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'jobs-title' }, h('h1', { id: 'jobs-title' }, 'Jobs'), filterForm('#/jobs', query, fields), body);
  return {
    root,
    async refresh() {
      const params = Object.fromEntries(['q', 'type', 'status', 'org', 'from', 'to', 'id', 'key', 'cursor'].map((key) => [key, query.get(key) ?? undefined]));
      const page = await get<{ items: Job[]; nextCursor: string | null; search?: SearchReport }>('jobs', params);
      const keySearch = page.search?.kind === 'key_substring' ? page.search.text : undefined;
      const columns = ['id', 'type', 'status', 'attempt', 'run', 'organization', 'created', 'scheduled for', 'took', 'last error'];
      if (keySearch !== undefined) columns.splice(2, 0, 'matched key');
      replace(
        body,
        searchNote('#/jobs', query, page.search, 'Jobs'),
        page.items.length === 0
          ? h('p', {}, 'No job matches.')
          : h(
              'table',
              { class: 'list jobs' },
              h('caption', { class: 'sr-only' }, 'Jobs, newest first'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  columns.map((name) => h('th', { scope: 'col' }, name)),
                ),
              ),
              h(
                'tbody',
                {},
                page.items.map((job) =>
                  h(
                    'tr',
                    { 'data-job-id': job.id },
                    h('td', {}, h('a', { href: `#/jobs/${job.id}`, class: 'mono', title: job.id }, job.id)),
                    h('td', {}, job.jobType),
                    keySearch !== undefined ? h('td', { 'data-testid': 'matched-key' }, markedKey(job.idempotencyKey, keySearch)) : null,
                    h('td', {}, statusBadge(job.state)),
                    h('td', { class: 'num' }, `${job.attempt}/${job.maxAttempts}`),
                    h('td', { class: 'num' }, job.runNumber),
                    h('td', {}, job.organizationId ?? '—'),
                    h('td', {}, timeAgo(job.createdAt)),
                    h('td', { 'data-testid': 'scheduled-for' }, scheduledFor(job)),
                    h('td', { class: 'num' }, job.startedAt ? duration(job.startedAt, job.finishedAt) : '—'),
                    h('td', { 'data-testid': 'last-error', 'data-col': 'error' }, lastError(job)),
                  ),
                ),
              ),
            ),
        pager('#/jobs', query, page.nextCursor),
      );
    },
  };
}
