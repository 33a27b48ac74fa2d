/**
 * A run's DAG as SVG, laid out by dagre (left to right). Steps are coloured by
 * status and also say it in words (colour is never the only cue); an
 * ON_SUCCESS edge is solid, an ON_TERMINAL edge dashed with a hollow arrow.
 * Pan by dragging or with the arrow keys, zoom with the wheel, +/- or the
 * buttons, 0 fits the whole run. A refresh with the same steps and edges only
 * recolours the nodes, so the view (and the keyboard focus) stays where it is.
 */
import dagre from '@dagrejs/dagre';
import { h, s } from './dom.js';
import { label, progressText } from './format.js';

export interface DagStep {
  stepKey: string;
  status: string;
  executionKind: string;
  jobType: string | null;
  stage: string | null;
  progress: unknown;
}
export interface DagEdge {
  prerequisiteStepKey: string;
  dependentStepKey: string;
  releaseMode: string;
}

const NODE_HEIGHT = 46;
const MAX_LABEL = 24;

function shorten(text: string): string {
  return text.length > MAX_LABEL ? `${text.slice(0, MAX_LABEL - 1)}…` : text;
}

/** Stage and progress, when the step's job reports them (a hover tooltip and the screen-reader label say it). */
function stageText(step: DagStep): string {
  return [step.stage && `stage ${step.stage}`, step.progress != null && `progress ${progressText(step.progress)}`].filter(Boolean).join(', ');
}

function nodeLabel(step: DagStep): string {
  const stage = stageText(step);
  return `step ${step.stepKey}, ${step.executionKind === 'EXTERNAL' ? 'external' : (step.jobType ?? 'job')}, ${label(step.status)}${stage ? `, ${stage}` : ''}`;
}

function nodeTitle(step: DagStep): string {
  const stage = stageText(step);
  return stage ? `${step.stepKey}\n${stage}` : step.stepKey;
}

export class DagView {
  readonly root: HTMLElement;
  private readonly svg: SVGSVGElement;
  private readonly viewport: SVGGElement;
  private signature = '';
  private nodes = new Map<string, SVGGElement>();
  private view = { x: 20, y: 20, k: 1 };
  private size = { width: 0, height: 0 };
  private fitted = false;

  constructor(private readonly onSelect: (stepKey: string) => void) {
    this.viewport = s('g', { class: 'viewport' });
    this.svg = s(
      'svg',
      { class: 'dag', role: 'group', 'aria-label': 'Workflow graph. Arrow keys pan, plus and minus zoom, 0 fits the run.', tabindex: 0 },
      s(
        'defs',
        {},
        s('marker', { id: 'arrow-success', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-success' })),
        s('marker', { id: 'arrow-terminal', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-terminal' })),
      ),
      this.viewport,
    );
    const button = (text: string, title: string, act: () => void) => h('button', { type: 'button', 'aria-label': title, title, onclick: act }, text);
    this.root = h(
      'div',
      { class: 'dag-wrap' },
      h(
        'div',
        { class: 'dag-tools' },
        button('+', 'Zoom in', () => this.zoom(1.25)),
        button('−', 'Zoom out', () => this.zoom(0.8)),
        button('Fit', 'Fit the whole run', () => this.fit()),
        h(
          'span',
          { class: 'legend', 'aria-hidden': 'true' },
          s('svg', { width: 36, height: 10 }, s('line', { x1: 0, y1: 5, x2: 36, y2: 5, class: 'edge edge-ON_SUCCESS' })),
          ' on success ',
          s('svg', { width: 36, height: 10 }, s('line', { x1: 0, y1: 5, x2: 36, y2: 5, class: 'edge edge-ON_TERMINAL' })),
          ' on any outcome',
        ),
      ),
      this.svg,
    );
    this.bindPanZoom();
  }

  update(steps: DagStep[], edges: DagEdge[]): void {
    const signature = JSON.stringify([steps.map((step) => step.stepKey), edges.map((e) => [e.prerequisiteStepKey, e.dependentStepKey, e.releaseMode])]);
    if (signature !== this.signature) {
      this.signature = signature;
      this.layout(steps, edges);
    }
    for (const step of steps) {
      const node = this.nodes.get(step.stepKey);
      if (!node) continue;
      node.setAttribute('data-status', step.status);
      node.setAttribute('class', `node status-${step.status}`);
      node.setAttribute('aria-label', nodeLabel(step));
      node.querySelector('.node-status')!.textContent = label(step.status);
      node.querySelector('title')!.textContent = nodeTitle(step);
    }
  }

  private layout(steps: DagStep[], edges: DagEdge[]): void {
    const graph = new dagre.graphlib.Graph();
    graph.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 56, marginx: 4, marginy: 4 });
    graph.setDefaultEdgeLabel(() => ({}));
    for (const step of steps) graph.setNode(step.stepKey, { width: Math.max(120, Math.min(MAX_LABEL, step.stepKey.length) * 8 + 24), height: NODE_HEIGHT });
    for (const edge of edges) graph.setEdge(edge.prerequisiteStepKey, edge.dependentStepKey);
    dagre.layout(graph);

    const edgeLayer = s('g', { class: 'edges' });
    for (const edge of edges) {
      const points = graph.edge(edge.prerequisiteStepKey, edge.dependentStepKey)?.points ?? [];
      if (points.length === 0) continue;
      const d = points.map((p: { x: number; y: number }, i: number) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
      const mode = edge.releaseMode === 'ON_TERMINAL' ? 'terminal' : 'success';
      edgeLayer.append(
        s('path', { d, class: `edge edge-${edge.releaseMode}`, 'marker-end': `url(#arrow-${mode})`, 'data-edge': `${edge.prerequisiteStepKey}->${edge.dependentStepKey}` }),
      );
    }
    const nodeLayer = s('g', { class: 'nodes' });
    this.nodes.clear();
    for (const step of steps) {
      const box = graph.node(step.stepKey);
      const node = s(
        'g',
        { class: `node status-${step.status}`, transform: `translate(${(box.x - box.width / 2).toFixed(1)},${(box.y - box.height / 2).toFixed(1)})`, tabindex: 0, role: 'button', 'data-step-key': step.stepKey, 'data-status': step.status, 'aria-label': nodeLabel(step) },
        s('rect', { width: box.width, height: box.height, rx: 6 }),
        s('text', { x: 10, y: 19, class: 'node-key' }, shorten(step.stepKey)),
        s('text', { x: 10, y: 36, class: 'node-status' }, label(step.status)),
        step.executionKind === 'EXTERNAL' ? s('text', { x: box.width - 10, y: 19, class: 'node-kind', 'text-anchor': 'end' }, 'ext') : null,
        s('title', {}, nodeTitle(step)),
      );
      const select = () => this.onSelect(step.stepKey);
      node.addEventListener('click', select);
      node.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          select();
        }
      });
      this.nodes.set(step.stepKey, node);
      nodeLayer.append(node);
    }
    this.viewport.replaceChildren(edgeLayer, nodeLayer);
    const label2 = graph.graph();
    this.size = { width: label2.width ?? 0, height: label2.height ?? 0 };
    if (!this.fitted) requestAnimationFrame(() => this.fit());
    this.apply();
  }

