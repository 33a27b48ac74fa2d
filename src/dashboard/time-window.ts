/**
 * The lists' time range (`from`, `to`: ISO 8601, on the rows' creation time)
 * without a statement of its own: both lists are keyset pages newest first,
 * so `to` is a starting cursor (jobs: ids are UUIDv7, whose first 48 bits
 * are the creation millisecond; runs: the (created_at, id) cursor) and `from`
 * is where paging stops (the first row older than it ends the list). The
 * library's list statements, and their pinned plans, are unchanged.
 * A search (`q`) reads its own bounded window; there the range only filters
 * the matches.
 */
import { ValidationError } from '../errors/runledger-error.js';
import type { Page } from '../queue/inputs.js';
import { ISO_TIME_EXAMPLE, parseIsoTime } from '../validation/iso-time.js';

export interface TimeWindow {
  from: Date | null;
  to: Date | null;
}

function parseTime(name: 'from' | 'to', value: string | null): Date | null {
  if (value === null || value === '') return null;
  const at = parseIsoTime(value);
  // Not before 1970: `to` becomes a UUIDv7 cursor, whose millisecond count cannot be negative.
  if (!at || at.getUTCFullYear() < 1970) {
    throw new ValidationError('dashboard.invalid_input', name, `${name} is a date and time in ISO 8601 (1970 or later), such as ${ISO_TIME_EXAMPLE}.`);
  }
  return at;
}

export function parseTimeWindow(query: URLSearchParams): TimeWindow {
  const from = parseTime('from', query.get('from'));
  const to = parseTime('to', query.get('to'));
  if (from && to && from > to) throw new ValidationError('dashboard.invalid_input', 'from', 'from is at or before to.');
  return { from, to };
}

/** A job-list cursor below every job id (UUIDv7) created at or before `to`. */
export function jobCursorBefore(to: Date): string {
  const hex = (to.getTime() + 1).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** A run-list cursor below every run created at or before `to`. */
export function runCursorBefore(to: Date): string {
  return `${to.getTime() * 1000}:ffffffff-ffff-ffff-ffff-ffffffffffff`;
}

/** The page within the window: rows outside it dropped, and no next page once a row older than `from` was seen. */
export function withinWindow<T extends { createdAt: Date }, P extends Page<T>>(page: P, window: TimeWindow): P {
  if (!window.from && !window.to) return page;
  const items = page.items.filter((item) => (!window.from || item.createdAt >= window.from) && (!window.to || item.createdAt <= window.to));
  const crossed = window.from !== null && page.items.some((item) => item.createdAt < window.from!);
  return { ...page, items, nextCursor: crossed ? null : page.nextCursor };
}
