/**
 * A run's DAG as SVG, laid out by dagre (a layered layout of our own past
 * 400 nodes: dag-layout.ts), top-down or left-right, whichever
 * lets the run fill the panel at the larger scale (a 1 -> 20 -> 1 fan-out
 * spreads across the panel, a long chain along it). Fan-out groups are one
 * node with a status histogram until expanded (dag-groups.ts); siblings come
 * in natural key order. Steps are coloured by status and also say it in words
 * (colour is never the only cue), with their stage and progress; an
 * ON_SUCCESS edge is solid, an ON_TERMINAL edge dashed with a hollow arrow.
 * Pan by dragging, with the arrow keys or on the minimap; zoom with the wheel,
 * +/- or the buttons, 0 fits the whole run; "Find step" selects a step by key.
 * The selected step is outlined and kept in view. A refresh with the same
 * steps and edges only recolours the nodes, so the view (and the keyboard
 * focus) stays where it is.
 */
import { drawnGraph, findGroups, type DagEdge, type DagStep, type DrawnGraph, type DrawnGroup } from './dag-groups.js';
import { chooseDirection, edgeId, layoutGraph } from './dag-layout.js';
import { groupPills, MemberList } from './dag-members.js';
import { Minimap } from './dag-minimap.js';
import { h, s } from './dom.js';
import { label, progressText } from './format.js';

export type { DagEdge, DagStep } from './dag-groups.js';

const NODE_HEIGHT = 60;
const MAX_LABEL = 26;
const CHAR_WIDTH = 7.6;
const NODE_SEP = 18;
const RANK_SEP = 50;

function shorten(text: string, max = MAX_LABEL): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Stage and progress, when the step's job reports them. */
function stageText(step: DagStep): string {
  return [step.stage, step.progress != null && progressText(step.progress)].filter(Boolean).join(' · ');
}

function nodeLabel(step: DagStep): string {
  const stage = [step.stage && `stage ${step.stage}`, step.progress != null && `progress ${progressText(step.progress)}`].filter(Boolean).join(', ');
  const kind = step.executionKind === 'EXTERNAL' ? 'external' : step.executionKind === 'FUNCTION' ? 'function step' : (step.jobType ?? 'job');
  return `step ${step.stepKey}, ${kind}, ${label(step.status)}${stage ? `, ${stage}` : ''}`;
}

function nodeTitle(step: DagStep): string {
  const stage = [step.stage && `stage ${step.stage}`, step.progress != null && `progress ${progressText(step.progress)}`].filter(Boolean).join(', ');
  return stage ? `${step.stepKey}\n${stage}` : step.stepKey;
}

function countsText(group: DrawnGroup): string {
  return group.counts.map(([status, n]) => `${n} ${label(status)}`).join(', ');
}

function groupLabel(group: DrawnGroup): string {
  const first = group.members[0]?.stepKey ?? '';
  const last = group.members[group.members.length - 1]?.stepKey ?? '';
  return `group of ${group.members.length} steps, ${first} to ${last}: ${countsText(group)}. Press Enter to expand.`;
}

function nodeWidth(text: string): number {
  return Math.max(168, Math.min(MAX_LABEL, text.length) * CHAR_WIDTH + 24);
}

export class DagView {
  readonly root: HTMLElement;
  private readonly svg: SVGSVGElement;
  private readonly viewport: SVGGElement;
  private readonly minimap: Minimap;
  private readonly findBox: HTMLInputElement;
  private readonly collapseButton: HTMLButtonElement;
  private signature = '';
  private steps: DagStep[] = [];
  private edges: DagEdge[] = [];
  private groupKeys = new Map<string, string[]>();
  private readonly expanded = new Set<string>();
  private graph: DrawnGraph | undefined;
  private nodes = new Map<string, SVGGElement>();
  private boxes = new Map<string, { x: number; y: number; width: number; height: number }>();
  private selected: string | undefined;
  /** The run's critical path (critical-path.ts): its steps and the edges between them are drawn bold. */
  private critical = new Set<string>();
  private criticalEdges = new Set<string>();
  private edgePaths = new Map<string, SVGPathElement>();
  private pills = new Map<string, SVGGElement>();
  private readonly members: MemberList;
  private view = { x: 20, y: 20, k: 1 };
  private size = { width: 0, height: 0 };
  private fitted = false;
  /** Milliseconds the last layout and drawing took (also the svg's data-render-ms, read by the tests). */
  renderMs = 0;
  direction: 'TB' | 'LR' = 'LR';

