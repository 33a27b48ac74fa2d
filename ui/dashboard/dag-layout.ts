/**
 * Where each node of the drawn graph goes. Up to DAGRE_MAX_NODES nodes,
 * dagre lays it out (crossing minimisation, edge routing); beyond that its
 * ordering passes grow too slow for a page (a 2,001-step run took 10.9 s in
 * Chromium on the test machine), so a layered layout does it in linear time:
 * ranks by longest path, each rank ordered by its nodes' parents' mean
 * position (then natural key), straight edges. Either way, the members of an
 * expanded fan-out group (identical edges, so any order crosses the same
 * edges) take their places in natural key order; a group of GRID_MIN
 * members or more is laid out as a grid inside a frame, in reading order
 * (a 2,000-member group is a block about 1.6 times as wide as it is high,
 * not a column 2,000 nodes long), with its shared edges drawn to the frame.
 */
import dagre from '@dagrejs/dagre';
import { byKey, type DrawnGraph } from './dag-groups.js';

export const DAGRE_MAX_NODES = 400;

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Layout {
  boxes: Map<string, Box>;
  /** Edge points by `from\u0000to`. */
  edges: Map<string, { x: number; y: number }[]>;
  width: number;
  height: number;
  /** The frame around each expanded group laid out as a grid, by group id. */
  frames?: Map<string, Box>;
}

export interface LayoutOptions {
  direction: 'TB' | 'LR';
  nodeSep: number;
  rankSep: number;
  width(key: string): number;
  height(key: string): number;
}

const edgeId = (from: string, to: string) => `${from}\u0000${to}`;

function withDagre(graph: DrawnGraph, options: LayoutOptions): Layout {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: options.direction, nodesep: options.nodeSep, ranksep: options.rankSep, marginx: 4, marginy: 4 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.key, { width: options.width(node.key), height: options.height(node.key) });
  for (const edge of graph.edges) g.setEdge(edge.from, edge.to);
  dagre.layout(g);
  const boxes = new Map<string, Box>();
  for (const node of graph.nodes) {
    const b = g.node(node.key);
    boxes.set(node.key, { x: b.x - b.width / 2, y: b.y - b.height / 2, width: b.width, height: b.height });
  }
  const edges = new Map<string, { x: number; y: number }[]>();
  for (const edge of graph.edges) edges.set(edgeId(edge.from, edge.to), g.edge(edge.from, edge.to)?.points ?? []);
  const bounds = g.graph();
  return { boxes, edges, width: bounds.width ?? 0, height: bounds.height ?? 0 };
}

/** Longest-path ranks (Kahn's order; a cycle, which a run never has, would leave nodes at rank 0). */
export function ranks(graph: DrawnGraph): Map<string, number> {
  const incoming = new Map<string, number>();
  const outgoing = new Map<string, string[]>();
  for (const node of graph.nodes) incoming.set(node.key, 0);
  for (const edge of graph.edges) {
    incoming.set(edge.to, (incoming.get(edge.to) ?? 0) + 1);
    (outgoing.get(edge.from) ?? outgoing.set(edge.from, []).get(edge.from)!).push(edge.to);
  }
  const rank = new Map<string, number>();
  const queue = graph.nodes.filter((node) => incoming.get(node.key) === 0).map((node) => node.key);
  for (const key of queue) rank.set(key, 0);
  for (let i = 0; i < queue.length; i += 1) {
    const key = queue[i]!;
    for (const next of outgoing.get(key) ?? []) {
      rank.set(next, Math.max(rank.get(next) ?? 0, rank.get(key)! + 1));
      const left = incoming.get(next)! - 1;
      incoming.set(next, left);
      if (left === 0) queue.push(next);
    }
  }
  for (const node of graph.nodes) if (!rank.has(node.key)) rank.set(node.key, 0);
  return rank;
}

