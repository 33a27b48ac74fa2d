/** What the jobs and runs lists share: a filter form that writes the hash, and keyset paging links. */
import { h } from '../dom.js';
import { label } from '../format.js';

export interface FilterField {
  name: string;
  label: string;
  options?: string[];
}

export function filterForm(base: string, query: URLSearchParams, fields: FilterField[]): HTMLFormElement {
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filters' });
  for (const field of fields) {
    const id = `filter-${field.name}`;
    const control = field.options
      ? h('select', { id, name: field.name }, h('option', { value: '' }, 'any'), field.options.map((option) => h('option', { value: option, selected: query.get(field.name) === option }, label(option))))
      : h('input', { id, name: field.name, value: query.get(field.name) ?? '', autocomplete: 'off' });
    form.append(h('label', { for: id }, field.label), control);
  }
  form.append(h('button', { type: 'submit' }, 'Apply'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (typeof value === 'string' && value.trim() !== '') params.set(key, value.trim());
    location.hash = `${base}?${params.toString()}`;
  });
  return form;
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
