/**
 * A folded group's members that did not succeed, one click from its node: a
 * pill per such status ("2 failed", "1 running") drawn on the node, each a
 * button of its own (a sibling of the node's, not inside it: a button does
 * not hold buttons), and the list a pill opens beside the graph, whose
 * entries select the step. A 200-member fan-out with 2 failures shows "2
 * failed" as a 17 px high target instead of a 1.5 px sliver of the
 * histogram, and its two keys one click later.
 */
import type { DagStep, DrawnGroup } from './dag-groups.js';
import { h, replace, s } from './dom.js';
import { label } from './format.js';

/** The statuses that get a pill, worst first; succeeded members are the histogram's. */
export const PILL_STATUSES = ['FAILED', 'CANCELED', 'RUNNING', 'ENQUEUED', 'WAITING_FOR_EXTERNAL', 'BLOCKED'];
const SHORT: Record<string, string> = {
  FAILED: 'failed',
  CANCELED: 'canceled',
  RUNNING: 'running',
  ENQUEUED: 'queued',
  WAITING_FOR_EXTERNAL: 'waiting',
  BLOCKED: 'blocked',
};
/** Entries the list draws; past that, expanding the group (or Find step) reaches the rest. */
const LIST_MAX = 100;
const PILL_HEIGHT = 17;
const PILL_CHAR = 6.6;

export interface MemberStep extends DagStep {
  lastErrorCode?: string | null;
}

function range(group: DrawnGroup): string {
  return `${group.members[0]?.stepKey ?? ''} to ${group.members[group.members.length - 1]?.stepKey ?? ''}`;
}

/** The pills of `group`'s node, at the node's place: `width` is the node's. */
export function groupPills(group: DrawnGroup, width: number, x: number, y: number, open: (status: string, pill: SVGGElement) => void): SVGGElement {
  const layer = s('g', {
    class: 'group-pills',
    transform: `translate(${x.toFixed(1)},${y.toFixed(1)})`,
    'data-group-pills': group.id,
    'data-counts': JSON.stringify(group.counts),
  });
  let at = 10;
  const counts = new Map(group.counts);
  for (const status of PILL_STATUSES) {
    const n = counts.get(status);
    if (!n) continue;
    const text = `${n} ${SHORT[status]}`;
    const w = Math.round(text.length * PILL_CHAR + 14);
    if (at + w > width - 6) break;
    const pill = s(
      'g',
      {
        class: `pill status-${status}`,
        role: 'button',
        tabindex: 0,
        transform: `translate(${at},39)`,
        'data-testid': 'group-pill',
        'data-status': status,
        'data-count': n,
        'aria-label': `${n} ${label(status)} ${n === 1 ? 'step' : 'steps'} of the group ${range(group)}: list them`,
      },
      s('rect', { width: w, height: PILL_HEIGHT, rx: PILL_HEIGHT / 2 }),
      s('text', { x: w / 2, y: 12.5, 'text-anchor': 'middle' }, text),
      s('title', {}, `${n} ${label(status)}: click to list them`),
    );
    const act = (event: Event) => {
      event.stopPropagation();
      open(status, pill);
    };
    pill.addEventListener('click', act);
    pill.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        act(event);
      }
    });
    layer.append(pill);
    at += w + 5;
  }
  return layer;
}

/** The list a pill opens: the group's members in that status, each selecting its step. */
export class MemberList {
  readonly root: HTMLElement;
  private shown: { groupId: string; status: string } | undefined;
  private returnTo: SVGGElement | undefined;

  constructor(
    private readonly onSelect: (stepKey: string) => void,
    private readonly onExpand: (groupId: string) => void,
  ) {
    this.root = h('section', { class: 'dag-members', 'aria-label': 'Steps of a group', 'data-testid': 'group-members', hidden: true });
  }

  show(group: DrawnGroup, status: string, from: SVGGElement): void {
    this.shown = { groupId: group.id, status };
    this.returnTo = from;
    this.render(group);
    this.root.querySelector<HTMLElement>('h3')?.focus();
  }

  /** Re-reads the open list from the groups as they are now (a refresh moved a member on). */
  refresh(groups: Map<string, DrawnGroup>): void {
    if (!this.shown) return;
    const group = groups.get(this.shown.groupId);
    if (group) this.render(group);
    else this.close();
  }

  close(): void {
    this.shown = undefined;
    this.root.hidden = true;
    replace(this.root);
    if (this.returnTo?.isConnected) this.returnTo.focus();
  }

  private render(group: DrawnGroup): void {
    const status = this.shown!.status;
    const members = (group.members as MemberStep[]).filter((m) => m.status === status);
    this.root.hidden = false;
    this.root.dataset.group = group.id;
    this.root.dataset.status = status;
    replace(
      this.root,
      h(
        'div',
        { class: 'dag-members-head' },
        h('h3', { tabindex: -1 }, `${members.length} ${label(status)} of ${group.members.length} steps, ${range(group)}`),
        h('button', { type: 'button', class: 'secondary', onclick: () => this.close() }, 'Close'),
      ),
      members.length === 0
        ? h('p', { class: 'muted' }, `None is ${label(status)} now.`)
        : h(
            'ul',
            {},
            members
              .slice(0, LIST_MAX)
              .map((m) =>
                h(
                  'li',
                  {},
                  h('button', { type: 'button', class: 'link', 'data-step-key': m.stepKey, onclick: () => this.onSelect(m.stepKey) }, m.stepKey),
                  m.lastErrorCode ? h('code', { class: 'small' }, ` ${m.lastErrorCode}`) : null,
                ),
              ),
          ),
      members.length > LIST_MAX ? h('p', { class: 'muted small' }, `and ${members.length - LIST_MAX} more: expand the group, or find a step by key.`) : null,
      h('button', { type: 'button', onclick: () => this.onExpand(group.id) }, `Expand all ${group.members.length}`),
    );
  }
}