function layered(graph: DrawnGraph, options: LayoutOptions): Layout {
  const rank = ranks(graph);
  const parents = new Map<string, string[]>();
  for (const edge of graph.edges) (parents.get(edge.to) ?? parents.set(edge.to, []).get(edge.to)!).push(edge.from);
  const layers: string[][] = [];
  for (const node of graph.nodes) {
    const rankOf = rank.get(node.key)!;
    layers[rankOf] ??= [];
    layers[rankOf].push(node.key);
  }
  const index = new Map<string, number>();
  for (const layer of layers) {
    if (!layer) continue;
    const mean = (key: string) => {
      const ps = (parents.get(key) ?? []).map((p) => index.get(p) ?? 0);
      return ps.length === 0 ? 0 : ps.reduce((a, b) => a + b, 0) / ps.length;
    };
    const weight = new Map(layer.map((key) => [key, mean(key)]));
    layer.sort((a, b) => weight.get(a)! - weight.get(b)! || byKey(a, b));
    for (const [i, key] of layer.entries()) index.set(key, i);
  }
  const tb = options.direction === 'TB';
  const across = (key: string) => (tb ? options.width(key) : options.height(key));
  const alongSize = (layer: string[]) => Math.max(...layer.map((key) => (tb ? options.height(key) : options.width(key))));
  const layerSpan = layers.map((layer) => (layer ? layer.reduce((sum, key) => sum + across(key), 0) + options.nodeSep * (layer.length - 1) : 0));
  const widest = Math.max(0, ...layerSpan);
  const boxes = new Map<string, Box>();
  let along = 4;
  layers.forEach((layer, r) => {
    if (!layer) return;
    let at = 4 + (widest - layerSpan[r]!) / 2;
    const size = alongSize(layer);
    for (const key of layer) {
      const w = options.width(key);
      const ht = options.height(key);
      boxes.set(key, tb ? { x: at, y: along, width: w, height: ht } : { x: along, y: at, width: w, height: ht });
      at += across(key) + options.nodeSep;
    }
    along += size + options.rankSep;
  });
  const edges = new Map<string, { x: number; y: number }[]>();
  for (const edge of graph.edges) {
    const a = boxes.get(edge.from)!;
    const b = boxes.get(edge.to)!;
    edges.set(
      edgeId(edge.from, edge.to),
      tb
        ? [
            { x: a.x + a.width / 2, y: a.y + a.height },
            { x: b.x + b.width / 2, y: b.y },
          ]
        : [
            { x: a.x + a.width, y: a.y + a.height / 2 },
            { x: b.x, y: b.y + b.height / 2 },
          ],
    );
  }
  return { boxes, edges, width: widest + 8, height: along - options.rankSep + 4, ...(tb ? {} : { width: along - options.rankSep + 4, height: widest + 8 }) };
}

/**
 * The members of each expanded group, which share every edge, placed in
 * natural key order: each takes the position (and edges) of the slot its
 * rank in key order gives it.
 */
function membersInKeyOrder(graph: DrawnGraph, expanded: ReadonlySet<string>, layout: Layout, direction: 'TB' | 'LR'): Layout {
  const slotOf = new Map<string, string>();
  for (const id of expanded) {
    const members =
      graph.groups
        .get(id)
        ?.members.map((m) => m.stepKey)
        .filter((key) => layout.boxes.has(key)) ?? [];
    const slots = [...members].sort((a, b) => {
      const pa = layout.boxes.get(a)!;
      const pb = layout.boxes.get(b)!;
      return direction === 'TB' ? pa.x - pb.x || pa.y - pb.y : pa.y - pb.y || pa.x - pb.x;
    });
    for (const [i, key] of members.entries()) slotOf.set(key, slots[i]!);
  }
  if (slotOf.size === 0) return layout;
  const slot = (key: string) => slotOf.get(key) ?? key;
  const boxes = new Map([...layout.boxes.keys()].map((key) => [key, layout.boxes.get(slot(key))!]));
  const edges = new Map(graph.edges.map((edge) => [edgeId(edge.from, edge.to), layout.edges.get(edgeId(slot(edge.from), slot(edge.to))) ?? []]));
  return { ...layout, boxes, edges };
}

/** Expanded groups of at least this many members are laid out as a grid, in reading order, inside a frame. */
export const GRID_MIN = 13;
export const FRAME_PAD = 12;
export const FRAME_TOP = 30;
/** A grid's width to its height: about a panel's. */
const GRID_ASPECT = 1.6;

interface Block {
  id: string;
  key: string;
  members: string[];
  cols: number;
  cell: { width: number; height: number };
  width: number;
  height: number;
}

/** Columns for `n` cells of the given size, so that the grid is about GRID_ASPECT wide for 1 high. */
export function gridColumns(n: number, cellWidth: number, cellHeight: number): number {
  return Math.max(1, Math.min(n, Math.round(Math.sqrt((n * GRID_ASPECT * cellHeight) / cellWidth))));
}

/**
 * The graph the layout sees: each large expanded group as one node (its grid's frame). Its members share
 * every edge (that is what made them a group), so edges to the frame say all the members' edges say.
 */
