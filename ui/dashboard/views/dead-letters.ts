/**
 * Dead letters: first the list grouped by type and error code, each group
 * requeued on its own (dead-letter-groups.ts); then the bulk requeue by any
 * filter (`#/dead-letters?type&errorCode&after&before`):
 * the filter is the page's URL, the count is previewed from the server, and the
 * requeue asks for a reason, a cap (at most what the preview counted, at most
 * the server's cap) and a confirmation. The server requeues them as one
 * operation whose id every job's REQUEUED event records.
 */
import { get, post } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { actionForm, STATE_POLICY_LABELS } from './actions.js';
import { deadLetterGroups } from './dead-letter-groups.js';
import { filterForm } from './list.js';

interface Preview {
  count: number;
  more: boolean;
  cap: number;
}

interface RequeueAnswer {
  requeue: { operationId: string; count: number; more: boolean };
}

const FILTERS = ['type', 'errorCode', 'after', 'before'] as const;

function describe(query: URLSearchParams): string {
  const parts = [
    query.get('type') && `type ${query.get('type')}`,
    query.get('errorCode') && `last error ${query.get('errorCode')}`,
    query.get('after') && `dead-lettered from ${query.get('after')}`,
    query.get('before') && `before ${query.get('before')}`,
  ].filter(Boolean);
  return parts.length === 0 ? 'every direct job' : parts.join(', ');
}

export function deadLettersView(context: Context, query: URLSearchParams): View {
  const filter = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) ?? undefined]));
  const count = h('p', { 'data-testid': 'dead-letter-count', 'aria-live': 'polite' }, 'counting…');
  const outcome = h('p', { 'data-testid': 'bulk-result', role: 'status' });
  let preview: Preview | undefined;
  const listQuery = new URLSearchParams({ status: 'DEAD_LETTERED', ...(query.get('type') ? { type: query.get('type')! } : {}) });
  const form = context.session.readOnly
    ? null
    : actionForm(
        context,
        'bulk-requeue',
        'Requeue the matching dead letters',
        [
          { name: 'limit', label: 'At most this many jobs', kind: 'number', required: true },
          { name: 'reason', label: 'Reason (required, recorded on every job)', required: true },
          {
            name: 'statePolicy',
            label: 'Progress and checkpoint',
            kind: 'select',
            options: Object.keys(STATE_POLICY_LABELS),
            optionLabels: STATE_POLICY_LABELS,
            value: 'preserve_progress_and_checkpoint',
          },
        ],
        'Requeue…',
        (values) =>
          post<RequeueAnswer>('dead-letters/requeue', { ...filter, limit: Number(values.limit), reason: values.reason, statePolicy: values.statePolicy }),
        {
          confirm: (values) => `Requeue up to ${values.limit} dead-lettered jobs (${describe(query)}) as new runs? Reason: “${values.reason}”.`,
          done: (answer) => {
            const { requeue } = answer as RequeueAnswer;
            outcome.textContent = `Requeued ${requeue.count} job${requeue.count === 1 ? '' : 's'} as operation ${requeue.operationId}.${requeue.more ? ' More still match: the cap was reached.' : ''}`;
          },
        },
      );
  const groups = deadLetterGroups(context);
  const root = h(
    'section',
    { 'aria-labelledby': 'dead-letters-title' },
    h('h1', { id: 'dead-letters-title' }, 'Dead letters'),
    h('p', { class: 'muted' }, 'Requeue failed direct jobs in bulk. A failed workflow step is recovered from its run’s page instead.'),
    groups.root,
    h('h2', {}, 'Requeue by filter'),
    filterForm('#/dead-letters', query, [
      { name: 'type', label: 'Type' },
      { name: 'errorCode', label: 'Last error code' },
      { name: 'after', label: 'Dead-lettered from (ISO time)' },
      { name: 'before', label: 'Dead-lettered before (ISO time)' },
    ]),
    count,
    h('p', {}, h('a', { href: `#/jobs?${listQuery.toString()}` }, 'See them in the jobs list')),
    form,
    outcome,
  );
  return {
    root,
    async refresh() {
      [, preview] = await Promise.all([groups.refresh(), get<Preview>('dead-letters/count', filter)]);
      replace(
        count,
        `${preview.more ? `More than ${preview.count.toLocaleString('en-US')}` : preview.count.toLocaleString('en-US')} dead-lettered job${preview.count === 1 ? '' : 's'} match (${describe(query)}); one requeue takes at most ${preview.cap.toLocaleString('en-US')}.`,
      );
      const limit = form?.querySelector<HTMLInputElement>('input[name=limit]');
      if (limit && limit.value === '') limit.value = String(Math.min(preview.count, preview.cap));
    },
  };
}
