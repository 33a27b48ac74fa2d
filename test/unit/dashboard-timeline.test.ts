/** The run timeline's pure parts: the critical path through a run's DAG, and the time axis (long waits compressed, ticks). */
import { describe, expect, it } from 'vitest';
import { criticalPath, type PathEdge, type PathStep } from '../../ui/dashboard/critical-path.js';
import { GAP_SHARE, idleStretches, longWaits, makeScale, niceStep, ticks } from '../../ui/dashboard/timeline-scale.js';

const T0 = Date.parse('2026-12-03T10:00:00Z');
const iso = (ms: number | null) => (ms === null ? null : new Date(T0 + ms).toISOString());
/** A step created at `created`, released at `released`, ended at `finished` (ms after T0; null: not yet). */
const step = (stepKey: string, created: number, released: number | null, finished: number | null): PathStep => ({
  stepKey,
  createdAt: iso(created)!,
  releasedAt: iso(released),
  finishedAt: iso(finished),
});
const edges = (...pairs: [string, string][]): PathEdge[] => pairs.map(([a, b]) => ({ prerequisiteStepKey: a, dependentStepKey: b }));

describe('critical path', () => {
  it('is the whole of a chain', () => {
    const steps = [step('a', 0, 0, 100), step('b', 0, 100, 300), step('c', 0, 300, 350)];
    expect(criticalPath(steps, edges(['a', 'b'], ['b', 'c']), T0 + 1_000)).toEqual({ keys: ['a', 'b', 'c'], from: T0, to: T0 + 350 });
  });

  it('takes the longer arm of a diamond, whichever order the steps come in', () => {
    // a -> b (2 s) and a -> c (5 s) -> d: d waited for c.
    const steps = [step('a', 0, 0, 1_000), step('b', 0, 1_000, 3_000), step('c', 0, 1_000, 6_000), step('d', 0, 6_000, 7_000)];
    const dag = edges(['a', 'b'], ['a', 'c'], ['b', 'd'], ['c', 'd']);
    expect(criticalPath(steps, dag, T0 + 10_000)?.keys).toEqual(['a', 'c', 'd']);
    expect(criticalPath([...steps].reverse(), [...dag].reverse(), T0 + 10_000)?.keys).toEqual(['a', 'c', 'd']);
    // The other arm made longer: the path follows it.
    const slowB = steps.map((s) => (s.stepKey === 'b' ? step('b', 0, 1_000, 6_500) : s.stepKey === 'd' ? step('d', 0, 6_500, 7_500) : s));
    expect(criticalPath(slowB, dag, T0 + 10_000)?.keys).toEqual(['a', 'b', 'd']);
  });

  it('goes through the slowest member of a fan-out into its fan-in', () => {
    const members = Array.from({ length: 50 }, (_, i) => step(`part-${i}`, 0, 100, i === 37 ? 9_000 : 200 + i * 10));
    const steps = [step('root', 0, 0, 100), ...members, step('merge', 0, 9_000, 9_400)];
    const dag = edges(
      ...members.flatMap((m): [string, string][] => [
        ['root', m.stepKey],
        [m.stepKey, 'merge'],
      ]),
    );
    expect(criticalPath(steps, dag, T0 + 20_000)).toEqual({ keys: ['root', 'part-37', 'merge'], from: T0, to: T0 + 9_400 });
  });

  it('starts at an appended step when its prerequisites had ended before it was added', () => {
    // a and b ran; c was appended after b at 60 s and ran to 61 s.
    const steps = [step('a', 0, 0, 1_000), step('b', 0, 1_000, 2_000), step('c', 60_000, 60_000, 61_000)];
    expect(criticalPath(steps, edges(['a', 'b'], ['b', 'c']), T0 + 90_000)).toEqual({ keys: ['c'], from: T0 + 60_000, to: T0 + 61_000 });
    // Appended while b still ran: b held it back, so the chain goes on through b.
    const early = [step('a', 0, 0, 1_000), step('b', 0, 1_000, 70_000), step('c', 60_000, 70_000, 71_000)];
    expect(criticalPath(early, edges(['a', 'b'], ['b', 'c']), T0 + 90_000)?.keys).toEqual(['a', 'b', 'c']);
  });

  it('ends at now on the step still running, and leaves out steps that have not begun', () => {
    // a done; b running (released, not finished); c blocked behind b; d waiting for an external completion since 2 s.
    const steps = [step('a', 0, 0, 1_000), step('b', 0, 1_000, null), step('c', 0, null, null), step('d', 0, 2_000, null)];
    const now = T0 + 5_000;
    expect(criticalPath(steps, edges(['a', 'b'], ['b', 'c'], ['a', 'd']), now)).toEqual({ keys: ['a', 'b'], from: T0, to: now });
    // Nothing released yet: no path.
    expect(criticalPath([step('x', 0, null, null)], [], now)).toBeNull();
  });

  it('follows a step canceled by the cascade back to the failure that canceled it', () => {
    const steps = [step('extract', 0, 0, 500), step('transform', 0, 500, 900), step('load', 0, null, 905), step('audit', 0, 0, 300)];
    expect(criticalPath(steps, edges(['extract', 'transform'], ['transform', 'load']), T0 + 2_000)?.keys).toEqual(['extract', 'transform', 'load']);
  });
});