function reduce(graph: DrawnGraph, expanded: ReadonlySet<string>, options: Omit<LayoutOptions, 'direction'>) {
  const blocks = new Map<string, Block>();
  const blockOf = new Map<string, string>();
  for (const id of expanded) {
    const members = graph.groups.get(id)?.members.map((m) => m.stepKey) ?? [];
    if (members.length < GRID_MIN) continue;
    const cell = { width: Math.max(...members.map((key) => options.width(key))), height: Math.max(...members.map((key) => options.height(key))) };
    const cols = gridColumns(members.length, cell.width + options.nodeSep, cell.height + options.nodeSep);
    const rows = Math.ceil(members.length / cols);
    const key = `frame:${id}`;
    blocks.set(key, {
      id,
      key,
      members,
      cols,
      cell,
      width: FRAME_PAD * 2 + cols * cell.width + (cols - 1) * options.nodeSep,
      height: FRAME_TOP + FRAME_PAD + rows * cell.height + (rows - 1) * options.nodeSep,
    });
    for (const member of members) blockOf.set(member, key);
  }
  if (blocks.size === 0) return { graph, blocks, blockOf, options };
  const nodes: DrawnGraph['nodes'] = [];
  for (const node of graph.nodes) {
    const block = blockOf.get(node.key);
    if (block === undefined) nodes.push(node);
    else if (blocks.get(block)!.members[0] === node.key) nodes.push({ kind: 'group', key: block, group: graph.groups.get(blocks.get(block)!.id)! });
  }
  const seen = new Set<string>();
  const edges: DrawnGraph['edges'] = [];
  for (const edge of graph.edges) {
    const from = blockOf.get(edge.from) ?? edge.from;
    const to = blockOf.get(edge.to) ?? edge.to;
    if (from === to || seen.has(edgeId(from, to))) continue;
    seen.add(edgeId(from, to));
    edges.push({ from, to, releaseMode: edge.releaseMode });
  }
  const sized = {
    ...options,
    width: (key: string) => blocks.get(key)?.width ?? options.width(key),
    height: (key: string) => blocks.get(key)?.height ?? options.height(key),
  };
  return { graph: { ...graph, nodes, edges }, blocks, blockOf, options: sized };
}

/**
 * TB or LR: the one whose drawing, estimated rank by rank from the nodes' sizes (a grid's frame included),
 * fits a panel of `panel` at the larger scale.
 */
export function chooseDirection(
  graph: DrawnGraph,
  expanded: ReadonlySet<string>,
  options: Omit<LayoutOptions, 'direction'>,
  panel: { width: number; height: number },
): 'TB' | 'LR' {
  const reduced = reduce(graph, expanded, options);
  const rankOf = ranks(reduced.graph);
  const perRank = new Map<number, { widest: number; tallest: number; widths: number; heights: number; n: number }>();
  for (const node of reduced.graph.nodes) {
    const w = reduced.options.width(node.key);
    const ht = reduced.options.height(node.key);
    const r = perRank.get(rankOf.get(node.key)!) ?? { widest: 0, tallest: 0, widths: 0, heights: 0, n: 0 };
    perRank.set(rankOf.get(node.key)!, {
      widest: Math.max(r.widest, w),
      tallest: Math.max(r.tallest, ht),
      widths: r.widths + w,
      heights: r.heights + ht,
      n: r.n + 1,
    });
  }
  const layers = [...perRank.values()];
  const seps = (n: number, sep: number) => Math.max(0, n - 1) * sep;
  const lr = {
    width: layers.reduce((sum, r) => sum + r.widest, 0) + seps(layers.length, options.rankSep),
    height: Math.max(...layers.map((r) => r.heights + seps(r.n, options.nodeSep))),
  };
  const tb = {
    width: Math.max(...layers.map((r) => r.widths + seps(r.n, options.nodeSep))),
    height: layers.reduce((sum, r) => sum + r.tallest, 0) + seps(layers.length, options.rankSep),
  };
  const scaleFor = (size: { width: number; height: number }) => Math.min(panel.width / size.width, panel.height / size.height);
  return scaleFor(tb) > scaleFor(lr) ? 'TB' : 'LR';
}

export function layoutGraph(graph: DrawnGraph, expanded: ReadonlySet<string>, options: LayoutOptions): Layout {
  const reduced = reduce(graph, expanded, options);
  const sized = { ...reduced.options, direction: options.direction };
  const base = reduced.graph.nodes.length <= DAGRE_MAX_NODES ? withDagre(reduced.graph, sized) : layered(reduced.graph, sized);
  const layout = membersInKeyOrder(reduced.graph, expanded, base, options.direction);
  if (reduced.blocks.size === 0) return layout;
  const boxes = new Map(layout.boxes);
  const frames = new Map<string, Box>();
  for (const block of reduced.blocks.values()) {
    const frame = boxes.get(block.key)!;
    boxes.delete(block.key);
    frames.set(block.id, frame);
    for (const [i, key] of block.members.entries()) {
      boxes.set(key, {
        x: frame.x + FRAME_PAD + (i % block.cols) * (block.cell.width + options.nodeSep),
        y: frame.y + FRAME_TOP + Math.floor(i / block.cols) * (block.cell.height + options.nodeSep),
        width: block.cell.width,
        height: block.cell.height,
      });
    }
  }
  const at = (key: string) => reduced.blockOf.get(key) ?? key;
  const edges = new Map(graph.edges.map((edge) => [edgeId(edge.from, edge.to), layout.edges.get(edgeId(at(edge.from), at(edge.to))) ?? []]));
  return { boxes, edges, width: layout.width, height: layout.height, frames };
}

export { edgeId };