  constructor(private readonly onSelect: (stepKey: string) => void) {
    this.viewport = s('g', { class: 'viewport' });
    this.svg = s(
      'svg',
      { class: 'dag', role: 'group', 'aria-label': 'Workflow graph. Arrow keys pan, plus and minus zoom, 0 fits the run.', tabindex: 0 },
      s(
        'defs',
        {},
        s(
          'marker',
          { id: 'arrow-success', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
          s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-success' }),
        ),
        s(
          'marker',
          { id: 'arrow-terminal', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
          s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-terminal' }),
        ),
      ),
      this.viewport,
    );
    this.minimap = new Minimap((x, y) => this.centerOn(x, y));
    this.members = new MemberList(
      (stepKey) => this.onSelect(stepKey),
      (groupId) => {
        this.members.close();
        this.expanded.add(groupId);
        this.relayout();
        this.fit();
      },
    );
    const button = (text: string, title: string, act: () => void) => h('button', { type: 'button', 'aria-label': title, title, onclick: act }, text);
    this.findBox = h('input', { type: 'search', id: 'dag-find', list: 'dag-find-keys', autocomplete: 'off', placeholder: 'step key', size: 14 });
    const findForm = h(
      'form',
      { class: 'dag-find', role: 'search', 'aria-label': 'Find a step in the graph' },
      h('label', { for: 'dag-find' }, 'Find step'),
      this.findBox,
      h('datalist', { id: 'dag-find-keys' }),
    );
    findForm.addEventListener('submit', (event) => {
      event.preventDefault();
      this.find(this.findBox.value);
    });
    this.collapseButton = button('Collapse groups', 'Fold every expanded group again', () => {
      this.expanded.clear();
      this.relayout();
      this.fit();
    });
    this.collapseButton.hidden = true;
    this.root = h(
      'div',
      { class: 'dag-wrap' },
      h(
        'div',
        { class: 'dag-tools' },
        button('+', 'Zoom in', () => this.zoom(1.25)),
        button('−', 'Zoom out', () => this.zoom(0.8)),
        button('Fit', 'Fit the whole run', () => this.fit()),
        this.collapseButton,
        findForm,
        h(
          'span',
          { class: 'legend', 'aria-hidden': 'true' },
          s('svg', { width: 36, height: 10 }, s('line', { x1: 0, y1: 5, x2: 36, y2: 5, class: 'edge edge-ON_SUCCESS' })),
          ' on success ',
          s('svg', { width: 36, height: 10 }, s('line', { x1: 0, y1: 5, x2: 36, y2: 5, class: 'edge edge-ON_TERMINAL' })),
          ' on any outcome',
        ),
      ),
      h('div', { class: 'dag-stage' }, this.svg, this.minimap.root, this.members.root),
    );
    this.bindPanZoom();
  }

  update(steps: DagStep[], edges: DagEdge[]): void {
    this.steps = steps;
    this.edges = edges;
    const signature = JSON.stringify([steps.map((step) => step.stepKey), edges.map((e) => [e.prerequisiteStepKey, e.dependentStepKey, e.releaseMode])]);
    if (signature !== this.signature) {
      this.signature = signature;
      this.groupKeys = findGroups(steps, edges);
      const list = this.root.querySelector('datalist')!;
      list.replaceChildren(...steps.slice(0, 2_000).map((step) => h('option', { value: step.stepKey })));
      this.relayout();
      return;
    }
    this.graph = drawnGraph(steps, edges, this.groupKeys, this.expanded);
    for (const node of this.graph.nodes) {
      const element = this.nodes.get(node.key);
      if (!element) continue;
      if (node.kind === 'step') this.paintStep(element, node.step);
      else this.paintGroup(element, node.group);
    }
    this.minimap.paint(this.graph);
    this.members.refresh(this.graph.groups);
  }

  /** Marks the critical path's steps (a folded group holding one of them) and the edges between them. */
  setCritical(keys: string[]): void {
    this.critical = new Set(keys);
    this.criticalEdges = new Set();
    const nodeOf = (key: string) => this.graph?.nodeOf.get(key) ?? key;
    for (let i = 1; i < keys.length; i += 1) this.criticalEdges.add(edgeId(nodeOf(keys[i - 1]!), nodeOf(keys[i]!)));
    this.paintCritical();
  }

  private paintCritical(): void {
    const criticalNodes = new Set([...this.critical].map((key) => this.graph?.nodeOf.get(key) ?? key));
    for (const [key, element] of this.nodes) element.classList.toggle('critical', criticalNodes.has(key));
    for (const [id, path] of this.edgePaths) path.classList.toggle('critical', this.criticalEdges.has(id));
    this.svg.dataset.criticalPath = [...this.critical].join(' ');
  }

  /** Outlines the step (expanding its group) and pans to it when it is out of view. */
  select(stepKey: string | undefined): void {
    this.selected = stepKey;
    if (stepKey !== undefined) {
      const group = this.graph?.groupOf.get(stepKey);
      if (group !== undefined && !this.expanded.has(group)) {
        this.expanded.add(group);
        this.relayout();
      }
    }
    for (const [key, element] of this.nodes) element.classList.toggle('selected', key === stepKey);
    const box = stepKey === undefined ? undefined : this.boxes.get(stepKey);
    if (box) this.keepInView(box);
  }

  private find(text: string): void {
    const needle = text.trim().toLowerCase();
    if (needle === '') return;
    const match = this.steps.find((step) => step.stepKey.toLowerCase() === needle) ?? this.steps.find((step) => step.stepKey.toLowerCase().includes(needle));
    this.findBox.setCustomValidity(match ? '' : 'No step has this key.');
    this.findBox.reportValidity();
    if (match) this.onSelect(match.stepKey);
  }

  private relayout(): void {
    const started = performance.now();
    this.graph = drawnGraph(this.steps, this.edges, this.groupKeys, this.expanded);
    this.layout(this.graph);
    this.collapseButton.hidden = this.expanded.size === 0;
    this.renderMs = Math.round(performance.now() - started);
    this.svg.dataset.renderMs = String(this.renderMs);
    this.svg.dataset.direction = this.direction;
  }

  private layout(drawn: DrawnGraph): void {
    const widths = new Map(
      drawn.nodes.map((node) => [
        node.key,
        nodeWidth(node.kind === 'step' ? node.step.stepKey : `${node.group.members[0]?.stepKey ?? ''} … (${node.group.members.length})`),
      ]),
    );
    const options = { nodeSep: NODE_SEP, rankSep: RANK_SEP, width: (key: string) => widths.get(key) ?? 168, height: () => NODE_HEIGHT };
    const panel = this.svg.getBoundingClientRect();
    this.direction = chooseDirection(drawn, this.expanded, options, { width: panel.width || 900, height: panel.height || 600 });
    const layout = layoutGraph(drawn, this.expanded, { ...options, direction: this.direction });

    // An expanded grid's members share their edges: each is drawn once, to the grid's frame.
    const frameLayer = s('g', { class: 'frames', 'aria-hidden': 'true' });
    for (const [id, box] of layout.frames ?? []) {
      const group = drawn.groups.get(id)!;
      frameLayer.append(
        s(
          'g',
          { class: 'frame', 'data-frame': id, 'data-members': group.members.length, transform: `translate(${box.x.toFixed(1)},${box.y.toFixed(1)})` },
          s('rect', { width: box.width, height: box.height, rx: 8 }),
          s(
            'text',
            { x: 12, y: 20 },
            `${group.members[0]?.stepKey ?? ''} … ${group.members[group.members.length - 1]?.stepKey ?? ''}: ${group.members.length} steps in key order (${countsText(group)})`,
          ),
        ),
      );
    }
    const edgeLayer = s('g', { class: 'edges' });
    const drawnPaths = new Set<string>();
    this.edgePaths.clear();
    for (const edge of drawn.edges) {
      const points = layout.edges.get(edgeId(edge.from, edge.to)) ?? [];
      if (points.length === 0) continue;
      const d = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
      if (drawnPaths.has(d)) continue;
      drawnPaths.add(d);
      const mode = edge.releaseMode === 'ON_TERMINAL' ? 'terminal' : 'success';
      const path = s('path', { d, class: `edge edge-${edge.releaseMode}`, 'marker-end': `url(#arrow-${mode})`, 'data-edge': `${edge.from}->${edge.to}` });
      this.edgePaths.set(edgeId(edge.from, edge.to), path);
      edgeLayer.append(path);
    }
    const nodeLayer = s('g', { class: 'nodes' });
    this.nodes.clear();
    this.boxes.clear();
    this.pills.clear();
    for (const node of drawn.nodes) {
      const box = layout.boxes.get(node.key)!;
      const element = node.kind === 'step' ? this.stepNode(node.step, box.width) : this.groupNode(node.group, box.width);
      element.setAttribute('transform', `translate(${box.x.toFixed(1)},${box.y.toFixed(1)})`);
      this.nodes.set(node.key, element);
      this.boxes.set(node.key, box);
      nodeLayer.append(element);
      if (node.kind === 'group') {
        const pills = this.groupPills(node.group, box);
        this.pills.set(node.group.id, pills);
        nodeLayer.append(pills);
      }
    }
    this.viewport.replaceChildren(frameLayer, edgeLayer, nodeLayer);
    this.paintCritical();
    this.size = { width: layout.width, height: layout.height };
    this.minimap.draw(drawn, this.boxes, this.size);
    if (this.selected !== undefined) this.nodes.get(this.selected)?.classList.add('selected');
    if (!this.fitted) requestAnimationFrame(() => this.fit());
    this.apply();
  }

  private stepNode(step: DagStep, width: number): SVGGElement {
    const node = s(
      'g',
      { class: `node status-${step.status}`, tabindex: 0, role: 'button', 'data-step-key': step.stepKey },
      s('rect', { width, height: NODE_HEIGHT, rx: 6 }),
      s('text', { x: 10, y: 18, class: 'node-key' }, shorten(step.stepKey, Math.floor((width - 20) / CHAR_WIDTH))),
      s('text', { x: 10, y: 35, class: 'node-status' }),
      step.executionKind === 'EXTERNAL' || step.executionKind === 'FUNCTION'
        ? s('text', { x: width - 10, y: 35, class: 'node-kind', 'text-anchor': 'end' }, step.executionKind === 'EXTERNAL' ? 'ext' : 'fn')
        : null,
      s('text', { x: 10, y: 51, class: 'node-stage' }),
      s('title', {}),
    );
    this.paintStep(node, step);
    this.bindActivate(node, () => this.onSelect(step.stepKey));
    return node;
  }

  private groupPills(group: DrawnGroup, box: { x: number; y: number; width: number }): SVGGElement {
    return groupPills(group, box.width, box.x, box.y, (status, pill) => this.members.show(this.graph?.groups.get(group.id) ?? group, status, pill));
  }

  private paintStep(node: SVGGElement, step: DagStep): void {
    node.setAttribute('data-status', step.status);
    node.setAttribute(
      'class',
      `node status-${step.status}${this.selected === step.stepKey ? ' selected' : ''}${this.critical.has(step.stepKey) ? ' critical' : ''}`,
    );
    node.setAttribute('aria-label', nodeLabel(step));
    node.querySelector('.node-status')!.textContent = label(step.status);
    node.querySelector('.node-stage')!.textContent = shorten(stageText(step), 30);
    node.querySelector('title')!.textContent = nodeTitle(step);
  }

  private groupNode(group: DrawnGroup, width: number): SVGGElement {
    const node = s(
      'g',
      { class: 'node group', tabindex: 0, role: 'button', 'data-group': group.id, 'data-group-size': group.members.length },
      s('rect', { width, height: NODE_HEIGHT, rx: 6, class: 'group-box' }),
      s(
        'text',
        { x: 10, y: 18, class: 'node-key' },
        shorten(`${group.members[0]?.stepKey ?? ''} … ${group.members.length} steps`, Math.floor((width - 20) / CHAR_WIDTH)),
      ),
      s('g', { class: 'histogram', transform: 'translate(10,27)' }),
      s('text', { x: 10, y: 52, class: 'node-stage' }),
      s('title', {}),
    );
    this.paintGroup(node, group);
    this.bindActivate(node, () => {
      this.expanded.add(group.id);
      this.relayout();
      this.fit();
      const first = group.members[0];
      if (first) this.nodes.get(first.stepKey)?.focus();
    });
    return node;
  }

  private paintGroup(node: SVGGElement, group: DrawnGroup): void {
    const width = Number(node.querySelector('rect')!.getAttribute('width')) - 20;
    const bars = node.querySelector('.histogram')!;
    let x = 0;
    bars.replaceChildren(
      ...group.counts.map(([status, n]) => {
        const w = (width * n) / group.members.length;
        const bar = s('rect', { x: x.toFixed(1), y: 0, width: w.toFixed(1), height: 9, class: `bar status-${status}`, 'data-status': status, 'data-count': n });
        x += w;
        return bar;
      }),
    );
    const box = this.boxes.get(group.id);
    const old = this.pills.get(group.id);
    // Redrawn only when the counts moved, so a focused pill keeps the focus across refreshes.
    if (box && old && old.dataset.counts !== JSON.stringify(group.counts)) {
      const pills = this.groupPills(group, box);
      old.replaceWith(pills);
      this.pills.set(group.id, pills);
    }
    // The pills, when there are any, say the counts that are not successes; the line says them otherwise.
    const hasPills = group.counts.some(([status]) => status !== 'SUCCEEDED');
    node.querySelector('.node-stage')!.textContent = hasPills ? '' : shorten(countsText(group), 34);
    node.querySelector('title')!.textContent = `${group.members.length} steps (${countsText(group)}); click to expand`;
    node.setAttribute('aria-label', groupLabel(group));
    node.setAttribute('data-counts', JSON.stringify(Object.fromEntries(group.counts)));
  }

  private bindActivate(node: SVGGElement, act: () => void): void {
    node.addEventListener('click', act);
    node.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        act();
      }
    });
  }

  fit(): void {
    const box = this.svg.getBoundingClientRect();
    if (box.width === 0 || this.size.width === 0) return;
    this.fitted = true;
    const k = Math.min(1.5, Math.max(0.05, Math.min((box.width - 40) / this.size.width, (box.height - 40) / this.size.height)));
    this.view = { k, x: (box.width - this.size.width * k) / 2, y: (box.height - this.size.height * k) / 2 };
    this.apply();
  }

  /** Centres graph point (x, y) in the panel. */
  private centerOn(x: number, y: number): void {
    const box = this.svg.getBoundingClientRect();
    this.view = { ...this.view, x: box.width / 2 - x * this.view.k, y: box.height / 2 - y * this.view.k };
    this.apply();
  }

  private keepInView(node: { x: number; y: number; width: number; height: number }): void {
    const box = this.svg.getBoundingClientRect();
    if (box.width === 0) return;
    // Too small to read (a fitted 2,000-step run): zoom to a legible scale, centred on the step.
    const zoomed = this.view.k < 0.6;
    if (zoomed) this.view = { ...this.view, k: 0.9 };
    const left = node.x * this.view.k + this.view.x;
    const top = node.y * this.view.k + this.view.y;
    const inside = left >= 0 && top >= 0 && left + node.width * this.view.k <= box.width && top + node.height * this.view.k <= box.height;
    if (zoomed || !inside) this.centerOn(node.x + node.width / 2, node.y + node.height / 2);
  }

  private zoom(factor: number, cx?: number, cy?: number): void {
    const box = this.svg.getBoundingClientRect();
    const px = cx ?? box.width / 2;
    const py = cy ?? box.height / 2;
    const k = Math.min(4, Math.max(0.02, this.view.k * factor));
    const applied = k / this.view.k;
    this.view = { k, x: px - (px - this.view.x) * applied, y: py - (py - this.view.y) * applied };
    this.apply();
  }

  private apply(): void {
    this.viewport.setAttribute('transform', `translate(${this.view.x.toFixed(1)},${this.view.y.toFixed(1)}) scale(${this.view.k.toFixed(4)})`);
    const box = this.svg.getBoundingClientRect();
    this.minimap.showView(-this.view.x / this.view.k, -this.view.y / this.view.k, box.width / this.view.k, box.height / this.view.k);
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
      if ((event.target as Element).closest('.node, .pill')) return;
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
