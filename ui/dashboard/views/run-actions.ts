/**
 * The run page's actions: cancel (a reason, then a confirmation) while the run
 * is live; once it ended with errors or was canceled, recover it as a new run,
 * every step again or the failed ones only (src/recovery), then open the new run.
 * Above them, the run's recovery lineage both ways. A run already recovered
 * offers no recovery form, only an explicit "Recover again" (the library
 * refuses a second recovery without `again`).
 */
import { post } from '../api.js';
import type { Context } from '../context.js';
import { h } from '../dom.js';
import { actionForm, RECOVERY_MODE_LABELS } from './actions.js';
import { statusBadge } from './list.js';

interface RecoveryLink {
  sourceRunId: string;
  recoveryRunId: string;
  reason: string;
  mode: string;
  createdAt: string;
  recoveryStatus: string;
}

export interface RunForActions {
  id: string;
  workflowType: string;
  status: string;
  /** `$function` for a durable function run, whose failed-only recovery is a fork. */
  resultStepKey?: string | null;
  recoveredFrom?: RecoveryLink | null;
  recoveries?: { count: number; latest: RecoveryLink | null };
}

/** What the actions (and lineage) depend on: they are rebuilt only when it changes, so typed input survives refreshes. */
export function runActionsKey(run: RunForActions): string {
  return JSON.stringify([run.status, run.recoveredFrom?.recoveryRunId, run.recoveries?.count, run.recoveries?.latest?.recoveryStatus]);
}

const runLink = (id: string, testid: string) => h('a', { href: `#/runs/${id}`, class: 'mono', 'data-testid': testid }, id);

/** "Recovered from …" and "Recovered by …": the two ends of a recovery, each a link to the other run's page. */
export function runLineage(run: RunForActions): HTMLElement | null {
  const from = run.recoveredFrom;
  const latest = run.recoveries?.latest;
  if (!from && !latest) return null;
  const count = run.recoveries?.count ?? 0;
  return h(
    'div',
    { class: 'lineage', 'data-testid': 'run-lineage' },
    from ? h('p', {}, 'Recovered from run ', runLink(from.sourceRunId, 'recovered-from'), ` (${from.mode.replace('_', ' ')}; reason: ${from.reason})`) : null,
    latest
      ? h(
          'p',
          {},
          'Recovered by run ',
          runLink(latest.recoveryRunId, 'recovered-by'),
          ' ',
          statusBadge(latest.recoveryStatus),
          ` (${latest.mode.replace('_', ' ')}; reason: ${latest.reason})${count > 1 ? `; the latest of ${count} recoveries` : ''}`,
        )
      : null,
  );
}

const LIVE = new Set(['RUNNING', 'WAITING_FOR_EXTERNAL']);
const RECOVERABLE = new Set(['COMPLETED_WITH_ERRORS', 'CANCELED']);

export function runActionForms(context: Context, run: RunForActions): HTMLElement[] {
  const lineage = runLineage(run);
  const forms = actionForms(context, run);
  return lineage ? [lineage, ...forms] : forms;
}

function actionForms(context: Context, run: RunForActions): HTMLElement[] {
  if (context.session.readOnly) return [];
  if (LIVE.has(run.status)) {
    return [
      actionForm(
        context,
        'cancel-run',
        'Cancel this run',
        [{ name: 'reason', label: 'Reason (required)', required: true }],
        'Cancel run…',
        (values) => post(`runs/${run.id}/cancel`, { reason: values.reason }),
        {
          confirm: (values) =>
            `Cancel run ${run.workflowType} ${run.id}? Every step not finished is canceled and running handlers are told to stop. Reason: “${values.reason}”.`,
        },
      ),
    ];
  }
  if (!RECOVERABLE.has(run.status)) return [];
  // One key per visit of the page: a retried click makes one recovery (the library's idempotency).
  const requestKey = `dashboard-${crypto.randomUUID()}`;
  const latest = run.recoveries?.latest ?? null;
  const isFunction = run.resultStepKey === '$function';
  const form = actionForm(
    context,
    latest ? 'recover-again' : 'recover-run',
    latest ? 'Recover this run again (another new run)' : 'Recover this run (as a new run)',
    [
      {
        name: 'mode',
        label: 'Steps to run again',
        kind: 'select',
        options: Object.keys(RECOVERY_MODE_LABELS),
        optionLabels: RECOVERY_MODE_LABELS,
        value: 'failed_only',
      },
      { name: 'reason', label: 'Reason (required)', required: true },
      // A durable function's fork point (failed steps only): the library refuses it otherwise, naming the field.
      ...(isFunction ? [{ name: 'fromCallIndex', label: 'From call (optional: reuse only the calls before it)', kind: 'number' as const }] : []),
    ],
    latest ? 'Recover again…' : 'Recover…',
    (values) =>
      post(`runs/${run.id}/recover`, {
        mode: values.mode,
        reason: values.reason,
        requestKey,
        ...(latest ? { again: true } : {}),
        ...(values.fromCallIndex ? { fromCallIndex: /^[0-9]+$/.test(values.fromCallIndex) ? Number(values.fromCallIndex) : values.fromCallIndex } : {}),
      }),
    {
      confirm: (values) =>
        `${latest ? `This run was already recovered as run ${latest.recoveryRunId}. ` : ''}Start a${latest ? 'nother' : ''} new run of ${run.workflowType} from this one, ${values.mode === 'full' ? 'running every step again' : values.fromCallIndex ? `reusing the steps called before call ${values.fromCallIndex} and running the rest again` : 'carrying the steps that succeeded and running the rest again'}? This run is kept as it is. Reason: “${values.reason}”.`,
      done: (answer) => {
        const id = (answer as { recovery?: { recoveryRunId?: string } }).recovery?.recoveryRunId;
        if (id) location.hash = `#/runs/${id}`;
      },
    },
  );
  if (!latest) return [form];
  // Already recovered: the form stays folded behind an explicit "Recover again", never offered as the next step.
  return [h('details', { class: 'recover-again', 'data-testid': 'recover-again' }, h('summary', {}, 'Recover again…'), form)];
}
