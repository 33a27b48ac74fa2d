/**
 * The run page's actions: cancel (a reason, then a confirmation) while the run
 * is live; once it ended with errors or was canceled, recover it as a new run,
 * every step again or the failed ones only (src/recovery), then open the new run.
 */
import { post } from '../api.js';
import type { Context } from '../context.js';
import { actionForm, RECOVERY_MODE_LABELS } from './actions.js';

export interface RunForActions {
  id: string;
  workflowType: string;
  status: string;
}

const LIVE = new Set(['RUNNING', 'WAITING_FOR_EXTERNAL']);
const RECOVERABLE = new Set(['COMPLETED_WITH_ERRORS', 'CANCELED']);

export function runActionForms(context: Context, run: RunForActions): HTMLFormElement[] {
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
  return [
    actionForm(
      context,
      'recover-run',
      'Recover this run (as a new run)',
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
      ],
      'Recover…',
      (values) => post(`runs/${run.id}/recover`, { mode: values.mode, reason: values.reason, requestKey }),
      {
        confirm: (values) =>
          `Start a new run of ${run.workflowType} from this one, ${values.mode === 'full' ? 'running every step again' : 'carrying the steps that succeeded and running the rest again'}? This run is kept as it is. Reason: “${values.reason}”.`,
        done: (answer) => {
          const id = (answer as { recovery?: { recoveryRunId?: string } }).recovery?.recoveryRunId;
          if (id) location.hash = `#/runs/${id}`;
        },
      },
    ),
  ];
}
