/**
 * The queues page's concurrency keys (`GET api/concurrency`, listConcurrencyLimits in the page's scope): each
 * key's limit, live leases, due jobs waiting and who set the limit, 100 keys a page by key (`#/queues?after=K`).
 * An admin of a writable dashboard may pin a key's limit or give it back to enqueues, each after a confirmation:
 * the limit binds every organization's jobs of the key.
 */
import { get, post } from '../api.js';
import type { Context } from '../context.js';
import { h, replace } from '../dom.js';
import { actionForm } from './actions.js';

interface ConcurrencyKey {
  key: string;
  limit: number;
  /** Admin: every lease of the key; another scope: its own. */
  leased: number;
  /** Due PENDING jobs of the key (up to a cap). */
  waiting: number;
  setBy: 'enqueue' | 'operator';
  updatedAt: string;
}

const SET_BY = { enqueue: 'enqueue', operator: 'operator (pinned)' } as const;

/** A whole number stays a number; anything else is sent as typed, so the server refuses it (never read as null). */
function limitValue(typed: string): number | string {
  return /^[0-9]{1,9}$/.test(typed.trim()) ? Number(typed.trim()) : typed;
}

function keyActions(context: Context, entry: ConcurrencyKey, index: number): HTMLElement {
  const path = `concurrency/${encodeURIComponent(entry.key)}/limit`;
  const set = actionForm(
    context,
    `concurrency-${index}`,
    `Set the limit of ${entry.key}`,
    [{ name: 'limit', label: 'New limit', kind: 'number', required: true, value: String(entry.limit) }],
    'Set limit…',
    (values) => post(path, { limit: limitValue(values.limit ?? '') }),
    {
      confirm: (values) =>
        `Set concurrency key ${entry.key}'s limit to ${values.limit}? It binds every organization's jobs of the key from the next claim, and enqueues stop changing it until it is given back.`,
    },
  );
  set.classList.add('inline');
  if (entry.setBy !== 'operator') return set;
  const giveBack = actionForm(
    context,
    `concurrency-back-${index}`,
    `Give the limit of ${entry.key} back to enqueues`,
    [],
    'Give back…',
    () => post(path, { limit: null }),
    {
      confirm: () => `Give concurrency key ${entry.key}'s limit back to enqueues? It stays ${entry.limit} until an enqueue naming the key sets its own.`,
    },
  );
  giveBack.classList.add('inline');
  return h('div', {}, set, giveBack);
}

/** The section and its refresh; `after` is the page's `after` (the last key of the previous page). */
export function concurrencySection(context: Context, after: string | null): { root: HTMLElement; refresh(): Promise<void> } {
  const body = h('div');
  const root = h(
    'section',
    { 'aria-labelledby': 'concurrency-title', 'data-testid': 'concurrency-keys' },
    h('h2', { id: 'concurrency-title' }, 'Concurrency keys'),
    h(
      'p',
      { class: 'muted' },
      context.session.scope.kind === 'admin'
        ? 'At most a key’s limit of its jobs run at once, across every worker. Waiting: due jobs of the key not yet claimed.'
        : 'At most a key’s limit of its jobs run at once, across every worker and organization. Leased and waiting count this scope’s jobs.',
    ),
    body,
  );
  const canChange = context.session.scope.kind === 'admin' && !context.session.readOnly;
  let shown = '';
  return {
    root,
    async refresh() {
      const page = await get<{ items: ConcurrencyKey[]; nextAfter: string | null }>('concurrency', { after: after ?? undefined });
      // Rebuilt only when something changed, so a limit being typed survives a refresh.
      const key = JSON.stringify(page.items.map(({ updatedAt: _u, ...rest }) => rest)) + String(page.nextAfter);
      if (key === shown) return;
      shown = key;
      const columns = ['key', 'limit', 'leased', 'waiting', 'set by', ...(canChange ? ['change'] : [])];
      replace(
        body,
        page.items.length === 0
          ? h('p', {}, after ? 'No more keys.' : 'No job has named a concurrency key.')
          : h(
              'table',
              { class: 'list' },
              h('caption', { class: 'sr-only' }, 'Concurrency keys'),
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
                page.items.map((entry, index) =>
                  h(
                    'tr',
                    { 'data-key': entry.key, class: entry.waiting > 0 && entry.leased >= entry.limit ? 'flagged' : undefined },
                    h('td', { class: 'mono' }, entry.key),
                    h('td', { class: 'num', 'data-col': 'limit' }, entry.limit),
                    h('td', { class: 'num', 'data-col': 'leased' }, entry.leased),
                    h('td', { class: 'num', 'data-col': 'waiting' }, entry.waiting),
                    h('td', { 'data-col': 'set-by' }, SET_BY[entry.setBy]),
                    canChange ? h('td', {}, keyActions(context, entry, index)) : null,
                  ),
                ),
              ),
            ),
        h(
          'nav',
          { class: 'pager', 'aria-label': 'Concurrency key pages' },
          after ? h('a', { href: '#/queues' }, 'First keys') : null,
          page.nextAfter ? h('a', { href: `#/queues?${new URLSearchParams({ after: page.nextAfter }).toString()}`, rel: 'next' }, 'Next keys') : null,
        ),
      );
    },
  };
}
