/** The dashboard's pure reading helpers: the lists' time window, the DAG's fan-out groups, and the page's durations and relative times. */
import { describe, expect, it } from 'vitest';
import { newId } from '../../src/db/ids.js';
import { jobCursorBefore, parseTimeWindow, runCursorBefore, withinWindow } from '../../src/dashboard/time-window.js';
import { drawnGraph, findGroups, GROUP_MIN } from '../../ui/dashboard/dag-groups.js';
import { chooseDirection, DAGRE_MAX_NODES, GRID_MIN, gridColumns, layoutGraph } from '../../ui/dashboard/dag-layout.js';
import { duration, relative, span } from '../../ui/dashboard/durations.js';

const step = (stepKey: string, status = 'SUCCEEDED', jobType: string | null = 'work') => ({
  stepKey,
  status,
  executionKind: jobType ? 'JOB' : 'EXTERNAL',
  jobType,
  stage: null,
  progress: null,
});
const edge = (from: string, to: string, releaseMode = 'ON_SUCCESS') => ({ prerequisiteStepKey: from, dependentStepKey: to, releaseMode });

describe('time window', () => {
  it('reads ISO 8601 bounds and refuses anything else, naming the field', () => {
    expect(parseTimeWindow(new URLSearchParams('from=2026-12-01T09:30:00Z&to=2026-12-02'))).toEqual({
      from: new Date('2026-12-01T09:30:00Z'),
      to: new Date('2026-12-02'),
    });
    expect(parseTimeWindow(new URLSearchParams(''))).toEqual({ from: null, to: null });
    for (const [query, field] of [
      ['from=yesterday', 'from'],
      ['to=2026-13-45', 'to'],
      // What `new Date` would take: a lone number (2001), a day past the month's end (rolled over), no zone (server-local).
      ['from=1', 'from'],
      ['to=2026-02-30', 'to'],
      ['from=2026-12-01T09:30', 'from'],
      ['from=2026-12-01T09:30:00z', 'from'],
      ['from=1969-12-31T23:59:59Z', 'from'],
      ['from=2026-12-02&to=2026-12-01', 'from'],
      ['to=1%00', 'to'],
    ]) {
      expect(() => parseTimeWindow(new URLSearchParams(query)), query).toThrow(
        expect.objectContaining({ code: 'dashboard.invalid_input', details: expect.objectContaining({ field }) }),
      );
    }
  });

  it('puts a job cursor above every UUIDv7 id made at or before `to`, and below every later one', async () => {
    const before = newId();
    const to = new Date();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const after = newId();
    const cursor = jobCursorBefore(to);
    expect(before < cursor).toBe(true);
    expect(after > cursor).toBe(true);
    expect(cursor).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-0000-0000-000000000000$/);
    expect(runCursorBefore(new Date(1_700_000_000_123))).toBe('1700000000123000:ffffffff-ffff-ffff-ffff-ffffffffffff');
  });

  it('drops rows outside the window and ends the list at the first row older than `from`', () => {
    const at = (iso: string) => ({ createdAt: new Date(iso) });
    const page = { items: [at('2026-12-01T12:00:00Z'), at('2026-12-01T10:00:00Z'), at('2026-12-01T08:00:00Z')], nextCursor: 'c' };
    expect(withinWindow(page, { from: new Date('2026-12-01T09:00:00Z'), to: null })).toEqual({ items: page.items.slice(0, 2), nextCursor: null });
    expect(withinWindow(page, { from: null, to: new Date('2026-12-01T11:00:00Z') })).toEqual({ items: page.items.slice(1), nextCursor: 'c' });
    expect(withinWindow(page, { from: null, to: null })).toBe(page);
  });
});

describe('DAG fan-out groups', () => {
  const wide = (n: number) => {
    const parts = Array.from({ length: n }, (_, i) => `part-${i}`);
    return {
      steps: [step('root'), ...parts.map((key) => step(key, key === 'part-3' ? 'FAILED' : 'SUCCEEDED')), step('merge')],
      edges: [...parts.map((key) => edge('root', key)), ...parts.map((key) => edge(key, 'merge', 'ON_TERMINAL'))],
    };
  };

  it('folds steps with the same kind, type, prerequisites and dependents into one node, in natural key order', () => {
    const { steps, edges } = wide(12);
    const groups = findGroups(steps, edges);
    expect([...groups.keys()]).toEqual(['group:part-0']);
    expect(groups.get('group:part-0')!.slice(0, 3)).toEqual(['part-0', 'part-1', 'part-2']);
    expect(groups.get('group:part-0')!.at(-1)).toBe('part-11');
    const graph = drawnGraph(steps, edges, groups, new Set());
    expect(graph.nodes.map((node) => node.key)).toEqual(['merge', 'group:part-0', 'root']);
    expect(graph.edges).toEqual([
      { from: 'root', to: 'group:part-0', releaseMode: 'ON_SUCCESS' },
      { from: 'group:part-0', to: 'merge', releaseMode: 'ON_TERMINAL' },
    ]);
    const group = graph.nodes[1]!;
    expect(group.kind === 'group' && group.group.counts).toEqual([
      ['SUCCEEDED', 11],
      ['FAILED', 1],
    ]);
  });

  it('draws an expanded group as its members, and never folds fewer than GROUP_MIN steps or steps whose edges differ', () => {
    const { steps, edges } = wide(12);
    const groups = findGroups(steps, edges);
    const expanded = drawnGraph(steps, edges, groups, new Set(['group:part-0']));
    expect(expanded.nodes.map((node) => node.key).slice(0, 3)).toEqual(['merge', 'part-0', 'part-1']);
    expect(expanded.nodes).toHaveLength(14);
    expect(expanded.nodes.findIndex((n) => n.key === 'part-2')).toBeLessThan(expanded.nodes.findIndex((n) => n.key === 'part-10'));
    const few = wide(GROUP_MIN - 1);
    expect(findGroups(few.steps, few.edges).size).toBe(0);
    // One part released on any outcome instead: it stands apart, the rest still fold.
    const { steps: s2, edges: e2 } = wide(12);
    e2[0] = edge('root', 'part-0', 'ON_TERMINAL');
    expect(findGroups(s2, e2).get('group:part-1')).toHaveLength(11);
  });
});

