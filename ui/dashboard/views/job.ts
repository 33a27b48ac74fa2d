import { get, post } from '../api.js';
import type { Context, View } from '../context.js';
import { h, replace } from '../dom.js';
import { millis, json, progressText, when } from '../format.js';
import { duration, relative, timeAgo, timeBoth } from '../time.js';
import { actionForm, STATE_POLICY_LABELS } from './actions.js';
import { EventLog, type JobEvent } from './job-events.js';
import { stackTraces, type AttemptStack } from './stacks.js';
import { statusBadge } from './list.js';

interface Job {
  id: string;
  jobType: string;
  organizationId: string | null;
  payload: unknown;
  status: string;
  /** status, except RUNNING for a LEASED job whose handler has started */
  state: string;
  priority: number;
  attempt: number;
  maxAttempts: number;
  runNumber: number;
  timeoutSeconds: number;
  nextRunAt: string;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  heartbeatAt: string | null;
  progress: unknown;
  checkpoint: unknown;
  output: unknown;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  resourceKey?: string | null;
  stage: string | null;
  concurrencyKey?: string | null;
  rateKey?: string | null;
  /** Fairness key: claims take turns between a type's keys (absent or null: none). */
  fairKey?: string | null;
  /** The debounce or throttle window whose job this is (absent: none). */
  enqueueWindow?: { kind: 'debounce' | 'throttle'; key: string; closesAt: string | null };
}

/** The job's concurrency key as its row stands (src/dashboard/queries.ts JobConcurrency). */
interface JobConcurrency {
  key: string;
  limit: number;
  /** Admin: every lease of the key; another scope: its own. */
  leased: number;
  /** Every organization's leases reach the limit. */
  full: boolean;
  setBy: 'enqueue' | 'operator';
}

/** The job's rate key's bucket as it stands (src/dashboard/queries.ts JobRateLimit). */
interface JobRateLimit {
  key: string;
  limit: number;
  periodMs: number;
  burst: number;
  /** Fractional: the bucket refills continuously; a start takes a whole token. */
  tokens: number;
  /** Until a whole token is there (0: one is). */
  nextTokenMs: number;
  setBy: 'enqueue' | 'operator';
}

interface Attempt {
  seq: string;
  runNumber: number;
  attempt: number;
  workerId: string;
  startedAt: string;
  finishedAt: string | null;
  outcome: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  retryDelayMs: number | null;
  retryDelaySource: string | null;
  nextRunAt: string | null;
  /** The handler's error stack, bounded, when the worker captured one (absent otherwise). */
  stack?: string | null;
}

interface JobDetail {
  job: Job;
  attempts: Attempt[];
  attemptsCursor: string | null;
  events: JobEvent[];
  moreEvents: boolean;
  eventsCursor: string | null;
  workflowStep: { workflowRunId: string; stepKey: string } | null;
  replayOf: { sourceJobId: string; sourceRunNumber: number; reason: string; createdAt: string } | null;
  stacks?: AttemptStack[];
  replays: { replayJobId: string; sourceRunNumber: number; reason: string; createdAt: string }[];
  concurrency?: JobConcurrency | null;
  rateLimit?: JobRateLimit | null;
}

function facts(rows: [string, Node | string][]): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    rows.flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]),
  );
}

/**
 * A keyed job's key and its slots; for a due PENDING job on a full key, why it waits. Outside the admin scope the
 * leases counted are the scope's own (the key's limit is shared by every organization's jobs).
 */
function concurrencyFacts(job: Job, concurrency: JobConcurrency | null | undefined, admin: boolean): [string, Node | string][] {
  if (!job.concurrencyKey) return [];
  if (!concurrency) return [['concurrency key', job.concurrencyKey]];
  const held = `${concurrency.leased} of ${concurrency.limit} leased${admin ? '' : ' by this scope’s jobs'}${concurrency.setBy === 'operator' ? ' (limit set by an operator)' : ''}`;
  const due = job.status === 'PENDING' && new Date(job.nextRunAt).getTime() <= Date.now();
  if (due && concurrency.full) {
    return [['waiting', h('span', { class: 'wait-reason' }, `waiting for a concurrency slot: key ${concurrency.key}, ${held}`)]];
  }
  return [['concurrency key', `${concurrency.key}, ${held}`]];
}

