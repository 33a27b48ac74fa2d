/**
 * The overview's first section, "Needs attention" (src/dashboard/attention.ts):
 * each item says what is wrong and why, and links to where it is fixed (the
 * queue's jobs, the workers, the runs waiting on a person, the dead letters
 * of one type and error code).
 */
import { h } from '../dom.js';
import { distinctId, label, millis } from '../format.js';
import { timeAgo } from '../time.js';

type Problem = 'stuck' | 'saturated' | 'failing';

/** src/dashboard/attention.ts DashboardAttention */
export interface Attention {
  settings: { saturationWaitMs: number; failureWindowMs: number; failureRate: number; failureMinCount: number; failuresWindowMs: number };
  queues: {
    jobType: string;
    problems: Problem[];
    runnable: number;
    oldestWaitMs: number | null;
    liveWorkers: number;
    slots: number | null;
    slotsBusy: number | null;
    succeeded: number;
    deadLettered: number;
    failureRate: number | null;
  }[];
  waiting: {
    total: number;
    byType: { workflowType: string; count: number }[];
    runs: {
      id: string;
      workflowType: string;
      organizationId: string | null;
      status: string;
      waitingSteps: string[];
      waitingStepCount: number;
      waitingSince: string;
    }[];
  };
  failures: { jobType: string; errorCode: string | null; count: number; directCount: number; newestAt: string; newestJobId: string; message: string | null }[];
}

const hash = (path: string, params: Record<string, string | undefined>) => {
  const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return `#/${path}?${query.toString()}`;
};
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const windowText = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 60_000)} min`);

const TITLES: Record<Problem, string> = { stuck: 'Stuck', saturated: 'Saturated', failing: 'Failing' };

function why(queue: Attention['queues'][number], problem: Problem, attention: Attention, admin: boolean): (Node | string)[] {
  const waited = queue.oldestWaitMs === null ? '' : `, the oldest waiting ${millis(queue.oldestWaitMs)}`;
  if (problem === 'stuck') {
    return [`${plural(queue.runnable, 'runnable job')}${waited}, and no live worker handles the type. `, h('a', { href: '#/queues' }, 'Queues')];
  }
  if (problem === 'saturated') {
    const slots =
      queue.slots === null
        ? 'every slot of the workers handling it is busy'
        : `${queue.slotsBusy} of ${queue.slots} slots busy (${plural(queue.liveWorkers, 'live worker')})`;
    return [
      `${plural(queue.runnable, 'job')} waiting${waited}; ${slots}. Add workers or concurrency for it. `,
      admin ? h('a', { href: '#/workers' }, 'Workers') : h('a', { href: '#/queues' }, 'Queues'),
    ];
  }
  const rate = queue.failureRate === null ? '' : `${Math.round(queue.failureRate * 100)}%`;
  return [
    `${rate} of its jobs failed in the last ${windowText(attention.settings.failureWindowMs)} (${queue.deadLettered} dead-lettered of ${queue.deadLettered + queue.succeeded}). `,
    h('a', { href: hash('dead-letters', { type: queue.jobType }) }, 'Dead letters'),
  ];
}

function queueItems(attention: Attention, admin: boolean): HTMLElement[] {
  return attention.queues.flatMap((queue) =>
    queue.problems.map((problem) =>
      h(
        'li',
        { 'data-testid': 'attention-queue', 'data-type': queue.jobType, 'data-problem': problem, class: `attention-${problem}` },
        h('strong', {}, `${TITLES[problem]}: `),
        h('a', { href: hash('jobs', { type: queue.jobType, status: problem === 'failing' ? 'DEAD_LETTERED' : 'PENDING' }) }, h('code', {}, queue.jobType)),
        ' — ',
        why(queue, problem, attention, admin),
      ),
    ),
  );
}

function waitingItem(attention: Attention): HTMLElement | null {
  const { waiting } = attention;
  if (waiting.total === 0) return null;
  return h(
    'li',
    { 'data-testid': 'attention-waiting', 'data-count': waiting.total },
    h('strong', {}, 'Waiting on a person: '),
    h('a', { href: hash('runs', { waiting: '1' }) }, `${plural(waiting.total, 'run')} ${waiting.total === 1 ? 'waits' : 'wait'} for an external completion`),
    ` (${waiting.byType.map((entry) => `${entry.workflowType} ${entry.count}`).join(', ')}), whatever their status. Longest waiting:`,
    h(
      'ul',
      { class: 'attention-runs' },
      waiting.runs.map((run) =>
        h(
          'li',
          { 'data-testid': 'attention-waiting-run', 'data-run-id': run.id },
          h('a', { href: `#/runs/${run.id}`, class: 'mono', title: run.id }, distinctId(run.id)),
          ` ${run.workflowType} · step ${run.waitingSteps.join(', ')}${run.waitingStepCount > run.waitingSteps.length ? ` and ${run.waitingStepCount - run.waitingSteps.length} more` : ''} · run ${label(run.status)} · waiting since `,
          timeAgo(run.waitingSince),
        ),
      ),
    ),
  );
}

function failuresTable(attention: Attention): HTMLElement | null {
  if (attention.failures.length === 0) return null;
  return h(
    'table',
    { class: 'list', 'data-testid': 'attention-failures' },
    h('caption', {}, `Newest failures by error code (dead letters, last ${windowText(attention.settings.failuresWindowMs)})`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['type', 'error code', 'jobs', 'newest', 'message', 'fix'].map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h(
      'tbody',
      {},
      attention.failures.map((group) =>
        h(
          'tr',
          { 'data-type': group.jobType, 'data-code': group.errorCode ?? '' },
          h('td', {}, h('code', {}, group.jobType)),
          h('td', {}, group.errorCode ?? '(no code)'),
          h('td', { class: 'num' }, group.count),
          h('td', {}, h('a', { href: `#/jobs/${group.newestJobId}` }, timeAgo(group.newestAt))),
          h('td', { class: 'message' }, group.message ?? '—'),
          h(
            'td',
            {},
            group.directCount > 0
              ? h(
                  'a',
                  { href: hash('dead-letters', { type: group.jobType, errorCode: group.errorCode ?? undefined }) },
                  `Requeue ${plural(group.directCount, 'dead letter')}`,
                )
              : h('a', { href: hash('jobs', { type: group.jobType, status: 'DEAD_LETTERED' }) }, 'Workflow jobs: recover their runs'),
          ),
        ),
      ),
    ),
  );
}

/** The section; "nothing needs you" when nothing does, said so rather than left blank. */
export function attentionSection(attention: Attention, admin: boolean): HTMLElement {
  const items = [...queueItems(attention, admin), waitingItem(attention)].filter((item): item is HTMLElement => item !== null);
  const failures = failuresTable(attention);
  return h(
    'section',
    { class: 'attention', 'aria-labelledby': 'attention-title', 'data-testid': 'attention' },
    h('h2', { id: 'attention-title' }, 'Needs attention'),
    items.length === 0 && failures === null
      ? h(
          'p',
          { 'data-testid': 'attention-none' },
          'Nothing needs you: no queue stuck, saturated or failing, no run waiting on a person, no recent dead letter.',
        )
      : null,
    items.length > 0 ? h('ul', { class: 'attention-items' }, items) : null,
    failures,
  );
}