describe('DAG layout', () => {
  const options = (direction: 'TB' | 'LR') => ({ direction, nodeSep: 18, rankSep: 50, width: () => 168, height: () => 60 });

  it('lays out a graph past the dagre bound in ranks, parents before children, no two boxes overlapping', () => {
    // 30 chains of 20 after one root: 601 nodes.
    const steps = [step('root')];
    const edges = [];
    for (let c = 0; c < 30; c += 1) {
      for (let j = 0; j < 20; j += 1) {
        steps.push(step(`c${c}-${j}`, 'SUCCEEDED', `t${c}-${j}`));
        edges.push(edge(j === 0 ? 'root' : `c${c}-${j - 1}`, `c${c}-${j}`));
      }
    }
    expect(steps.length).toBeGreaterThan(DAGRE_MAX_NODES);
    const graph = drawnGraph(steps, edges, findGroups(steps, edges), new Set());
    for (const direction of ['TB', 'LR'] as const) {
      const { boxes, edges: points, width, height } = layoutGraph(graph, new Set(), options(direction));
      const along = (key: string) => (direction === 'TB' ? boxes.get(key)!.y : boxes.get(key)!.x);
      const across = (key: string) => (direction === 'TB' ? boxes.get(key)!.x : boxes.get(key)!.y);
      for (const e of edges) expect(along(e.prerequisiteStepKey)).toBeLessThan(along(e.dependentStepKey));
      // Chains side by side in key order (c2 before c10), each straight.
      expect(across('c2-0')).toBeLessThan(across('c10-0'));
      expect(across('c10-19')).toBe(across('c10-0'));
      const all = [...boxes.values()];
      for (const box of all) {
        expect(box.x + box.width).toBeLessThanOrEqual(width);
        expect(box.y + box.height).toBeLessThanOrEqual(height);
      }
      const rank1 = [...boxes.entries()]
        .filter(([key]) => key.endsWith('-0'))
        .map(([, box]) => box)
        .sort((a, b) => (direction === 'TB' ? a.x - b.x : a.y - b.y));
      for (let i = 1; i < rank1.length; i += 1) {
        if (direction === 'TB') expect(rank1[i]!.x).toBeGreaterThanOrEqual(rank1[i - 1]!.x + rank1[i - 1]!.width);
        else expect(rank1[i]!.y).toBeGreaterThanOrEqual(rank1[i - 1]!.y + rank1[i - 1]!.height);
      }
      expect(points.size).toBe(edges.length);
    }
  });

  it("places an expanded group's members in natural key order, with their edges", () => {
    const parts = Array.from({ length: 12 }, (_, i) => `part-${i}`);
    const steps = [step('root'), ...parts.map((key) => step(key)), step('merge')];
    const edges = [...parts.map((key) => edge('root', key)), ...parts.map((key) => edge(key, 'merge'))];
    const groups = findGroups(steps, edges);
    const expanded = new Set(groups.keys());
    const layout = layoutGraph(drawnGraph(steps, edges, groups, expanded), expanded, options('LR'));
    const ys = parts.map((key) => layout.boxes.get(key)!.y);
    expect([...ys].sort((a, b) => a - b)).toEqual(ys);
    // The edge into part-5 ends at part-5's box.
    const into = layout.edges.get(`root\u0000part-5`)!;
    const box = layout.boxes.get('part-5')!;
    expect(into.at(-1)!.y).toBeGreaterThanOrEqual(box.y);
    expect(into.at(-1)!.y).toBeLessThanOrEqual(box.y + box.height);
  });
});

