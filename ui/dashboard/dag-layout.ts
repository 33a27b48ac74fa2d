/**
 * Where each node of the drawn graph goes. Up to DAGRE_MAX_NODES nodes,
 * dagre lays it out (crossing minimisation, edge routing); beyond that its
 * ordering passes grow too slow for a page (a 2,001-step run took 10.9 s in
 * Chromium on the test machine), so a layered layout does it in linear time:
 * ranks by longest path, each rank ordered by its nodes' parents' mean
 * position (then natural key), straight edges. Either way, the members of an
 * expanded fan-out group (identical edges, so any order crosses the same
 * edges) take their places in natural key order.
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
}

export interface LayoutOptions {
  direction: 'TB' | 'LR';
  nodeSep: number;
  rankSep: number;
  width(key: string): number;
  height: number;
}

const edgeId = (from: string, to: string) => `${from}\u0000${to}`;

function withDagre(graph: DrawnGraph, options: LayoutOptions): Layout {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: options.direction, nodesep: options.nodeSep, ranksep: options.rankSep, marginx: 4, marginy: 4 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.key, { width: options.width(node.key), height: options.height });
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
  const across = (key: string) => (tb ? options.width(key) : options.height);
  const alongSize = (layer: string[]) => Math.max(...layer.map((key) => (tb ? options.height : options.width(key))));
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
      boxes.set(key, tb ? { x: at, y: along, width: w, height: options.height } : { x: along, y: at, width: w, height: options.height });
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

export function layoutGraph(graph: DrawnGraph, expanded: ReadonlySet<string>, options: LayoutOptions): Layout {
  const layout = graph.nodes.length <= DAGRE_MAX_NODES ? withDagre(graph, options) : layered(graph, options);
  return membersInKeyOrder(graph, expanded, layout, options.direction);
}

export { edgeId };
