/**
 * The dead letters as a list: one row per job type and last error code, with
 * the count, the oldest and newest, a sample message, and "Requeue this
 * group" (the bulk requeue filtered by that type and code, so only that group
 * moves). A type no live worker handles is flagged in its row and in the
 * confirmation: requeued, its jobs would wait. Rows are updated in place on
 * each refresh, so an open requeue form keeps what was typed.
 */
import { get, post } from '../api.js';
import type { Context } from '../context.js';
import { h, replace } from '../dom.js';
import { timeAgo } from '../time.js';
import { actionForm } from './actions.js';

interface Group {
  jobType: string;
  errorCode: string | null;
  count: number;
  oldestAt: string;
  newestAt: string;
  sampleMessage: string | null;
  liveWorkers: number;
  unserved: boolean;
}

interface Groups {
  groups: Group[];
  truncated: boolean;
  cap: number;
}

interface RequeueAnswer {
  requeue: { operationId: string; count: number; more: boolean };
}

interface Row {
  tr: HTMLTableRowElement;
  group: Group;
  cells: Record<'count' | 'oldest' | 'newest' | 'message' | 'workers', HTMLElement>;
  warning: HTMLElement;
}

const keyOf = (group: Group) => JSON.stringify([group.jobType, group.errorCode]);

function noWorkerText(group: Group): string {
  return `No live worker handles ${group.jobType}: requeued, these jobs wait until one starts.`;
}

export function deadLetterGroups(context: Context): { root: HTMLElement; refresh(): Promise<void> } {
  const rows = new Map<string, Row>();
  let cap = 1_000;
  const body = h('tbody');
  const empty = h('p', { class: 'muted', hidden: true }, 'No dead letters.');
  const more = h('p', { class: 'muted', hidden: true }, 'Only the largest groups are listed.');
  const outcome = h('p', { 'data-testid': 'group-result', role: 'status' });
  const table = h(
    'table',
    { class: 'list groups', 'data-testid': 'dead-letter-groups' },
    h('caption', { class: 'sr-only' }, 'Dead letters by type and last error code'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['type', 'error code', 'jobs', 'oldest', 'newest', 'sample message', 'workers', ''].map((name) =>
          h('th', { scope: 'col' }, name || h('span', { class: 'sr-only' }, 'actions')),
        ),
      ),
    ),
    body,
  );

  const requeueForm = (row: Row, index: number): HTMLElement => {
    const { jobType, errorCode } = row.group;
    const form = actionForm(
      context,
      `requeue-group-${index}`,
      `Requeue the ${jobType} dead letters whose last error is ${errorCode}`,
      [{ name: 'reason', label: 'Reason for this group (required, recorded on every job)', required: true }],
      'Requeue group…',
      (values) => post<RequeueAnswer>('dead-letters/requeue', { type: jobType, errorCode, limit: Math.min(row.group.count, cap), reason: values.reason }),
      {
        confirm: (values) =>
          `${row.group.unserved ? `Warning: ${noWorkerText(row.group)} ` : ''}Requeue ${Math.min(row.group.count, cap)} dead-lettered ${jobType} job${row.group.count === 1 ? '' : 's'} (last error ${errorCode}) as new runs? Reason: “${values.reason}”.`,
        done: (answer) => {
          const { requeue } = answer as RequeueAnswer;
          outcome.textContent = `Requeued ${requeue.count} ${jobType} job${requeue.count === 1 ? '' : 's'} (${errorCode}) as operation ${requeue.operationId}.${requeue.more ? ' More of this group remain: the cap was reached.' : ''}`;
        },
      },
    );
    form.querySelector('h3')?.after(row.warning);
    return h('details', { class: 'requeue-group' }, h('summary', {}, 'Requeue this group…'), form);
  };

  const build = (group: Group, index: number): Row => {
    const cell = (col: string) => h('td', { 'data-col': col });
    const row: Row = {
      tr: h('tr', { 'data-type': group.jobType, 'data-error-code': group.errorCode ?? '' }),
      group,
      cells: { count: cell('count'), oldest: cell('oldest'), newest: cell('newest'), message: cell('message'), workers: cell('workers') },
      warning: h('p', { class: 'warning', role: 'note', 'data-testid': 'group-unserved-warning' }),
    };
    row.cells.count.className = 'num';
    row.cells.message.className = 'message';
    const link = h('a', { href: `#/jobs?${new URLSearchParams({ status: 'DEAD_LETTERED', type: group.jobType }).toString()}`, class: 'mono' }, group.jobType);
    const canAct = !context.session.readOnly && group.errorCode !== null;
    row.tr.append(
      h('td', { 'data-col': 'type' }, link),
      h('td', { 'data-col': 'error-code' }, group.errorCode ? h('code', {}, group.errorCode) : h('span', { class: 'muted' }, 'none')),
      row.cells.count,
      row.cells.oldest,
      row.cells.newest,
      row.cells.message,
      row.cells.workers,
      h('td', { 'data-col': 'action' }, canAct ? requeueForm(row, index) : null),
    );
    return row;
  };

  const update = (row: Row, group: Group) => {
    row.group = group;
    row.tr.className = group.unserved ? 'flagged' : '';
    replace(row.cells.count, group.count.toLocaleString('en-US'));
    replace(row.cells.oldest, timeAgo(group.oldestAt));
    replace(row.cells.newest, timeAgo(group.newestAt));
    const message = group.sampleMessage ?? '';
    replace(row.cells.message, message ? h('span', { class: 'truncate', title: message }, message) : h('span', { class: 'muted' }, '—'));
    replace(row.cells.workers, group.unserved ? h('strong', {}, '0 — no worker') : String(group.liveWorkers));
    row.warning.textContent = noWorkerText(group);
    row.warning.hidden = !group.unserved;
  };

  let built = 0;
  return {
    root: h(
      'section',
      { 'aria-labelledby': 'dead-letter-groups-title' },
      h('h2', { id: 'dead-letter-groups-title' }, 'By type and error code'),
      empty,
      table,
      more,
      outcome,
    ),
    async refresh() {
      const answer = await get<Groups>('dead-letters/groups');
      cap = answer.cap;
      const seen = new Set<string>();
      answer.groups.forEach((group) => {
        const key = keyOf(group);
        seen.add(key);
        let row = rows.get(key);
        if (!row) {
          row = build(group, built++);
          rows.set(key, row);
        }
        update(row, group);
      });
      for (const [key, row] of rows) {
        if (!seen.has(key)) {
          row.tr.remove();
          rows.delete(key);
        }
      }
      // Re-append only when the order changed: moving a row would close nothing, but it can drop focus.
      const order = answer.groups.map((group) => rows.get(keyOf(group))!.tr);
      if (order.some((tr, i) => body.children[i] !== tr)) body.append(...order);
      empty.hidden = answer.groups.length > 0;
      table.hidden = answer.groups.length === 0;
      more.hidden = !answer.truncated;
    },
  };
}
