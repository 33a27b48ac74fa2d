/**
 * The DAG panel's minimap: every drawn node as a small rectangle in its
 * status colour, and the part of the graph the panel shows as a frame.
 * Clicking or dragging on it centres the panel there. It is a pointer aid
 * only (aria-hidden): the keyboard pans the graph itself, and "Find step"
 * reaches any step by key.
 */
import type { DrawnGraph } from './dag-groups.js';
import { s } from './dom.js';

const WIDTH = 180;
const HEIGHT = 120;

export class Minimap {
  readonly root: SVGSVGElement;
  private readonly nodesLayer: SVGGElement;
  private readonly frame: SVGRectElement;
  private scale = 1;
  private rects = new Map<string, SVGRectElement>();

  constructor(private readonly onCenter: (x: number, y: number) => void) {
    this.nodesLayer = s('g', {});
    this.frame = s('rect', { class: 'minimap-frame' });
    this.root = s(
      'svg',
      { class: 'minimap', width: WIDTH, height: HEIGHT, 'aria-hidden': 'true', 'data-testid': 'minimap' },
      s('rect', { class: 'minimap-bg', width: WIDTH, height: HEIGHT }),
      this.nodesLayer,
      this.frame,
    );
    let dragging = false;
    const center = (event: PointerEvent) => {
      const box = this.root.getBoundingClientRect();
      this.onCenter((event.clientX - box.left) / this.scale, (event.clientY - box.top) / this.scale);
    };
    this.root.addEventListener('pointerdown', (event) => {
      dragging = true;
      this.root.setPointerCapture(event.pointerId);
      center(event);
    });
    this.root.addEventListener('pointermove', (event) => {
      if (dragging) center(event);
    });
    this.root.addEventListener('pointerup', () => (dragging = false));
  }

  draw(graph: DrawnGraph, boxes: Map<string, { x: number; y: number; width: number; height: number }>, size: { width: number; height: number }): void {
    this.scale = size.width === 0 ? 1 : Math.min(WIDTH / size.width, HEIGHT / size.height);
    this.rects.clear();
    const rects: SVGRectElement[] = [];
    for (const [key, box] of boxes) {
      const rect = s('rect', {
        x: (box.x * this.scale).toFixed(1),
        y: (box.y * this.scale).toFixed(1),
        width: Math.max(1, box.width * this.scale).toFixed(1),
        height: Math.max(1, box.height * this.scale).toFixed(1),
      });
      this.rects.set(key, rect);
      rects.push(rect);
    }
    this.nodesLayer.replaceChildren(...rects);
    this.paint(graph);
  }

  paint(graph: DrawnGraph): void {
    for (const node of graph.nodes) {
      const status =
        node.kind === 'step' ? node.step.status : (node.group.counts.find(([st]) => st === 'FAILED')?.[0] ?? node.group.counts[0]?.[0] ?? 'BLOCKED');
      this.rects.get(node.key)?.setAttribute('class', `mini status-${status}`);
    }
  }

  showView(x: number, y: number, width: number, height: number): void {
    this.frame.setAttribute('x', (x * this.scale).toFixed(1));
    this.frame.setAttribute('y', (y * this.scale).toFixed(1));
    this.frame.setAttribute('width', Math.max(2, width * this.scale).toFixed(1));
    this.frame.setAttribute('height', Math.max(2, height * this.scale).toFixed(1));
  }
}