/** A rate-limited job's key and its bucket; for a due PENDING job with no whole token, why it waits and how long. */
function rateFacts(job: Job, rate: JobRateLimit | null | undefined): [string, Node | string][] {
  if (!job.rateKey) return [];
  if (!rate) return [['rate key', job.rateKey]];
  const bucket = `${Math.floor(rate.tokens)} of ${rate.burst} tokens (${rate.limit} per ${millis(rate.periodMs)}${rate.setBy === 'operator' ? ', set by an operator' : ''})`;
  const due = job.status === 'PENDING' && new Date(job.nextRunAt).getTime() <= Date.now();
  if (due && rate.tokens < 1) {
    return [
      ['waiting', h('span', { class: 'wait-reason' }, `waiting for a rate-limit token: key ${rate.key}, ${bucket}, next in ${millis(rate.nextTokenMs)}`)],
    ];
  }
  return [['rate key', `${rate.key}, ${bucket}`]];
}

function jobActions(context: Context, detail: JobDetail): HTMLElement[] {
  const { job } = detail;
  const direct = detail.workflowStep === null;
  const forms: HTMLElement[] = [];
  if (job.status === 'PENDING' || job.status === 'LEASED') {
    forms.push(
      actionForm(
        context,
        'cancel-job',
        'Cancel this job',
        [{ name: 'reason', label: 'Reason (required)', required: true }],
        'Cancel job…',
        (values) => post(`jobs/${job.id}/cancel`, { reason: values.reason }),
        {
          confirm: (values) =>
            `Cancel job ${job.jobType} ${job.id}? Reason: “${values.reason}”. A running handler is told to stop; this cannot be undone (requeue starts a new run).`,
        },
      ),
    );
  }
  if (direct && job.status === 'SUCCEEDED') {
    // One key per form: a retried click replays once (the library's idempotency), a new visit makes a new replay.
    const replayRequestKey = `dashboard-${crypto.randomUUID()}`;
    forms.push(
      actionForm(context, 'replay-job', 'Replay as a new job', [{ name: 'reason', label: 'Reason (required)', required: true }], 'Replay', (values) =>
        post(`jobs/${job.id}/replay`, { expectedRunNumber: job.runNumber, reason: values.reason, replayRequestKey }),
      ),
    );
  }
  if (direct && (job.status === 'DEAD_LETTERED' || job.status === 'CANCELED')) {
    forms.push(
      actionForm(
        context,
        'requeue-job',
        'Requeue (a new run of this job)',
        [
          {
            name: 'statePolicy',
            label: 'Progress and checkpoint',
            kind: 'select',
            options: Object.keys(STATE_POLICY_LABELS),
            optionLabels: STATE_POLICY_LABELS,
            value: 'preserve_progress_and_checkpoint',
          },
        ],
        'Requeue',
        (values) => post(`jobs/${job.id}/requeue`, { expectedStatus: job.status, expectedRunNumber: job.runNumber, statePolicy: values.statePolicy }),
      ),
    );
  }
  return forms;
}

const RETRY_SOURCE: Record<string, string> = { POLICY: 'backoff policy', HANDLER_NOT_BEFORE: "handler's retry-not-before" };

function attemptRow(a: Attempt): HTMLElement {
  return h(
    'tr',
    { 'data-testid': 'attempt-row' },
    h('td', { class: 'num' }, a.attempt),
    h('td', { class: 'num' }, a.runNumber),
    h('td', { class: 'mono small' }, a.workerId),
    h('td', {}, timeAgo(a.startedAt)),
    h('td', {}, a.finishedAt ? timeAgo(a.finishedAt) : 'running'),
    h('td', { class: 'num', 'data-testid': 'attempt-duration' }, duration(a.startedAt, a.finishedAt)),
    h('td', { 'data-testid': 'attempt-outcome' }, a.outcome ? statusBadge(a.outcome) : '—'),
    h(
      'td',
      { class: 'wrap' },
      a.errorCode ? h('span', {}, h('code', {}, a.errorCode), a.errorMessage ? `: ${a.errorMessage}` : '') : '—',
      typeof a.stack === 'string' && a.stack !== ''
        ? h('details', { class: 'stack' }, h('summary', {}, 'stack trace'), h('pre', { 'data-testid': 'attempt-stack' }, a.stack))
        : null,
    ),
    h('td', {}, a.retryDelayMs === null ? '—' : `${millis(a.retryDelayMs)} (${RETRY_SOURCE[a.retryDelaySource ?? ''] ?? a.retryDelaySource ?? '?'})`),
    h('td', {}, when(a.nextRunAt)),
  );
}

