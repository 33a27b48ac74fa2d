import { get, post } from '../api.js';
import type { Context, View } from '../context.js';
import { DagView, type DagEdge } from '../dag.js';
import { h, replace } from '../dom.js';
import { progressText } from '../format.js';
import { duration } from '../time.js';
import { actionForm } from './actions.js';
import { runActionForms, runActionsKey } from './run-actions.js';
import { statusBadge } from './list.js';
import { runFacts, stepPanel, type RunFacts, type RunStep } from './run-details.js';
import { criticalPath } from '../critical-path.js';
import { Timeline, type TimelineAttempt } from './timeline.js';

interface RunDetail {
  run: RunFacts;
  steps: RunStep[];
  edges: DagEdge[];
  attempts: TimelineAttempt[];
  truncated: boolean;
}

const TERMINAL_RUN = new Set(['SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED']);
/**
 * A step's claim (ENQUEUED -> RUNNING) sends no notification (a NOTIFY per
 * claim would queue claims on the database's notify lock), so while a step
 * of this run waits to be claimed the page polls this often to show RUNNING
 * soon; every terminal step move arrives as a live event anyway.
 */
const CLAIM_WATCH_POLL_MS = 1_000;

function completeForm(context: Context, runId: string, step: RunStep): HTMLFormElement {
  return actionForm(
    context,
    'complete-step',
    `Complete external step ${step.stepKey}`,
    [
      { name: 'status', label: 'Outcome', kind: 'select', options: ['succeeded', 'failed', 'canceled'], value: 'succeeded' },
      { name: 'output', label: 'Output (JSON, success only)', kind: 'textarea', value: '{}' },
      { name: 'reason', label: 'Reason' },
    ],
    'Complete step',
    async (values) => {
      const body: Record<string, unknown> = { status: values.status };
      if (values.status === 'succeeded' && (values.output ?? '').trim() !== '') {
        try {
          body.output = JSON.parse(values.output!);
        } catch {
          throw new Error('The output is not valid JSON.');
        }
      }
      if (values.reason) body.reason = values.reason;
      return post(`runs/${runId}/steps/${encodeURIComponent(step.stepKey)}/complete`, body);
    },
  );
}

function afterText(edges: DagEdge[], stepKey: string): string {
  return edges
    .filter((edge) => edge.dependentStepKey === stepKey)
    .map((edge) => `${edge.prerequisiteStepKey}${edge.releaseMode === 'ON_TERMINAL' ? ' (any outcome)' : ''}`)
    .join(', ');
}

export function runView(context: Context, runId: string): View {
  let selected: string | undefined;
  let latest: RunDetail | undefined;
  let panelKey: string | undefined;
  let cancelKey = '';
  const summary = h('div');
  const cancel = h('section', { class: 'actions', 'aria-label': 'Run actions' });
  const panel = h('section', { class: 'step-panel', 'aria-live': 'polite', 'aria-label': 'Selected step' });
  const table = h('div');
  const renderPanel = () => {
    const step = latest?.steps.find((candidate) => candidate.stepKey === selected);
    const key = step ? JSON.stringify([step.stepKey, step.status, step.stage, step.progress, step.finishedAt, step.startedAt, latest?.attempts.length]) : '';
    if (key === panelKey) return;
    panelKey = key;
    if (!step || !latest) {
      replace(panel, h('p', { class: 'muted' }, 'Select a step in the graph, the timeline or the table to see it here.'));
      return;
    }
    const canComplete = !context.session.readOnly && step.executionKind === 'EXTERNAL' && step.status === 'WAITING_FOR_EXTERNAL';
    replace(
      panel,
      stepPanel(
        step,
        latest.attempts.filter((a) => a.stepKey === step.stepKey),
        afterText(latest.edges, step.stepKey),
        canComplete ? completeForm(context, latest.run.id, step) : null,
      ),
    );
  };
  const dag = new DagView((stepKey) => select(stepKey));
  const select = (stepKey: string) => {
    selected = stepKey;
    dag.select(stepKey);
    renderPanel();
    panel.querySelector<HTMLElement>('h2')?.focus();
  };
  const timeline = new Timeline((stepKey) => select(stepKey));
  const root = h(
    'article',
    { 'aria-labelledby': 'run-title' },
    h('h1', { id: 'run-title' }, 'Run ', h('span', { class: 'mono' }, runId)),
    summary,
    cancel,
    h('div', { class: 'run-layout' }, h('div', { class: 'run-main' }, dag.root, timeline.root), panel),
    h('h2', {}, 'Steps'),
    table,
  );
  return {
    root,
    pollMs: () => (latest && !TERMINAL_RUN.has(latest.run.status) && latest.steps.some((step) => step.status === 'ENQUEUED') ? CLAIM_WATCH_POLL_MS : undefined),
    async refresh() {
      const detail = await get<RunDetail>(`runs/${encodeURIComponent(runId)}`);
      latest = detail;
      const { run } = detail;
      replace(
        summary,
        runFacts(run, detail.steps, select),
        detail.truncated ? h('p', { class: 'muted' }, 'This run is larger than the dashboard draws; the graph shows its first steps.') : null,
      );
      const runKey = runActionsKey(run);
      if (runKey !== cancelKey) {
        cancelKey = runKey;
        replace(cancel, runActionForms(context, run));
      }
      dag.update(detail.steps, detail.edges);
      const path = criticalPath(detail.steps, detail.edges, Date.now());
      dag.setCritical(path?.keys ?? []);
      renderPanel();
      timeline.update(run, detail.steps, detail.attempts, path);
      replace(
        table,
        h(
          'table',
          { class: 'list' },
          h('caption', { class: 'sr-only' }, 'Steps of this run'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['step', 'kind', 'status', 'stage', 'progress', 'took', 'after', 'job'].map((name) => h('th', { scope: 'col' }, name)),
            ),
          ),
          h(
            'tbody',
            {},
            detail.steps.map((step) =>
              h(
                'tr',
                {},
                h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => select(step.stepKey) }, step.stepKey)),
                h(
                  'td',
                  {},
                  step.executionKind === 'EXTERNAL'
                    ? 'external'
                    : step.executionKind === 'FUNCTION'
                      ? `function call ${step.callIndex ?? '?'}`
                      : (step.jobType ?? 'job'),
                ),
                h('td', {}, statusBadge(step.status)),
                h('td', { 'data-testid': 'step-stage' }, step.stage ?? '—'),
                h('td', {}, progressText(step.progress)),
                h('td', { class: 'num' }, step.releasedAt ? duration(step.releasedAt, step.finishedAt) : '—'),
                h('td', { class: 'wrap' }, afterText(detail.edges, step.stepKey) || '—'),
                h('td', {}, step.jobId ? h('a', { href: `#/jobs/${step.jobId}`, class: 'mono' }, `…${step.jobId.slice(-8)}`) : '—'),
              ),
            ),
          ),
        ),
      );
    },
  };
}
