/**
 * A run's waterfall: one row per step on the run's time axis (created ->
 * finished, or now), its time split into what it was doing: blocked on its
 * prerequisites (created -> released), queued (released -> first claim, and
 * between attempts), each attempt (coloured by its outcome), or waiting for
 * an external completion. Every segment says its phase and duration in its
 * title, and the row's label says them all, so colour is never the only cue.
 *
 * The axis has ticks at round offsets from the run's start; a long stretch
 * in which no attempt ran (an external wait, a backoff) is drawn narrow, as
 * a broken axis labelled with its true length (timeline-scale.ts). The run's
 * critical path (critical-path.ts) is marked on its rows and named above
 * them. Zoom and pan with the buttons, Ctrl + wheel and dragging the bars;
 * "Failures first" puts failed and canceled steps on top. The view keeps
 * these across refreshes; the list's scroll is kept by dom.ts replace.
 */
import type { CriticalPath } from '../critical-path.js';
import { byKey } from '../dag-groups.js';
import { h, replace } from '../dom.js';
import { label } from '../format.js';
import { duration, span } from '../time.js';
import { longWaits, makeScale, ticks } from '../timeline-scale.js';

export interface TimelineStep {
  stepKey: string;
  status: string;
  executionKind: string;
  createdAt: string;
  releasedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface TimelineAttempt {
  stepKey: string;
  attempt: number;
  runNumber: number;
  startedAt: string;
  finishedAt: string | null;
  outcome: string | null;
  errorCode: string | null;
}

interface Segment {
  phase: 'blocked' | 'queued' | 'attempt' | 'waiting';
  from: number;
  to: number;
  text: string;
  outcome?: string;
}

/** Rows drawn before "Show all": a 2,000-step run's waterfall is long. */
const FIRST_ROWS = 200;
/** The narrowest window zoom reaches: 1/256 of the axis. */
const MIN_WINDOW = 1 / 256;
const FAILED_OUTCOMES = new Set(['FAILED_RETRY', 'DEAD_LETTERED', 'FAILED']);

const t = (value: string | null): number | null => (value ? new Date(value).getTime() : null);

function segments(step: TimelineStep, attempts: TimelineAttempt[], now: number): Segment[] {
  const created = t(step.createdAt)!;
  const released = t(step.releasedAt);
  const finished = t(step.finishedAt);
  const end = finished ?? now;
  const out: Segment[] = [];
  const add = (phase: Segment['phase'], from: number, to: number, text: string, outcome?: string) => {
    if (to > from) out.push({ phase, from, to, text: `${text} ${span(to - from)}`, outcome });
  };
  add('blocked', created, released ?? end, released === null && finished === null ? 'waiting for prerequisites, so far' : 'waiting for prerequisites');
  if (released === null) return out;
  if (step.executionKind === 'EXTERNAL') {
    add('waiting', released, end, finished === null ? 'waiting for external completion, so far' : 'waiting for external completion');
    return out;
  }
  let cursor = released;
  for (const attempt of attempts) {
    const from = t(attempt.startedAt)!;
    const to = t(attempt.finishedAt) ?? finished ?? now;
    add('queued', cursor, from, attempt.attempt <= 1 && cursor === released ? 'queued' : 'waiting to retry');
    add(
      'attempt',
      from,
      to,
      `attempt ${attempt.attempt}${attempt.outcome ? ` ${label(attempt.outcome)}` : ' running'}${attempt.errorCode ? ` (${attempt.errorCode})` : ''}`,
      attempt.outcome ?? 'RUNNING',
    );
    cursor = Math.max(cursor, to);
  }
  if (attempts.length === 0 && t(step.startedAt) !== null) {
    add('queued', released, t(step.startedAt)!, 'queued');
    add('attempt', t(step.startedAt)!, end, finished === null ? 'running' : 'ran', finished === null ? 'RUNNING' : step.status);
  } else if (finished === null && attempts.every((a) => a.finishedAt !== null)) {
    add('queued', cursor, now, attempts.length === 0 ? 'queued, so far' : 'waiting to retry, so far');
  }
  return out;
}

/** Failed steps, then canceled ones, then steps that failed an attempt and went on; the rest after. */
function failureRank(step: TimelineStep, attempts: TimelineAttempt[]): number {
  if (step.status === 'FAILED') return 0;
  if (step.status === 'CANCELED') return 1;
  return attempts.some((a) => a.outcome !== null && FAILED_OUTCOMES.has(a.outcome)) ? 2 : 3;
}

interface TimelineData {
  run: { createdAt: string; finishedAt: string | null };
  steps: TimelineStep[];
  attempts: TimelineAttempt[];
  critical: CriticalPath | null;
}

export class Timeline {
  readonly root: HTMLElement;
  private data: TimelineData | undefined;
  /** The part of the axis (0..1) the tracks show. */
  private view = { from: 0, to: 1 };
  private failuresFirst = false;
  private all = false;
  private trackWidth = 0;