function attemptsTable(attempts: Attempt[]): HTMLElement {
  if (attempts.length === 0) return h('p', { class: 'muted' }, 'Not claimed yet.');
  return h(
    'table',
    { class: 'list', 'data-testid': 'attempts' },
    h('caption', { class: 'sr-only' }, 'Attempts of this job, oldest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['attempt', 'run', 'worker', 'started', 'finished', 'took', 'outcome', 'error', 'retry delay', 'runnable again'].map((name) =>
          h('th', { scope: 'col' }, name),
        ),
      ),
    ),
    h('tbody', {}, attempts.map(attemptRow)),
  );
}

/**
 * Attempt pages past the first, loaded on request (a continuation job can have
 * thousands of attempts). Once the operator asked for them they stay: each
 * refresh merges them with the first page by `seq` (which orders a job's
 * attempts) and reads the attempts that started since the last one held.
 */
class LaterAttempts {
  private rows = new Map<string, Attempt>();
  private expanded = false;
  private more = false;

  constructor(
    private readonly jobId: string,
    private readonly onError: (error: unknown) => void,
    private readonly rerender: () => void,
  ) {}

  private lastSeq(first: Attempt[]): string | undefined {
    const seqs = [...first.map((a) => a.seq), ...this.rows.keys()];
    return seqs.reduce<string | undefined>((max, seq) => (max === undefined || BigInt(seq) > BigInt(max) ? seq : max), undefined);
  }

  /** One page after the newest attempt held (first page included). */
  async load(first: Attempt[]): Promise<void> {
    const cursor = this.lastSeq(first);
    const page = await get<{ items: Attempt[]; nextCursor: string | null }>(`jobs/${encodeURIComponent(this.jobId)}/attempts`, { cursor });
    for (const a of page.items) this.rows.set(a.seq, a);
    this.more = page.nextCursor !== null;
  }

  /** On refresh, when expanded: the attempts that started since. */
  async catchUp(first: Attempt[]): Promise<void> {
    if (this.expanded) await this.load(first);
  }

  render(first: Attempt[], firstHasMore: boolean): (HTMLElement | null)[] {
    const all = new Map(this.rows);
    for (const a of first) all.set(a.seq, a);
    const attempts = [...all.values()].sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
    const more = this.expanded ? this.more : firstHasMore;
    const button = h(
      'button',
      {
        type: 'button',
        onclick: () => {
          this.expanded = true;
          this.load(first).then(this.rerender, this.onError);
        },
      },
      'Show later attempts',
    );
    return [attemptsTable(attempts), more ? button : null];
  }
}

