import { get, post } from '../api.js';
import type { Context, View } from '../context.js';
import { DagView, type DagEdge, type DagStep } from '../dag.js';
import { h, replace } from '../dom.js';
import { json, progressText, when } from '../format.js';
import { actionForm } from './actions.js';
import { runActionForms } from './run-actions.js';
import { statusBadge } from './list.js';

interface Step extends DagStep {
  id: string;
  jobId: string | null;
  statusReason: string | null;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  output: unknown;
  payload: unknown;
  startedAt: string | null;
  finishedAt: string | null;
}

interface RunDetail {
  run: { id: string; workflowType: string; organizationId: string | null; status: string; statusReason: string | null; result: unknown; createdAt: string; finishedAt: string | null };
  steps: Step[];
  edges: DagEdge[];
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

function completeForm(context: Context, runId: string, step: Step): HTMLFormElement {
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
    const key = step ? JSON.stringify([step.stepKey, step.status, step.stage, step.progress]) : '';
    if (key === panelKey) return;
    panelKey = key;
    if (!step || !latest) {
      replace(panel, h('p', { class: 'muted' }, 'Select a step in the graph or the table to see it here.'));
      return;
    }
    const canComplete = !context.session.readOnly && step.executionKind === 'EXTERNAL' && step.status === 'WAITING_FOR_EXTERNAL';
    replace(
      panel,
      h('h2', { tabindex: -1 }, `Step ${step.stepKey}`),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'status'),
        h('dd', {}, statusBadge(step.status)),
        h('dt', {}, 'kind'),
        h('dd', {}, step.executionKind === 'EXTERNAL' ? 'external (completed from outside)' : `job ${step.jobType ?? ''}`),
        h('dt', {}, 'job'),
        h('dd', {}, step.jobId ? h('a', { href: `#/jobs/${step.jobId}`, class: 'mono' }, step.jobId) : '—'),
        h('dt', {}, 'reason / error'),
        h('dd', {}, [step.statusReason, step.lastErrorCode && `${step.lastErrorCode}: ${step.lastErrorMessage ?? ''}`].filter(Boolean).join(' · ') || '—'),
        h('dt', {}, 'stage'),
        h('dd', {}, step.stage ?? '—'),
        h('dt', {}, 'progress'),
        h('dd', {}, progressText(step.progress)),
        h('dt', {}, 'started / finished'),
        h('dd', {}, `${when(step.startedAt)} / ${when(step.finishedAt)}`),
      ),
      h('h3', {}, 'Output'),
      h('pre', { tabindex: 0 }, json(step.output)),
      canComplete ? completeForm(context, latest.run.id, step) : null,
    );
  };
  const select = (stepKey: string) => {
    selected = stepKey;
    renderPanel();
    panel.querySelector<HTMLElement>('h2')?.focus();
  };
  const dag = new DagView(select);
  const root = h(
    'article',
    { 'aria-labelledby': 'run-title' },
    h('h1', { id: 'run-title' }, 'Run ', h('span', { class: 'mono' }, runId)),
    summary,
    cancel,
    h('div', { class: 'run-layout' }, dag.root, panel),
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
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'status'),
          h('dd', { 'data-testid': 'run-status' }, statusBadge(run.status)),
          h('dt', {}, 'type'),
          h('dd', {}, run.workflowType),
          h('dt', {}, 'organization'),
          h('dd', {}, run.organizationId ?? '—'),
          h('dt', {}, 'created / finished'),
          h('dd', {}, `${when(run.createdAt)} / ${when(run.finishedAt)}`),
          h('dt', {}, 'result'),
          h('dd', {}, run.result === null ? '—' : h('code', {}, JSON.stringify(run.result))),
        ),
        detail.truncated ? h('p', { class: 'muted' }, 'This run is larger than the dashboard draws; the graph shows its first steps.') : null,
      );
      const runKey = `${run.status}`;
      if (runKey !== cancelKey) {
        cancelKey = runKey;
        replace(cancel, runActionForms(context, run));
      }
      dag.update(detail.steps, detail.edges);
      renderPanel();
      replace(
        table,
        h(
          'table',
          { class: 'list' },
          h('caption', { class: 'sr-only' }, 'Steps of this run'),
          h('thead', {}, h('tr', {}, ['step', 'kind', 'status', 'stage', 'progress', 'after', 'job'].map((name) => h('th', { scope: 'col' }, name)))),
          h(
            'tbody',
            {},
            detail.steps.map((step) =>
              h(
                'tr',
                {},
                h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => select(step.stepKey) }, step.stepKey)),
                h('td', {}, step.executionKind === 'EXTERNAL' ? 'external' : (step.jobType ?? 'job')),
                h('td', {}, statusBadge(step.status)),
                h('td', { 'data-testid': 'step-stage' }, step.stage ?? '—'),
                h('td', {}, progressText(step.progress)),
                h('td', {}, detail.edges.filter((edge) => edge.dependentStepKey === step.stepKey).map((edge) => `${edge.prerequisiteStepKey}${edge.releaseMode === 'ON_TERMINAL' ? ' (any outcome)' : ''}`).join(', ') || '—'),
                h('td', {}, step.jobId ? h('a', { href: `#/jobs/${step.jobId}`, class: 'mono' }, `…${step.jobId.slice(-8)}`) : '—'),
              ),
            ),
          ),
        ),
      );
    },
  };
}
