/** Schedules (`#/schedules`: next fire, last error, pause and resume) and job definitions (`#/definitions`: enable and disable). */
import { get, post } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { when } from '../format.js';
import { actionForm } from './actions.js';
import { pager } from './list.js';

interface Schedule {
  key: string;
  cron: string;
  timezone: string;
  jobType: string | null;
  workflow: { workflowType?: string } | null;
  organizationId: string | null;
  enabled: boolean;
  nextRunAt: string;
  lastSlotAt: string | null;
  lastError: { code: string; message: string; at: string } | null;
}

interface Definition {
  jobType: string;
  enabled: boolean;
  defaultPriority: number;
  defaultMaxAttempts: number;
  defaultTimeoutSeconds: number;
  updatedAt: string;
}

function header(columns: string[]): HTMLTableSectionElement {
  return h(
    'thead',
    {},
    h(
      'tr',
      {},
      columns.map((name) => h('th', { scope: 'col' }, name)),
    ),
  );
}

/** A one-button form (an action needs no more than the row it is on); `id` is the row's index, since keys may hold spaces. */
function toggle(context: Context, id: string, title: string, label: string, act: () => Promise<unknown>): HTMLFormElement {
  const form = actionForm(context, id, title, [], label, act);
  form.classList.add('inline');
  return form;
}

export function schedulesView(context: Context, query: URLSearchParams): View {
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'schedules-title' }, h('h1', { id: 'schedules-title' }, 'Schedules'), body);
  let shown = '';
  return {
    root,
    async refresh() {
      const page = await get<{ items: Schedule[]; nextCursor: string | null }>('schedules', { cursor: query.get('cursor') ?? undefined });
      // Rebuilt only when something changed, so a focused button survives a refresh.
      const key = JSON.stringify(page);
      if (key === shown) return;
      shown = key;
      replace(
        body,
        page.items.length === 0
          ? h('p', {}, 'No schedule.')
          : h(
              'table',
              { class: 'list' },
              h('caption', { class: 'sr-only' }, 'Schedules by key'),
              header(['key', 'cron', 'makes', 'organization', 'next fire', 'last slot', 'last error', 'state', '']),
              h(
                'tbody',
                {},
                page.items.map((schedule, index) =>
                  h(
                    'tr',
                    { 'data-schedule': schedule.key },
                    h('td', { class: 'mono' }, schedule.key),
                    h('td', { class: 'mono' }, `${schedule.cron} (${schedule.timezone})`),
                    h('td', {}, schedule.jobType ?? `run ${schedule.workflow?.workflowType ?? ''}`),
                    h('td', {}, schedule.organizationId ?? '—'),
                    h('td', { 'data-col': 'next' }, schedule.enabled ? when(schedule.nextRunAt) : 'paused'),
                    h('td', {}, when(schedule.lastSlotAt)),
                    h(
                      'td',
                      { 'data-col': 'error' },
                      schedule.lastError ? `${schedule.lastError.code}: ${schedule.lastError.message} (${when(schedule.lastError.at)})` : '—',
                    ),
                    h('td', { 'data-col': 'state' }, schedule.enabled ? 'enabled' : 'paused'),
                    h(
                      'td',
                      {},
                      context.session.readOnly
                        ? null
                        : toggle(
                            context,
                            `schedule-${index}`,
                            `${schedule.enabled ? 'Pause' : 'Resume'} schedule ${schedule.key}`,
                            schedule.enabled ? 'Pause' : 'Resume',
                            () => post(`schedules/${encodeURIComponent(schedule.key)}/${schedule.enabled ? 'pause' : 'resume'}`, {}),
                          ),
                    ),
                  ),
                ),
              ),
            ),
        pager('#/schedules', query, page.nextCursor),
      );
    },
  };
}

export function definitionsView(context: Context, query: URLSearchParams): View {
  const body = h('div');
  const root = h(
    'section',
    { 'aria-labelledby': 'definitions-title' },
    h('h1', { id: 'definitions-title' }, 'Job definitions'),
    h('p', { class: 'muted' }, 'A disabled type refuses new enqueues (its enqueue intents wait); jobs already queued still run.'),
    body,
  );
  let shown = '';
  return {
    root,
    async refresh() {
      const page = await get<{ items: Definition[]; nextCursor: string | null }>('definitions', { cursor: query.get('cursor') ?? undefined });
      const key = JSON.stringify(page);
      if (key === shown) return;
      shown = key;
      replace(
        body,
        page.items.length === 0
          ? h('p', {}, 'No job definition is in the catalog yet (workers sync theirs at start).')
          : h(
              'table',
              { class: 'list' },
              h('caption', { class: 'sr-only' }, 'Job definitions by type'),
              header(['type', 'state', 'priority', 'max attempts', 'timeout', 'changed', '']),
              h(
                'tbody',
                {},
                page.items.map((definition, index) =>
                  h(
                    'tr',
                    { 'data-type': definition.jobType },
                    h('td', {}, h('a', { href: `#/jobs?${new URLSearchParams({ type: definition.jobType }).toString()}` }, definition.jobType)),
                    h('td', { 'data-col': 'state' }, definition.enabled ? 'enabled' : 'disabled'),
                    h('td', { class: 'num' }, definition.defaultPriority),
                    h('td', { class: 'num' }, definition.defaultMaxAttempts),
                    h('td', { class: 'num' }, `${definition.defaultTimeoutSeconds} s`),
                    h('td', {}, when(definition.updatedAt)),
                    h(
                      'td',
                      {},
                      context.session.readOnly
                        ? null
                        : toggle(
                            context,
                            `definition-${index}`,
                            `${definition.enabled ? 'Disable' : 'Enable'} ${definition.jobType}`,
                            definition.enabled ? 'Disable' : 'Enable',
                            () => post(`definitions/${encodeURIComponent(definition.jobType)}/enabled`, { enabled: !definition.enabled }),
                          ),
                    ),
                  ),
                ),
              ),
            ),
        pager('#/definitions', query, page.nextCursor),
      );
    },
  };
}
