/** The run page's facts and its selected step's panel: what a run and a step are, did, took, and why they ended as they did. */
import { h } from '../dom.js';
import { json, progressText } from '../format.js';
import { duration, timeBoth } from '../time.js';
import { statusBadge } from './list.js';
import type { TimelineAttempt } from './timeline.js';

export interface RunStep {
  id: string;
  stepKey: string;
  status: string;
  executionKind: string;
  jobType: string | null;
  stage: string | null;
  progress: unknown;
  jobId: string | null;
  statusReason: string | null;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  output: unknown;
  payload: unknown;
  createdAt: string;
  releasedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** A durable function's recorded step: its place in the body's calls (the API lists them in this order). */
  callIndex?: number | null;
}

export interface RunFacts {
  id: string;
  workflowType: string;
  organizationId: string | null;
  status: string;
  statusReason: string | null;
  metadata: unknown;
  idempotencyKey: string | null;
  resultStepKey: string | null;
  result: unknown;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

function facts(rows: [string, Node | string, string?][]): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    rows.flatMap(([name, value, testid]) => [h('dt', {}, name), h('dd', testid ? { 'data-testid': testid } : {}, value)]),
  );
}

function stepLink(key: string, onSelect: (stepKey: string) => void): HTMLElement {
  return h('button', { type: 'button', class: 'link', onclick: () => onSelect(key) }, key);
}

export function runFacts(run: RunFacts, steps: RunStep[], onSelect: (stepKey: string) => void): HTMLElement {
  const failing = steps.filter((step) => step.status === 'FAILED').sort((a, b) => (a.finishedAt ?? '').localeCompare(b.finishedAt ?? ''))[0];
  const hasMetadata = run.metadata !== null && typeof run.metadata === 'object' && Object.keys(run.metadata).length > 0;
  return facts([
    ['status', statusBadge(run.status), 'run-status'],
    ...(run.statusReason ? [['reason', run.statusReason, 'run-reason'] as [string, string, string]] : []),
    ...(failing
      ? [
          [
            'failing step',
            h(
              'span',
              {},
              stepLink(failing.stepKey, onSelect),
              failing.lastErrorCode ? ` ${failing.lastErrorCode}: ${failing.lastErrorMessage ?? ''}` : failing.statusReason ? ` ${failing.statusReason}` : '',
            ),
            'run-failing-step',
          ] as [string, Node, string],
        ]
      : []),
    ['type', run.workflowType],
    ['organization', run.organizationId ?? '—'],
    ['created', timeBoth(run.createdAt)],
    ['finished', timeBoth(run.finishedAt)],
    ['duration', duration(run.createdAt, run.finishedAt), 'run-duration'],
    [
      'steps',
      `${steps.length}: ${['SUCCEEDED', 'FAILED', 'CANCELED', 'RUNNING', 'ENQUEUED', 'WAITING_FOR_EXTERNAL', 'BLOCKED']
        .map((status) => [status, steps.filter((step) => step.status === status).length] as const)
        .filter(([, n]) => n > 0)
        .map(([status, n]) => `${n} ${status.toLowerCase().replace(/_/g, ' ')}`)
        .join(', ')}`,
    ],
    ['result step', run.resultStepKey ? stepLink(run.resultStepKey, onSelect) : '—', 'run-result-step'],
    ['result', run.result === null || run.result === undefined ? '—' : h('pre', { class: 'inline', tabindex: 0 }, json(run.result))],
    ['idempotency key', run.idempotencyKey ? h('code', {}, run.idempotencyKey) : '—'],
    ['metadata', hasMetadata ? h('pre', { class: 'inline', tabindex: 0, 'data-testid': 'run-metadata' }, json(run.metadata)) : '—'],
  ]);
}

export function stepPanel(step: RunStep, attempts: TimelineAttempt[], after: string, form: HTMLFormElement | null): (Node | null)[] {
  const error = step.lastErrorCode ? h('span', {}, h('code', {}, step.lastErrorCode), step.lastErrorMessage ? `: ${step.lastErrorMessage}` : '') : null;
  return [
    h('h2', { tabindex: -1 }, `Step ${step.stepKey}`),
    facts([
      ['status', statusBadge(step.status)],
      ...(step.statusReason ? [['reason', step.statusReason, 'step-reason'] as [string, string, string]] : []),
      ...(error ? [['error', error, 'step-error'] as [string, Node, string]] : []),
      [
        'kind',
        step.executionKind === 'EXTERNAL'
          ? 'external (completed from outside)'
          : step.executionKind === 'FUNCTION'
            ? `function call ${step.callIndex ?? '?'} (ran inside its function's attempt)`
            : `job ${step.jobType ?? ''}`,
      ],
      ['job', step.jobId ? h('a', { href: `#/jobs/${step.jobId}`, class: 'mono' }, step.jobId) : '—'],
      ['after', after || '— (a root step)'],
      ['stage', step.stage ?? '—'],
      ['progress', progressText(step.progress)],
      ['released', timeBoth(step.releasedAt)],
      ['waited', step.releasedAt ? duration(step.createdAt, step.releasedAt) : step.finishedAt ? 'never released' : duration(step.createdAt, null)],
      ['started', timeBoth(step.startedAt)],
      ['finished', timeBoth(step.finishedAt)],
      ['took', step.releasedAt ? duration(step.releasedAt, step.finishedAt) : '—', 'step-took'],
      [
        'attempts',
        attempts.length === 0
          ? '—'
          : attempts
              .map(
                (a) =>
                  `${a.attempt}: ${a.outcome ? a.outcome.toLowerCase().replace(/_/g, ' ') : 'running'}${a.errorCode ? ` (${a.errorCode})` : ''}, ${duration(a.startedAt, a.finishedAt)}`,
              )
              .join('; '),
      ],
    ]),
    h('h3', {}, 'Input'),
    h(
      'pre',
      { tabindex: 0, 'data-testid': 'step-input' },
      step.executionKind === 'EXTERNAL' && step.payload === null
        ? '— (an external step has no input)'
        : step.executionKind === 'FUNCTION'
          ? '— (a function step has no input of its own)'
          : json(step.payload),
    ),
    h('h3', {}, 'Output'),
    h('pre', { tabindex: 0, 'data-testid': 'step-output' }, step.output === null ? '—' : json(step.output)),
    form,
  ];
}
