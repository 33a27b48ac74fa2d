/**
 * A job's event log, a page at a time (api/jobs/:id/events): the first page
 * comes with the job, later pages when asked and then kept, like the attempts.
 * A run of consecutive PROGRESS (or STAGE_CHANGED) events is one row saying
 * how many there were and the last value, expandable, so a job reporting
 * progress 339 times is one line, not an 11,000 px page. Payloads are shown
 * as `key: value` pairs, nested values as indented JSON on request.
 */
import { get } from '../api.js';
import { h } from '../dom.js';
import { json } from '../format.js';
import { timeAgo } from '../time.js';

export interface JobEvent {
  id: string;
  eventType: string;
  runNumber: number;
  attempt: number;
  payload: unknown;
  createdAt: string;
}

const FOLDED = new Set(['PROGRESS', 'STAGE_CHANGED']);

function scalar(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A payload as a short list of `key: value`; objects and arrays nested inside open on request. */
export function payloadView(payload: unknown): HTMLElement | string {
  if (payload === null || payload === undefined) return '';
  if (typeof payload !== 'object' || Array.isArray(payload)) return h('code', {}, scalar(payload));
  const entries = Object.entries(payload as Record<string, unknown>);
  if (entries.length === 0) return '';
  return h(
    'dl',
    { class: 'payload' },
    entries.flatMap(([key, value]) => [
      h('dt', {}, key),
      h(
        'dd',
        {},
        value !== null && typeof value === 'object'
          ? h(
              'details',
              {},
              h('summary', {}, Array.isArray(value) ? `${value.length} items` : `${Object.keys(value).length} fields`),
              h('pre', {}, json(value)),
            )
          : h('code', {}, scalar(value)),
      ),
    ]),
  );
}

function eventRow(event: JobEvent, extra?: string): HTMLElement {
  return h(
    'tr',
    { 'data-testid': 'event-row', 'data-event-type': event.eventType },
    h('td', {}, event.eventType, extra ? h('span', { class: 'muted' }, ` ${extra}`) : null),
    h('td', { class: 'num' }, event.runNumber),
    h('td', { class: 'num' }, event.attempt),
    h('td', {}, timeAgo(event.createdAt)),
    h('td', { class: 'wrap' }, payloadView(event.payload)),
  );
}

/** Rows of `events`, each run of consecutive folded events of one type as one row (the last event), expandable. */
function rows(events: JobEvent[], expanded: Set<string>, rerender: () => void): HTMLElement[] {
  const out: HTMLElement[] = [];
  for (let i = 0; i < events.length; ) {
    const event = events[i]!;
    let j = i + 1;
    if (FOLDED.has(event.eventType)) while (j < events.length && events[j]!.eventType === event.eventType) j += 1;
    const count = j - i;
    if (count < 3 || expanded.has(event.id)) {
      for (let k = i; k < j; k += 1) out.push(eventRow(events[k]!));
    } else {
      const last = events[j - 1]!;
      const row = eventRow(last, `×${count} (the last shown)`);
      row.dataset.folded = String(count);
      row.firstElementChild!.append(
        ' ',
        h(
          'button',
          {
            type: 'button',
            class: 'link',
            onclick: () => {
              expanded.add(event.id);
              rerender();
            },
          },
          `show all ${count}`,
        ),
      );
      out.push(row);
    }
    i = j;
  }
  return out;
}

export class EventLog {
  private later: JobEvent[] = [];
  private cursor: string | null = null;
  private loadedMore = false;
  private readonly expanded = new Set<string>();

  constructor(
    private readonly jobId: string,
    private readonly onError: (error: unknown) => void,
    private readonly rerender: () => void,
  ) {}

  private async more(firstCursor: string | null): Promise<void> {
    const cursor = this.loadedMore ? this.cursor : firstCursor;
    if (cursor === null) return;
    const page = await get<{ items: JobEvent[]; nextCursor: string | null }>(`jobs/${encodeURIComponent(this.jobId)}/events`, { cursor });
    this.later.push(...page.items);
    this.cursor = page.nextCursor;
    this.loadedMore = true;
  }

  render(first: JobEvent[], firstCursor: string | null): HTMLElement[] {
    const seen = new Set(first.map((e) => e.id));
    const events = [...first, ...this.later.filter((e) => !seen.has(e.id))];
    const hasMore = this.loadedMore ? this.cursor !== null : firstCursor !== null;
    return [
      h(
        'table',
        { class: 'list events', 'data-testid': 'events' },
        h('caption', { class: 'sr-only' }, 'Events of this job, oldest first'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['event', 'run', 'attempt', 'at', 'details'].map((name) => h('th', { scope: 'col' }, name)),
          ),
        ),
        h('tbody', {}, rows(events, this.expanded, this.rerender)),
      ),
      hasMore
        ? h('button', { type: 'button', onclick: () => this.more(firstCursor).then(this.rerender, this.onError) }, 'Show more events')
        : h('p', { class: 'muted small' }, `${events.length} events.`),
    ];
  }
}