  constructor(private readonly onSelect: (stepKey: string) => void) {
    this.root = h('section', { 'aria-labelledby': 'timeline-title', class: 'tl-section' });
    this.bindPanZoom();
  }

  update(run: TimelineData['run'], steps: TimelineStep[], attempts: TimelineAttempt[], critical: CriticalPath | null): void {
    this.data = { run, steps, attempts, critical };
    this.render();
  }

  /** Zooms by `factor` (>1 in) about the axis position `center` (default: the middle of the window). */
  zoom(factor: number, center = (this.view.from + this.view.to) / 2): void {
    const width = Math.min(1, Math.max(MIN_WINDOW, (this.view.to - this.view.from) / factor));
    const share = (center - this.view.from) / (this.view.to - this.view.from);
    this.setView(center - width * share, width);
  }

  /** Moves the window by `share` of its width (negative: earlier). */
  pan(share: number): void {
    const width = this.view.to - this.view.from;
    this.setView(this.view.from + width * share, width);
  }

  private setView(from: number, width: number): void {
    const clamped = Math.min(1 - width, Math.max(0, from));
    this.view = { from: clamped, to: clamped + width };
    this.render();
  }

  private render(): void {
    if (!this.data) return;
    const { run, steps, attempts, critical } = this.data;
    const now = Date.now();
    const start = t(run.createdAt)!;
    const end = Math.max(start + 1, t(run.finishedAt) ?? now, ...steps.map((step) => t(step.finishedAt) ?? now));
    const byStep = new Map<string, TimelineAttempt[]>();
    for (const attempt of attempts) (byStep.get(attempt.stepKey) ?? byStep.set(attempt.stepKey, []).get(attempt.stepKey)!).push(attempt);
    const busy: [number, number][] = [];
    for (const step of steps) {
      const own = byStep.get(step.stepKey) ?? [];
      for (const a of own) busy.push([t(a.startedAt)!, t(a.finishedAt) ?? t(step.finishedAt) ?? now]);
      if (own.length === 0 && step.startedAt) busy.push([t(step.startedAt)!, t(step.finishedAt) ?? now]);
    }
    const scale = makeScale(start, end, longWaits(start, end, busy));
    const onPath = new Set(critical?.keys ?? []);
    const rank = (step: TimelineStep) => (this.failuresFirst ? failureRank(step, byStep.get(step.stepKey) ?? []) : 0);
    const ordered = [...steps].sort(
      (a, b) => rank(a) - rank(b) || (t(a.releasedAt) ?? Infinity) - (t(b.releasedAt) ?? Infinity) || byKey(a.stepKey, b.stepKey),
    );
    const shown = this.all ? ordered : ordered.slice(0, FIRST_ROWS);
    const { from: v0, to: v1 } = this.view;
    const pos = (time: number) => (scale.x(time) - v0) / (v1 - v0);
    const place = (element: HTMLElement, a: number, b: number) => {
      // Through the CSSOM: the page's CSP refuses style attributes.
      element.style.left = `${(pos(a) * 100).toFixed(3)}%`;
      element.style.width = `${((pos(b) - pos(a)) * 100).toFixed(3)}%`;
      return element;
    };
    const visible = (a: number, b: number) => pos(b) >= 0 && pos(a) <= 1;
    const breaks = () =>
      scale.gaps.filter((gap) => visible(gap.from, gap.to)).map((gap) => place(h('span', { class: 'tl-break', 'aria-hidden': 'true' }), gap.from, gap.to));

    const rows = shown.map((step) => {
      const parts = segments(step, byStep.get(step.stepKey) ?? [], now);
      const critical = onPath.has(step.stepKey);
      const summary = `${step.stepKey}: ${label(step.status)}${critical ? ', on the critical path' : ''}; ${parts.map((part) => part.text).join('; ') || 'not started'}`;
      const began = t(step.releasedAt) ?? t(step.finishedAt);
      return h(
        'li',
        { class: `tl-row${critical ? ' tl-critical' : ''}`, 'data-step-key': step.stepKey, 'data-status': step.status, 'data-critical': critical },
        h(
          'button',
          { type: 'button', class: 'link tl-key', title: step.stepKey, 'aria-label': summary, onclick: () => this.onSelect(step.stepKey) },
          step.stepKey,
        ),
        h(
          'span',
          { class: 'tl-track', 'aria-hidden': 'true' },
          breaks(),
          critical && began !== null ? place(h('span', { class: 'tl-crit' }), began, t(step.finishedAt) ?? now) : null,
          parts
            .filter((part) => visible(part.from, part.to))
            .map((part) =>
              place(
                h('span', { class: `tl-seg tl-${part.phase}${part.outcome ? ` status-${part.outcome}` : ''}`, title: part.text, 'data-phase': part.phase }),
                part.from,
                part.to,
              ),
            ),
        ),
        h(
          'span',
          { class: 'tl-dur num' },
          step.finishedAt ? duration(step.releasedAt ?? step.createdAt, step.finishedAt, now) : step.releasedAt ? duration(step.releasedAt, null, now) : '—',
        ),
      );
    });
    const axis = h(
      'li',
      { class: 'tl-axis-row', 'aria-hidden': 'true' },
      h('span', {}),
      h(
        'span',
        { class: 'tl-track tl-ticks', 'data-testid': 'tl-axis' },
        ticks(scale, v0, v1, 8)
          // A tick's label runs to its right, a gap's over its edges: none just before or after a gap.
          .filter((tick) => !scale.gaps.some((gap) => tick.at > scale.x(gap.from) - 0.08 * (v1 - v0) && tick.at < scale.x(gap.to) + 0.04 * (v1 - v0)))
          .map((tick) => {
            // A tick is a point: placed at its time, no width.
            const mark = h('span', { class: 'tl-tick', 'data-offset-ms': tick.offset }, tick.offset === 0 ? '0' : `+${span(tick.offset)}`);
            mark.style.left = `${(((tick.at - v0) / (v1 - v0)) * 100).toFixed(3)}%`;
            return mark;
          }),
        scale.gaps
          .filter((gap) => visible(gap.from, gap.to))
          .map((gap) =>
            place(
              h(
                'span',
                {
                  class: 'tl-gap',
                  'data-testid': 'tl-gap',
                  'data-ms': gap.to - gap.from,
                  title: `${span(gap.to - gap.from)} in which no attempt ran, drawn narrow`,
                },
                `≈ ${span(gap.to - gap.from)}`,
              ),
              gap.from,
              gap.to,
            ),
          ),
      ),
      h('span', {}),
    );
    const zoomed = v1 - v0 < 1;
    const tool = (text: string, name: string, act: () => void, disabled = false) =>
      h('button', { type: 'button', 'aria-label': name, title: name, onclick: act, disabled }, text);
    replace(
      this.root,
      h('h2', { id: 'timeline-title' }, 'Timeline'),
      h(
        'div',
        { class: 'tl-tools', role: 'toolbar', 'aria-label': 'Timeline zoom and order' },
        tool('+', 'Zoom the timeline in', () => this.zoom(2), v1 - v0 <= MIN_WINDOW),
        tool('−', 'Zoom the timeline out', () => this.zoom(0.5), !zoomed),
        tool('◀', 'Show earlier', () => this.pan(-0.5), v0 <= 0),
        tool('▶', 'Show later', () => this.pan(0.5), v1 >= 1),
        tool('Whole run', 'Show the whole run', () => this.setView(0, 1), !zoomed),
        h(
          'button',
          {
            type: 'button',
            'aria-pressed': String(this.failuresFirst),
            'data-testid': 'failures-first',
            onclick: () => {
              this.failuresFirst = !this.failuresFirst;
              this.render();
            },
          },
          'Failures first',
        ),
      ),
      h(
        'p',
        { class: 'tl-axis muted small' },
        `Run time axis: ${new Date(start).toLocaleTimeString()} to ${run.finishedAt ? new Date(end).toLocaleTimeString() : 'now'} (${span(end - start)})`,
        zoomed ? `, showing ${((v1 - v0) * 100).toFixed(1)}% of it` : '',
        scale.gaps.length > 0
          ? `; ${scale.gaps.length === 1 ? 'a stretch' : `${scale.gaps.length} stretches`} with no attempt running drawn narrow (≈), labelled with ${scale.gaps.length === 1 ? 'its' : 'their'} true length`
          : '',
        '. ',
        h(
          'span',
          { class: 'tl-legend' },
          h('span', { class: 'tl-seg tl-blocked' }),
          ' waiting for prerequisites ',
          h('span', { class: 'tl-seg tl-queued' }),
          ' queued ',
          h('span', { class: 'tl-seg tl-attempt status-SUCCEEDED' }),
          ' attempt ',
          h('span', { class: 'tl-seg tl-waiting' }),
          ' waiting for external ',
          h('span', { class: 'tl-seg tl-crit-sample' }),
          ' critical path',
        ),
      ),
      critical
        ? h(
            'p',
            { class: 'small', 'data-testid': 'critical-path' },
            h('strong', {}, 'Critical path: '),
            critical.keys.flatMap((key, i) => [i > 0 ? ' → ' : null, h('button', { type: 'button', class: 'link', onclick: () => this.onSelect(key) }, key)]),
            ` (${span(critical.to - critical.from)} of the run's ${span(end - start)})`,
          )
        : null,
      h(
        'ol',
        {
          class: 'tl-rows',
          'data-testid': 'timeline',
          'aria-label': this.failuresFirst
            ? 'Steps on the run time axis, failed and canceled first'
            : 'Steps on the run time axis, in the order they were released',
        },
        axis,
        rows,
      ),
      shown.length < ordered.length
        ? h(
            'button',
            {
              type: 'button',
              onclick: () => {
                this.all = true;
                this.render();
              },
            },
            `Show all ${ordered.length} steps`,
          )
        : null,
    );
  }