describe('DAG layout of a large expanded group', () => {
  const options = (direction: 'TB' | 'LR') => ({ direction, nodeSep: 18, rankSep: 50, width: () => 168, height: () => 60 });
  const fan = (n: number) => {
    const parts = Array.from({ length: n }, (_, i) => `part-${i}`);
    const steps = [step('root'), ...parts.map((key, i) => step(key, i % 97 === 5 ? 'FAILED' : 'SUCCEEDED')), step('merge')];
    const edges = [...parts.map((key) => edge('root', key)), ...parts.map((key) => edge(key, 'merge', 'ON_TERMINAL'))];
    const groups = findGroups(steps, edges);
    const expanded = new Set(groups.keys());
    return { parts, graph: drawnGraph(steps, edges, groups, expanded), expanded, id: [...groups.keys()][0]! };
  };

  for (const n of [200, 2_000]) {
    it(`lays out ${n} members as a grid in reading order inside a frame, none overlapping, about 1.6 times as wide as high`, () => {
      const { parts, graph, expanded, id } = fan(n);
      for (const direction of ['TB', 'LR'] as const) {
        const layout = layoutGraph(graph, expanded, options(direction));
        const frame = layout.frames!.get(id)!;
        const boxes = parts.map((key) => layout.boxes.get(key)!);
        const cols = new Set(boxes.map((b) => b.x)).size;
        const rows = new Set(boxes.map((b) => b.y)).size;
        expect(cols).toBe(gridColumns(n, 186, 78));
        expect(rows).toBe(Math.ceil(n / cols));
        expect(frame.width / frame.height).toBeGreaterThan(1.2);
        expect(frame.width / frame.height).toBeLessThan(2.4);
        // Reading order: along a row, then the next row.
        for (let i = 1; i < boxes.length; i += 1) {
          const [a, b] = [boxes[i - 1]!, boxes[i]!];
          expect(b.y > a.y || (b.y === a.y && b.x >= a.x + a.width)).toBe(true);
        }
        // Inside the frame, below its label; nothing overlaps (cells of one size on a lattice: distinct corners suffice).
        for (const b of boxes) {
          expect(b.x).toBeGreaterThanOrEqual(frame.x);
          expect(b.y).toBeGreaterThanOrEqual(frame.y + 20);
          expect(b.x + b.width).toBeLessThanOrEqual(frame.x + frame.width);
          expect(b.y + b.height).toBeLessThanOrEqual(frame.y + frame.height);
        }
        expect(new Set(boxes.map((b) => `${b.x},${b.y}`)).size).toBe(n);
        // Root, grid, merge in rank order, apart; every member edge drawn to the frame.
        const root = layout.boxes.get('root')!;
        const merge = layout.boxes.get('merge')!;
        if (direction === 'LR') {
          expect(root.x + root.width).toBeLessThan(frame.x);
          expect(frame.x + frame.width).toBeLessThan(merge.x);
        } else {
          expect(root.y + root.height).toBeLessThan(frame.y);
          expect(frame.y + frame.height).toBeLessThan(merge.y);
        }
        const into = layout.edges.get('root\u0000part-7')!;
        expect(into).toEqual(layout.edges.get(`root\u0000part-${n - 1}`));
        expect(into.length).toBeGreaterThan(0);
        expect(layout.width).toBeGreaterThanOrEqual(frame.x + frame.width);
        expect(layout.height).toBeGreaterThanOrEqual(frame.y + frame.height);
      }
    });
  }

  it('draws a whole 1 -> 2,000 -> 1 run, in the direction it picks, within 12,000 x 8,000 (one column would be 156,000 high)', () => {
    // The 12-member group of the test above stays in its rank.
    expect(GRID_MIN).toBeGreaterThan(12);
    const { graph, expanded } = fan(2_000);
    const direction = chooseDirection(graph, expanded, { nodeSep: 18, rankSep: 50, width: () => 168, height: () => 60 }, { width: 900, height: 600 });
    expect(['TB', 'LR']).toContain(direction);
    const layout = layoutGraph(graph, expanded, options(direction));
    expect(layout.height).toBeLessThan(8_000);
    expect(layout.width).toBeLessThan(12_000);
  });
});

describe('durations and relative times', () => {
  it('writes a span in at most two units', () => {
    expect(span(850)).toBe('850 ms');
    expect(span(1_250)).toBe('1.25 s');
    expect(span(12_400)).toBe('12.4 s');
    expect(span(250_000)).toBe('4 min 10 s');
    expect(span(3 * 3_600_000 + 120_000)).toBe('3 h 2 min');
    expect(span(2 * 86_400_000 + 5 * 3_600_000)).toBe('2 d 5 h');
  });

  it('says how long ago or how soon, and how long something took or has taken so far', () => {
    const now = Date.parse('2026-12-01T12:00:00Z');
    expect(relative('2026-12-01T11:57:00Z', now)).toBe('3 min ago');
    expect(relative('2026-12-01T12:04:30Z', now)).toBe('in 4 min');
    expect(relative('2026-12-01T11:59:57.5Z', now)).toBe('2 s ago');
    expect(relative('2026-12-01T12:00:00.400Z', now)).toBe('now');
    expect(relative(null, now)).toBe('—');
    expect(duration('2026-12-01T11:00:00Z', '2026-12-01T11:00:01.5Z', now)).toBe('1.5 s');
    expect(duration('2026-12-01T11:00:00Z', null, now)).toBe('1 h so far');
  });
});
