/**
 * Times as an operator reads them: "3 min ago" / "in 5 s" beside the exact
 * local time (the element's title and datetime), and durations ("1.2 s",
 * "4 min 10 s"). Relative times are computed at render; every view renders
 * again on each refresh, so they stay current within a poll.
 */
import { h } from './dom.js';
import { parse, relative } from './durations.js';

export { duration, relative, span } from './durations.js';

/** A `<time>` element: relative text, the exact local time on hover and for assistive technology. */
export function timeAgo(value: string | null | undefined): HTMLElement | string {
  const at = parse(value);
  if (at === null) return '—';
  const exact = new Date(at).toLocaleString();
  return h('time', { datetime: new Date(at).toISOString(), title: exact }, relative(value));
}

/** Exact time, then the relative one in brackets: for detail pages, where both matter. */
export function timeBoth(value: string | null | undefined): HTMLElement | string {
  const at = parse(value);
  if (at === null) return '—';
  return h('span', {}, new Date(at).toLocaleString(), ' ', h('span', { class: 'muted' }, `(${relative(value)})`));
}
