/**
 * A run's waterfall: one row per step on the run's time axis (created ->
 * finished, or now), its time split into what it was doing: blocked on its
 * prerequisites (created -> released), queued (released -> first claim, and
 * between attempts), each attempt (coloured by its outcome), or waiting for
 * an external completion. Every segment says its phase and duration in its
 * title, and the row's label says them all, so colour is never the only cue.
 */
import { h } from '../dom.js';
import { label } from '../format.js';
import { byKey } from '../dag-groups.js';
import { duration, span } from '../time.js';

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

export function timeline(
  run: { createdAt: string; finishedAt: string | null },
  steps: TimelineStep[],
  attempts: TimelineAttempt[],
  onSelect: (stepKey: string) => void,
  showAll: () => void,
  all: boolean,
): HTMLElement {
  const now = Date.now();
  const start = t(run.createdAt)!;
  const end = Math.max(start + 1, t(run.finishedAt) ?? now, ...steps.map((step) => t(step.finishedAt) ?? now));
  const total = end - start;
  const byStep = new Map<string, TimelineAttempt[]>();
  for (const attempt of attempts) (byStep.get(attempt.stepKey) ?? byStep.set(attempt.stepKey, []).get(attempt.stepKey)!).push(attempt);
  const ordered = [...steps].sort((a, b) => (t(a.releasedAt) ?? Infinity) - (t(b.releasedAt) ?? Infinity) || byKey(a.stepKey, b.stepKey));
  const shown = all ? ordered : ordered.slice(0, FIRST_ROWS);
  const pct = (value: number) => `${(((value - start) / total) * 100).toFixed(3)}%`;
  const rows = shown.map((step) => {
    const parts = segments(step, byStep.get(step.stepKey) ?? [], now);
    const summary = `${step.stepKey}: ${label(step.status)}; ${parts.map((part) => part.text).join('; ') || 'not started'}`;
    return h(
      'li',
      { class: 'tl-row', 'data-step-key': step.stepKey, 'data-status': step.status },
      h('button', { type: 'button', class: 'link tl-key', title: step.stepKey, 'aria-label': summary, onclick: () => onSelect(step.stepKey) }, step.stepKey),
      h(
        'span',
        { class: 'tl-track', 'aria-hidden': 'true' },
        parts.map((part) => {
          const segment = h('span', {
            class: `tl-seg tl-${part.phase}${part.outcome ? ` status-${part.outcome}` : ''}`,
            title: part.text,
            'data-phase': part.phase,
          });
          // Through the CSSOM: the page's CSP refuses style attributes.
          segment.style.left = pct(part.from);
          segment.style.width = `${(((part.to - part.from) / total) * 100).toFixed(3)}%`;
          return segment;
        }),
      ),
      h(
        'span',
        { class: 'tl-dur num' },
        step.finishedAt ? duration(step.releasedAt ?? step.createdAt, step.finishedAt, now) : step.releasedAt ? duration(step.releasedAt, null, now) : '—',
      ),
    );
  });
  return h(
    'div',
    { class: 'timeline', 'data-testid': 'timeline' },
    h(
      'p',
      { class: 'tl-axis muted small' },
      `Run time axis: ${new Date(start).toLocaleTimeString()} to ${run.finishedAt ? new Date(end).toLocaleTimeString() : 'now'} (${span(total)}). `,
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
        ' waiting for external',
      ),
    ),
    h('ol', { class: 'tl-rows', 'aria-label': 'Steps on the run time axis, in the order they were released' }, rows),
    shown.length < ordered.length ? h('button', { type: 'button', onclick: showAll }, `Show all ${ordered.length} steps`) : null,
  );
}
