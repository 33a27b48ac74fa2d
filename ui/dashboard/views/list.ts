/** What the jobs and runs lists share: a filter form that writes the hash, and keyset paging links. */
import { h } from '../dom.js';
import { label } from '../format.js';

/** The search box's description, on the jobs and runs pages. */
export const SEARCH_HINT =
  'Search: the start of an id (4 or more hex digits, dashes optional), or part of an idempotency key (any case; key: before it searches keys only).';

export interface FilterField {
  name: string;
  label: string;
  options?: string[];
  /** With options: checkboxes, any number checked, written to the hash as one comma-separated value (`status=PENDING,LEASED`). */
  multiple?: boolean;
  /** A local date and time picker; the hash holds it as ISO 8601 (UTC), so a pasted link means the same instant anywhere. */
  datetime?: boolean;
  /** A datalist of suggestions for a text field (a type from the catalog); the field still takes any text. */
  suggestions?: () => Promise<string[]>;
  /** A sentence under the form that the control is described by (aria-describedby). */
  hint?: string;
  /** A checkbox: checked writes `name=1` to the hash, unchecked leaves it out. */
  flag?: boolean;
}

export function filterForm(base: string, query: URLSearchParams, fields: FilterField[]): HTMLFormElement {
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filters' });
  for (const field of fields) {
    const id = `filter-${field.name}`;
    if (field.options && field.multiple) {
      const chosen = new Set((query.get(field.name) ?? '').split(',').filter(Boolean));
      form.append(
        h(
          'fieldset',
          { class: 'checks', 'data-filter': field.name },
          h('legend', {}, field.label),
          field.options.map((option) =>
            h('label', {}, h('input', { type: 'checkbox', name: field.name, value: option, checked: chosen.has(option) }), ` ${label(option)}`),
          ),
        ),
      );
      continue;
    }
    if (field.flag) {
      form.append(
        h(
          'label',
          { class: 'flag' },
          h('input', { type: 'checkbox', name: field.name, value: '1', checked: query.get(field.name) === '1' }),
          ` ${field.label}`,
        ),
      );
      continue;
    }
    if (field.datetime) {
      const iso = query.get(field.name);
      const at = iso ? new Date(iso) : null;
      // datetime-local shows local time without a zone: the ISO instant converted to it.
      const local = at && !Number.isNaN(at.getTime()) ? new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16) : '';
      form.append(h('label', { for: id }, field.label), h('input', { id, name: field.name, type: 'datetime-local', value: local, 'data-datetime': true }));
      continue;
    }
    if (field.suggestions) {
      const list = h('datalist', { id: `${id}-list` });
      form.append(list);
      field.suggestions().then(
        (values) => list.replaceChildren(...values.map((value) => h('option', { value }))),
        () => undefined,
      );
    }
    const control = field.options
      ? h(
          'select',
          { id, name: field.name },
          h('option', { value: '' }, 'any'),
          field.options.map((option) => h('option', { value: option, selected: query.get(field.name) === option }, label(option))),
        )
      : h('input', {
          id,
          name: field.name,
          value: query.get(field.name) ?? '',
          autocomplete: 'off',
          type: field.name === 'q' ? 'search' : 'text',
          list: field.suggestions ? `${id}-list` : undefined,
          'aria-describedby': field.hint ? `${id}-hint` : undefined,
        });
    form.append(h('label', { for: id }, field.label), control);
  }
  for (const field of fields) if (field.hint) form.append(h('p', { id: `filter-${field.name}-hint`, class: 'muted small hint' }, field.hint));
  form.append(h('button', { type: 'submit' }, 'Apply'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    const datetimes = new Set([...form.querySelectorAll<HTMLInputElement>('input[data-datetime]')].map((input) => input.name));
    for (const [key, raw] of new FormData(form)) {
      if (typeof raw !== 'string' || raw.trim() === '') continue;
      const value = datetimes.has(key) ? new Date(raw).toISOString() : raw;
      // Several checked boxes of one field: one comma-separated value, so the link stays short and readable.
      params.set(key, params.has(key) ? `${params.get(key)},${value.trim()}` : value.trim());
    }
    location.hash = `${base}?${params.toString()}`;
  });
  return form;
}

/** What a search answer reports it searched (src/dashboard/search.ts SearchReport). */
export type SearchReport =
  | { kind: 'id_prefix'; prefix: string }
  | { kind: 'key_substring'; text: string; caseSensitive: false; searchedNewest: number; exactKeyAnyAge: boolean };

/** Says what the search box searched, and how to search the other way or further back. */
export function searchNote(base: string, query: URLSearchParams, report: SearchReport | undefined, noun: string): HTMLElement | null {
  if (!report) return null;
  if (report.kind === 'id_prefix') {
    const asKey = new URLSearchParams(query);
    asKey.set('q', `key:${query.get('q') ?? ''}`);
    asKey.delete('cursor');
    return h(
      'p',
      { class: 'search-note', 'data-testid': 'search-note', 'data-kind': report.kind },
      `${noun} whose id starts with ${report.prefix}. `,
      h('a', { href: `${base}?${asKey.toString()}` }, 'Search idempotency keys for this text instead'),
    );
  }
  const newest = report.searchedNewest.toLocaleString('en-US');
  return h(
    'p',
    { class: 'search-note', 'data-testid': 'search-note', 'data-kind': report.kind, 'data-searched-newest': report.searchedNewest },
    `${noun} whose idempotency key contains “${report.text}” (any case), among the newest ${newest} in scope. ` +
      (report.exactKeyAnyAge
        ? 'A key equal to it exactly is found at any age.'
        : `Searched the newest ${newest}; narrow by type for older: the exact key is then found at any age.`),
  );
}

export function pager(base: string, query: URLSearchParams, nextCursor: string | null): HTMLElement {
  const first = new URLSearchParams(query);
  first.delete('cursor');
  const next = new URLSearchParams(query);
  if (nextCursor) next.set('cursor', nextCursor);
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    query.get('cursor') ? h('a', { href: `${base}?${first.toString()}` }, 'First page') : null,
    nextCursor ? h('a', { href: `${base}?${next.toString()}`, rel: 'next' }, 'Next page') : h('span', { class: 'muted' }, 'Last page'),
  );
}

export function statusBadge(status: string): HTMLElement {
  return h('span', { class: `badge status-${status}` }, label(status));
}