  fit(): void {
    const box = this.svg.getBoundingClientRect();
    if (box.width === 0 || this.size.width === 0) return;
    this.fitted = true;
    const k = Math.min(1.5, Math.max(0.1, Math.min((box.width - 40) / this.size.width, (box.height - 40) / this.size.height)));
    this.view = { k, x: (box.width - this.size.width * k) / 2, y: (box.height - this.size.height * k) / 2 };
    this.apply();
  }

  private zoom(factor: number, cx?: number, cy?: number): void {
    const box = this.svg.getBoundingClientRect();
    const px = cx ?? box.width / 2;
    const py = cy ?? box.height / 2;
    const k = Math.min(4, Math.max(0.05, this.view.k * factor));
    const applied = k / this.view.k;
    this.view = { k, x: px - (px - this.view.x) * applied, y: py - (py - this.view.y) * applied };
    this.apply();
  }

  private apply(): void {
    this.viewport.setAttribute('transform', `translate(${this.view.x.toFixed(1)},${this.view.y.toFixed(1)}) scale(${this.view.k.toFixed(4)})`);
  }

  private bindPanZoom(): void {
    this.svg.addEventListener(
      'wheel',
      (event) => {
        event.preventDefault();
        const box = this.svg.getBoundingClientRect();
        this.zoom(event.deltaY < 0 ? 1.1 : 1 / 1.1, event.clientX - box.left, event.clientY - box.top);
      },
      { passive: false },
    );
    let drag: { x: number; y: number; vx: number; vy: number } | undefined;
    this.svg.addEventListener('pointerdown', (event) => {
      if ((event.target as Element).closest('.node')) return;
      drag = { x: event.clientX, y: event.clientY, vx: this.view.x, vy: this.view.y };
      this.svg.setPointerCapture(event.pointerId);
    });
    this.svg.addEventListener('pointermove', (event) => {
      if (!drag) return;
      this.view = { ...this.view, x: drag.vx + event.clientX - drag.x, y: drag.vy + event.clientY - drag.y };
      this.apply();
    });
    this.svg.addEventListener('pointerup', () => (drag = undefined));
    this.svg.addEventListener('keydown', (event) => {
      if (event.target !== this.svg) return;
      const step = 40;
      const moves: Record<string, [number, number]> = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
      const move = moves[event.key];
      if (move) {
        this.view = { ...this.view, x: this.view.x + move[0], y: this.view.y + move[1] };
        this.apply();
      } else if (event.key === '+' || event.key === '=') this.zoom(1.25);
      else if (event.key === '-') this.zoom(0.8);
      else if (event.key === '0') this.fit();
      else return;
      event.preventDefault();
    });
  }
}
