/**
 * The timeline's time axis: real time to a position between 0 and 1, with
 * long idle stretches compressed, and its ticks. A stretch is idle when no
 * attempt of any step was running (an external wait, a retry backoff, work
 * that no worker claimed); one that takes at least LONG_WAIT_SHARE of the run
 * and LONG_WAIT_MIN_MS is drawn GAP_SHARE wide (a broken axis, labelled with
 * its true length), so an 8-minute wait does not squeeze every job bar to a
 * few pixels. Everything else keeps one rate, so the bars stay comparable.
 * Plain numbers, no DOM: the unit tests run it under Node.
 */

export const LONG_WAIT_SHARE = 0.2;
export const LONG_WAIT_MIN_MS = 5_000;
export const GAP_SHARE = 0.06;

export interface Gap {
  from: number;
  to: number;
}

export interface Scale {
  start: number;
  end: number;
  /** The compressed stretches, in time order. */
  gaps: Gap[];
  /** Position (0..1) of time `t`. */
  x(t: number): number;
  /** Display share per millisecond outside the gaps. */
  rate: number;
}

/** The stretches of [start, end] that no busy interval covers. */
export function idleStretches(start: number, end: number, busy: [number, number][]): Gap[] {
  const sorted = busy
    .map(([a, b]) => [Math.max(start, a), Math.min(end, b)] as [number, number])
    .filter(([a, b]) => b > a)
    .sort((p, q) => p[0] - q[0]);
  const idle: Gap[] = [];
  let cursor = start;
  for (const [a, b] of sorted) {
    if (a > cursor) idle.push({ from: cursor, to: a });
    cursor = Math.max(cursor, b);
  }
  if (end > cursor) idle.push({ from: cursor, to: end });
  return idle;
}

/** The idle stretches long enough to compress (none when nothing ran at all: there is nothing to make room for). */
export function longWaits(start: number, end: number, busy: [number, number][]): Gap[] {
  const total = end - start;
  const idle = idleStretches(start, end, busy);
  const long = idle.filter((gap) => gap.to - gap.from >= Math.max(LONG_WAIT_MIN_MS, LONG_WAIT_SHARE * total));
  const compressed = long.reduce((sum, gap) => sum + gap.to - gap.from, 0);
  return total - compressed > 0 ? long : [];
}

export function makeScale(start: number, end: number, gaps: Gap[]): Scale {
  const total = Math.max(1, end - start);
  const compressed = gaps.reduce((sum, gap) => sum + gap.to - gap.from, 0);
  const linear = total - compressed;
  const rate = gaps.length === 0 ? 1 / total : (1 - GAP_SHARE * gaps.length) / linear;
  const x = (t: number): number => {
    const clamped = Math.min(end, Math.max(start, t));
    let position = 0;
    let cursor = start;
    for (const gap of gaps) {
      if (clamped <= gap.from) break;
      position += (gap.from - cursor) * rate;
      if (clamped < gap.to) return position + (GAP_SHARE * (clamped - gap.from)) / (gap.to - gap.from);
      position += GAP_SHARE;
      cursor = gap.to;
    }
    return Math.min(1, position + (clamped - cursor) * rate);
  };
  return { start, end, gaps, x, rate };
}

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const STEPS = [
  1,
  2,
  5,
  10,
  20,
  50,
  100,
  200,
  500,
  SECOND,
  2 * SECOND,
  5 * SECOND,
  10 * SECOND,
  15 * SECOND,
  30 * SECOND,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  24 * HOUR,
  48 * HOUR,
  168 * HOUR,
];

/** The smallest round interval (1, 2, 5 ms ... 15 s, 30 s, 1 min ... 1 week) at least `ms` long. */
export function niceStep(ms: number): number {
  return STEPS.find((step) => step >= ms) ?? STEPS[STEPS.length - 1]!;
}

export interface Tick {
  /** Position (0..1) on the whole axis. */
  at: number;
  /** Time since the run's start. */
  offset: number;
}

/**
 * Ticks at round offsets from the run's start, about `count` across the
 * visible window [from, to] of the axis (positions 0..1), none inside a gap.
 */
export function ticks(scale: Scale, from: number, to: number, count = 8): Tick[] {
  const step = niceStep((to - from) / scale.rate / count);
  const out: Tick[] = [];
  let cursor = scale.start;
  for (const gap of [...scale.gaps, { from: scale.end, to: scale.end }]) {
    // The part of this stretch (cursor .. gap.from, drawn at one rate) that the window shows.
    const x0 = scale.x(cursor);
    const first = Math.max(cursor, cursor + (from - x0) / scale.rate);
    const last = Math.min(gap.from, cursor + (to - x0) / scale.rate);
    for (let k = Math.max(0, Math.ceil((first - scale.start) / step - 1e-9)); scale.start + k * step <= last + 1e-6 && out.length < 400; k += 1) {
      out.push({ at: scale.x(scale.start + k * step), offset: k * step });
    }
    cursor = gap.to;
  }
  return out;
}
