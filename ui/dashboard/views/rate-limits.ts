/**
 * The queues page's rate keys (`GET api/rate-limits`, listRateLimits in the page's scope): each key's limit per
 * period, burst, whole tokens now, due jobs waiting and who set the limit, 100 keys a page by key
 * (`#/queues?rateAfter=K`). An admin of a writable dashboard may pin a key's limit or give it back to enqueues
 * (`POST api/rate-limits/:key`), each after a confirmation: the limit binds every organization's jobs of the key.
 */
import { get, post } from '../api.js';
import type { Context } from '../context.js';
import { h, replace } from '../dom.js';
import { millis } from '../format.js';
import { actionForm } from './actions.js';

interface RateKey {
  key: string;
  limit: number;
  periodMs: number;
  burst: number;
  /** Fractional: the bucket refills continuously; a start takes a whole token. */
  tokens: number;
  /** Due PENDING jobs of the key in the scope (up to a cap). */
  waiting: number;
  setBy: 'enqueue' | 'operator';
  updatedAt: string;
}

const SET_BY = { enqueue: 'enqueue', operator: 'operator (pinned)' } as const;

/** A whole number stays a number; anything else is sent as typed, so the server refuses it, naming the field. */
function whole(typed: string | undefined): number | string | undefined {
  const text = (typed ?? '').trim();
  if (text === '') return undefined;
  return /^[0-9]{1,9}$/.test(text) ? Number(text) : text;
}

function keyActions(context: Context, entry: RateKey, index: number): HTMLElement {
  const path = `rate-limits/${encodeURIComponent(entry.key)}`;
  const set = actionForm(
    context,
    `rate-${index}`,
    `Set the rate limit of ${entry.key}`,
    [
      { name: 'limit', label: 'Starts', kind: 'number', required: true, value: String(entry.limit) },
      { name: 'periodMs', label: 'Per ms', kind: 'number', required: true, value: String(entry.periodMs) },
      { name: 'burst', label: 'Burst', kind: 'number', required: true, value: String(entry.burst) },
    ],
    'Set rate…',
    (values) => post(path, { limit: whole(values.limit) ?? '', periodMs: whole(values.periodMs) ?? '', burst: whole(values.burst) ?? '' }),
    {
      confirm: (values) =>
        `Set rate key ${entry.key}'s limit to ${values.limit} per ${values.periodMs} ms, burst ${values.burst}? It binds every organization's jobs of the key from the next claim, and enqueues stop changing it until it is given back.`,
    },
  );
  set.classList.add('inline');
  if (entry.setBy !== 'operator') return set;
  const giveBack = actionForm(
    context,
    `rate-back-${index}`,
    `Give the rate limit of ${entry.key} back to enqueues`,
    [],
    'Give back…',
    () => post(path, { limit: null }),
    { confirm: () => `Give rate key ${entry.key}'s limit back to enqueues? It stays as it is until an enqueue naming the key sets its own.` },
  );
  giveBack.classList.add('inline');
  return h('div', {}, set, giveBack);
}

/** The section and its refresh; `after` is the page's `rateAfter` (the last key of the previous page). */
export function rateLimitSection(context: Context, after: string | null): { root: HTMLElement; refresh(): Promise<void> } {
  const body = h('div');
  const root = h(
    'section',
    { 'aria-labelledby': 'rate-title', 'data-testid': 'rate-keys' },
    h('h2', { id: 'rate-title' }, 'Rate keys'),
    h(
      'p',
      { class: 'muted' },
      'Each start of a key’s job takes a token; the bucket holds at most its burst and gains the limit per period, across every worker and organization. Waiting: due jobs of the key not yet claimed',
      context.session.scope.kind === 'admin' ? '.' : ', of this scope.',
    ),
    body,
  );
  const canChange = context.session.scope.kind === 'admin' && !context.session.readOnly;
  let shown = '';
  return {
    root,
    async refresh() {
      const page = await get<{ items: RateKey[]; nextAfter: string | null }>('rate-limits', { after: after ?? undefined });
      // Rebuilt only when something a person reads changed (whole tokens), so a limit being typed survives a refresh.
      const key = JSON.stringify(page.items.map(({ updatedAt: _u, tokens, ...rest }) => [rest, Math.floor(tokens)])) + String(page.nextAfter);
      if (key === shown) return;
      shown = key;
      const columns = ['key', 'limit', 'per', 'burst', 'tokens', 'waiting', 'set by', ...(canChange ? ['change'] : [])];
      replace(
        body,
        page.items.length === 0
          ? h('p', {}, after ? 'No more keys.' : 'No job has named a rate key.')
          : h(
              'table',
              { class: 'list' },
              h('caption', { class: 'sr-only' }, 'Rate keys'),
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
                    { 'data-key': entry.key, class: entry.waiting > 0 && entry.tokens < 1 ? 'flagged' : undefined },
                    h('td', { class: 'mono' }, entry.key),
                    h('td', { class: 'num', 'data-col': 'limit' }, entry.limit),
                    h('td', { 'data-col': 'per' }, millis(entry.periodMs)),
                    h('td', { class: 'num', 'data-col': 'burst' }, entry.burst),
                    h('td', { class: 'num', 'data-col': 'tokens' }, Math.floor(entry.tokens)),
                    h('td', { class: 'num', 'data-col': 'waiting' }, entry.waiting),
                    h('td', { 'data-col': 'set-by' }, SET_BY[entry.setBy]),
                    canChange ? h('td', {}, keyActions(context, entry, index)) : null,
                  ),
                ),
              ),
            ),
        h(
          'nav',
          { class: 'pager', 'aria-label': 'Rate key pages' },
          after ? h('a', { href: '#/queues' }, 'First rate keys') : null,
          page.nextAfter ? h('a', { href: `#/queues?${new URLSearchParams({ rateAfter: page.nextAfter }).toString()}`, rel: 'next' }, 'Next rate keys') : null,
        ),
      );
    },
  };
}