export function jobView(context: Context, jobId: string): View {
  const title = h('h1', { id: 'job-title' }, 'Job ', h('span', { class: 'mono' }, jobId));
  const summary = h('div');
  const actions = h('section', { 'aria-label': 'Actions', class: 'actions' });
  const details = h('div');
  const root = h('article', { 'aria-labelledby': 'job-title' }, title, summary, actions, details);
  let actionKey = '';
  let latest: JobDetail | undefined;
  const attemptsBox = h('div');
  const renderAttempts = () => {
    if (latest) replace(attemptsBox, later.render(latest.attempts, latest.attemptsCursor !== null));
  };
  const later = new LaterAttempts(jobId, context.showError, renderAttempts);
  const eventsBox = h('div');
  const renderEvents = () => {
    if (latest) replace(eventsBox, eventLog.render(latest.events, latest.eventsCursor));
  };
  const eventLog = new EventLog(jobId, context.showError, renderEvents);
  return {
    root,
    async refresh() {
      const detail = await get<JobDetail>(`jobs/${encodeURIComponent(jobId)}`);
      await later.catchUp(detail.attempts);
      latest = detail;
      const { job } = detail;
      replace(
        summary,
        facts([
          ['status', statusBadge(job.state)],
          ['type', job.jobType],
          ['organization', job.organizationId ?? '—'],
          ['attempt', `${job.attempt} of ${job.maxAttempts} (run ${job.runNumber})`],
          ['stage', job.stage ?? '—'],
          ['progress', progressText(job.progress)],
          ['priority', String(job.priority)],
          ...concurrencyFacts(job, detail.concurrency, context.session.scope.kind === 'admin'),
          ...rateFacts(job, detail.rateLimit),
          ...(job.fairKey ? ([['fairness key', `${job.fairKey}: takes turns with the type's other keys`]] as [string, string][]) : []),
          // Only a PENDING job has a next run; a leased or ended one's column is leftover, not a plan.
          ...(job.status === 'PENDING'
            ? [[new Date(job.nextRunAt).getTime() > Date.now() ? 'scheduled for' : 'due since', timeBoth(job.nextRunAt)] as [string, Node | string]]
            : []),
          // Why a PENDING job waits: each request of its debounce key moves it (never past closesAt).
          ...(job.enqueueWindow
            ? [
                [
                  job.enqueueWindow.kind,
                  job.enqueueWindow.kind === 'debounce'
                    ? `key ${job.enqueueWindow.key}: each request moves it${job.enqueueWindow.closesAt ? `, never past ${when(job.enqueueWindow.closesAt)}` : ''}`
                    : `key ${job.enqueueWindow.key}: requests until ${when(job.enqueueWindow.closesAt)} return this job`,
                ] as [string, string],
              ]
            : []),
          ['lease', job.leaseOwner ? `${job.leaseOwner} until ${when(job.leaseExpiresAt)} (heartbeat ${relative(job.heartbeatAt)})` : '—'],
          ['created', timeBoth(job.createdAt)],
          ['started', timeBoth(job.startedAt)],
          ['finished', timeBoth(job.finishedAt)],
          ['waited', job.startedAt ? duration(job.createdAt, job.startedAt) : job.finishedAt ? 'never started' : duration(job.createdAt, null)],
          ['took', job.startedAt ? duration(job.startedAt, job.finishedAt) : '—'],
          // A succeeded job's last error is an earlier attempt's (listed below), not its state.
          ...(job.lastErrorCode && job.status !== 'SUCCEEDED'
            ? [['last error', `${job.lastErrorCode}: ${job.lastErrorMessage ?? ''}`] as [string, string]]
            : []),
          [
            'workflow',
            detail.workflowStep
              ? h(
                  'a',
                  { href: `#/runs/${detail.workflowStep.workflowRunId}` },
                  `step ${detail.workflowStep.stepKey} of run ${detail.workflowStep.workflowRunId}`,
                )
              : 'a direct job',
          ],
          [
            'replay of',
            detail.replayOf
              ? h(
                  'a',
                  { href: `#/jobs/${detail.replayOf.sourceJobId}`, class: 'mono' },
                  `${detail.replayOf.sourceJobId} (run ${detail.replayOf.sourceRunNumber}): ${detail.replayOf.reason}`,
                )
              : '—',
          ],
        ]),
      );
      const key = `${job.status}:${job.runNumber}`;
      if (!context.session.readOnly && key !== actionKey) {
        actionKey = key;
        replace(actions, jobActions(context, detail));
      }
      renderAttempts();
      renderEvents();
      replace(
        details,
        h('h2', {}, 'Attempts'),
        attemptsBox,
        stackTraces(detail.stacks),
        h('h2', {}, 'Payload'),
        h('pre', { tabindex: 0 }, json(job.payload)),
        h('h2', {}, 'Output'),
        h('pre', { tabindex: 0 }, json(job.output)),
        h('h2', {}, 'Progress and checkpoint'),
        h('pre', { tabindex: 0 }, json({ progress: job.progress, checkpoint: job.checkpoint })),
        h('h2', {}, 'Replays of this job'),
        detail.replays.length === 0
          ? h('p', {}, 'None.')
          : h(
              'ul',
              {},
              detail.replays.map((r) =>
                h(
                  'li',
                  {},
                  h('a', { href: `#/jobs/${r.replayJobId}`, class: 'mono' }, r.replayJobId),
                  ` of run ${r.sourceRunNumber}, `,
                  timeAgo(r.createdAt),
                  `: ${r.reason}`,
                ),
              ),
            ),
        h('h2', {}, 'Events'),
        eventsBox,
      );
    },
  };
}
