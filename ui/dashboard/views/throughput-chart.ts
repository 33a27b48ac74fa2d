/**
 * The overview's chart of the last hour, minute by minute: jobs that
 * succeeded, were dead-lettered or canceled, and attempts that failed and will
 * be retried, as stacked bars in inline SVG (no chart library). Accessible
 * without the picture: the SVG's label summarizes the hour, and a table of
 * every minute sits in a <details> below it. Colours are the status colours of
 * the badges' borders, each at least 4.5:1 against the white background, and
 * each series is also named in the legend and the table.
 *
 * Swatch colours live in app.css (the page's CSP allows no inline style).
 *
 * Built once per visit and updated in place, so an open table stays open
 * across refreshes.
 */
import { h, replace, s } from '../dom.js';

export interface ThroughputMinute {
  minute: string;
  succeeded: number;
  deadLettered: number;
  canceled: number;
  retried: number;
}

export interface Throughput {
  from: string;
  to: string;
  minutes: ThroughputMinute[];
}

const SERIES = [
  { key: 'succeeded', label: 'succeeded', colour: '#15803d' },
  { key: 'deadLettered', label: 'dead-lettered', colour: '#b91c1c' },
  { key: 'canceled', label: 'canceled', colour: '#4b5563' },
  { key: 'retried', label: 'failed, will retry (attempts)', colour: '#c2410c' },
] as const;

const WIDTH = 720;
const HEIGHT = 160;
const LEFT = 36;
const BOTTOM = 20;
const TOP = 8;

const clock = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
const total = (m: ThroughputMinute) => m.succeeded + m.deadLettered + m.canceled + m.retried;

export function throughputChart(): { root: HTMLElement; update(data: Throughput): void } {
  const svgHolder = h('div', { class: 'chart-plot' });
  const legend = h(
    'ul',
    { class: 'chart-legend' },
    SERIES.map((series) => h('li', {}, h('span', { class: `swatch swatch-${series.key}` }), series.label)),
  );
  const tableHolder = h('div');
  const details = h('details', {}, h('summary', {}, 'Table of the minutes'), tableHolder);
  const root = h(
    'figure',
    { class: 'chart', 'data-testid': 'throughput' },
    h('figcaption', { id: 'throughput-title' }, 'Last hour, per minute'),
    svgHolder,
    legend,
    details,
  );

  return {
    root,
    update(data) {
      const sums = Object.fromEntries(SERIES.map((series) => [series.key, data.minutes.reduce((sum, m) => sum + m[series.key], 0)])) as Record<
        (typeof SERIES)[number]['key'],
        number
      >;
      root.dataset.from = data.from;
      root.dataset.to = data.to;
      for (const series of SERIES) root.dataset[`total${series.key[0]!.toUpperCase()}${series.key.slice(1)}`] = String(sums[series.key]);
      const busiest = data.minutes.reduce<ThroughputMinute | undefined>((best, m) => (best === undefined || total(m) > total(best) ? m : best), undefined);
      const summary =
        `Per minute from ${clock(data.from)} to ${clock(data.to)}: ${sums.succeeded} succeeded, ${sums.deadLettered} dead-lettered, ${sums.canceled} canceled, ` +
        `${sums.retried} failed attempts will retry.` +
        (busiest && total(busiest) > 0 ? ` Busiest minute ${clock(busiest.minute)} with ${total(busiest)}.` : ' Nothing finished.');

      const max = Math.max(1, ...data.minutes.map(total));
      const plotHeight = HEIGHT - TOP - BOTTOM;
      const slot = (WIDTH - LEFT) / Math.max(1, data.minutes.length);
      const y = (value: number) => TOP + plotHeight - (value / max) * plotHeight;
      const bars = data.minutes.map((m, index) => {
        let base = 0;
        const x = LEFT + index * slot;
        const rects = SERIES.filter((series) => m[series.key] > 0).map((series) => {
          const top = y(base + m[series.key]);
          const rect = s('rect', { x: x + 1, y: top, width: Math.max(1, slot - 2), height: y(base) - top, fill: series.colour });
          base += m[series.key];
          return rect;
        });
        return s(
          'g',
          {
            class: 'bar',
            'data-minute': m.minute,
            'data-succeeded': m.succeeded,
            'data-dead-lettered': m.deadLettered,
            'data-canceled': m.canceled,
            'data-retried': m.retried,
          },
          s('title', {}, `${clock(m.minute)}: ${SERIES.map((series) => `${m[series.key]} ${series.label}`).join(', ')}`),
          rects,
        );
      });
      const axis = [
        s('line', { x1: LEFT, y1: TOP + plotHeight, x2: WIDTH, y2: TOP + plotHeight, stroke: '#4b5563' }),
        s('text', { x: LEFT - 4, y: TOP + 10, 'text-anchor': 'end', class: 'chart-axis' }, max),
        s('text', { x: LEFT - 4, y: TOP + plotHeight, 'text-anchor': 'end', class: 'chart-axis' }, 0),
        s('text', { x: LEFT, y: HEIGHT - 4, class: 'chart-axis' }, clock(data.from)),
        s('text', { x: WIDTH, y: HEIGHT - 4, 'text-anchor': 'end', class: 'chart-axis' }, clock(data.to)),
      ];
      replace(svgHolder, s('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': summary, class: 'chart-svg' }, axis, bars));

      replace(
        tableHolder,
        h(
          'table',
          { class: 'chart-table' },
          h('caption', {}, summary),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { scope: 'col' }, 'minute'),
              SERIES.map((series) => h('th', { scope: 'col', class: 'num' }, series.label)),
            ),
          ),
          h(
            'tbody',
            {},
            data.minutes.map((m) =>
              h(
                'tr',
                {},
                h('th', { scope: 'row' }, clock(m.minute)),
                SERIES.map((series) => h('td', { class: 'num' }, m[series.key])),
              ),
            ),
          ),
        ),
      );
    },
  };
}