  /** Ctrl (or ⌘) + wheel zooms about the pointer, a sideways wheel pans, dragging the bars pans. */
  private bindPanZoom(): void {
    const axisAt = (clientX: number, track: Element) => {
      const box = track.getBoundingClientRect();
      return this.view.from + ((clientX - box.left) / Math.max(1, box.width)) * (this.view.to - this.view.from);
    };
    this.root.addEventListener(
      'wheel',
      (event) => {
        const track = (event.target as Element).closest('.tl-track');
        if (!track) return;
        if (event.ctrlKey || event.metaKey) {
          event.preventDefault();
          this.zoom(event.deltaY < 0 ? 1.25 : 0.8, axisAt(event.clientX, track));
        } else if (Math.abs(event.deltaX) > Math.abs(event.deltaY) && this.view.to - this.view.from < 1) {
          event.preventDefault();
          this.pan(event.deltaX / Math.max(1, track.getBoundingClientRect().width));
        }
      },
      { passive: false },
    );
    let drag: { x: number; from: number } | undefined;
    this.root.addEventListener('pointerdown', (event) => {
      const track = (event.target as Element).closest('.tl-track');
      if (!track || this.view.to - this.view.from >= 1) return;
      this.trackWidth = track.getBoundingClientRect().width;
      drag = { x: event.clientX, from: this.view.from };
      this.root.setPointerCapture(event.pointerId);
    });
    this.root.addEventListener('pointermove', (event) => {
      if (!drag) return;
      const width = this.view.to - this.view.from;
      this.setView(drag.from - ((event.clientX - drag.x) / Math.max(1, this.trackWidth)) * width, width);
    });
    this.root.addEventListener('pointerup', () => (drag = undefined));
  }
}
