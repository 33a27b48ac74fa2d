/**
 * Durations ("1.2 s", "4 min 10 s") and relative times ("3 min ago", "in 5 s"),
 * as plain text: no DOM here, so the unit tests run them under Node.
 */
export function parse(value: string | null | undefined): number | null {
  if (!value) return null;
  const at = new Date(value).getTime();
  return Number.isNaN(at) ? null : at;
}

/** A span of milliseconds in at most two units: `850 ms`, `12.4 s`, `4 min 10 s`, `3 h 2 min`, `2 d 5 h`. */
export function span(ms: number): string {
  const abs = Math.max(0, ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  if (abs < 60_000) return `${(abs / 1000).toFixed(abs < 10_000 ? 2 : 1).replace(/\.?0+$/, '')} s`;
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
  return `${Math.floor(s / 86_400)} d${Math.floor((s % 86_400) / 3600) ? ` ${Math.floor((s % 86_400) / 3600)} h` : ''}`;
}

/** `3 min ago` for the past, `in 3 min` for the future, `now` within a second. */
export function relative(value: string | null | undefined, now = Date.now()): string {
  const at = parse(value);
  if (at === null) return '—';
  const delta = at - now;
  if (Math.abs(delta) < 1000) return 'now';
  const text = span(Math.abs(delta))
    .replace(/ \d+ (ms|s|min|h)$/, '')
    .replace(/^(\d+)\.\d+ s$/, '$1 s');
  return delta < 0 ? `${text} ago` : `in ${text}`;
}

/** The duration between two times; to `now` (and marked running) when the end is missing. */
export function duration(from: string | null | undefined, to: string | null | undefined, now = Date.now()): string {
  const start = parse(from);
  if (start === null) return '—';
  const end = parse(to);
  return end === null ? `${span(now - start)} so far` : span(end - start);
}