describe('timeline axis', () => {
  it('finds the stretches no attempt covers', () => {
    expect(
      idleStretches(0, 100, [
        [10, 20],
        [15, 30],
        [50, 60],
      ]),
    ).toEqual([
      { from: 0, to: 10 },
      { from: 30, to: 50 },
      { from: 60, to: 100 },
    ]);
    expect(idleStretches(0, 100, [[-5, 200]])).toEqual([]);
  });

  it('compresses an 8-minute external wait between seconds of work, and labels it with its true length', () => {
    // 3 jobs of 2 s, then 8 min waiting for a person, then 2 jobs of 2 s.
    const busy: [number, number][] = [
      [0, 2_000],
      [2_000, 4_000],
      [4_000, 6_000],
      [486_000, 488_000],
      [488_000, 490_000],
    ];
    const gaps = longWaits(0, 490_000, busy);
    expect(gaps).toEqual([{ from: 6_000, to: 486_000 }]);
    const scale = makeScale(0, 490_000, gaps);
    // The wait is GAP_SHARE of the axis; the 10 s of work share the rest at one rate: a 2 s job is 18.8% wide, not 0.4%.
    expect(scale.x(486_000) - scale.x(6_000)).toBeCloseTo(GAP_SHARE, 9);
    expect(scale.x(2_000) - scale.x(0)).toBeCloseTo((1 - GAP_SHARE) / 5, 9);
    expect(scale.x(490_000) - scale.x(488_000)).toBeCloseTo((1 - GAP_SHARE) / 5, 9);
    expect(scale.x(0)).toBe(0);
    expect(scale.x(490_000)).toBeCloseTo(1, 9);
    // Monotonic everywhere, inside the gap too.
    let previous = -1;
    for (let t = 0; t <= 490_000; t += 1_000) {
      expect(scale.x(t)).toBeGreaterThan(previous);
      previous = scale.x(t);
    }
  });

  it('leaves short waits, sub-second runs and runs with no work to scale', () => {
    // A 1 s queue wait among 2 s jobs: under LONG_WAIT_MIN_MS.
    expect(
      longWaits(0, 5_000, [
        [0, 2_000],
        [3_000, 5_000],
      ]),
    ).toEqual([]);
    // A 10 s wait in 100 s of work: under LONG_WAIT_SHARE.
    expect(
      longWaits(0, 110_000, [
        [0, 50_000],
        [60_000, 110_000],
      ]),
    ).toEqual([]);
    // Only waiting (an external step alone): nothing to make room for.
    expect(longWaits(0, 600_000, [])).toEqual([]);
    const linear = makeScale(0, 1_000, []);
    expect(linear.x(250)).toBeCloseTo(0.25, 9);
  });

  it('puts ticks at round offsets, none inside a gap, and finer ones when zoomed in', () => {
    expect(niceStep(7)).toBe(10);
    expect(niceStep(40_000)).toBe(60_000);
    expect(niceStep(1_000)).toBe(1_000);
    const linear = makeScale(0, 60_000, []);
    expect(ticks(linear, 0, 1, 6).map((tick) => tick.offset)).toEqual([0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
    // Zoomed on the first quarter: 15 s at about 6 ticks gives a tick every 5 s (rounded up from 2.5 s).
    const zoomed = ticks(linear, 0, 0.25, 6);
    expect(zoomed.map((tick) => tick.offset)).toEqual([0, 5_000, 10_000, 15_000]);
    // Zoomed on the last quarter: its ticks only, none before.
    expect(ticks(linear, 0.75, 1, 6).map((tick) => tick.offset)).toEqual([45_000, 50_000, 55_000, 60_000]);

    const gap = { from: 6_000, to: 486_000 };
    const broken = makeScale(0, 490_000, [gap]);
    const marks = ticks(broken, 0, 1, 8);
    expect(marks.length).toBeGreaterThan(3);
    for (const tick of marks) expect(tick.offset <= gap.from || tick.offset >= gap.to).toBe(true);
    expect(marks.map((tick) => tick.offset)).toContain(488_000);
  });
});
