/**
 * The dashboard's read API, every answer computed in the scope `authorize`
 * returned for the request, through the library's own scoped reads (and
 * queries.ts for the overview and a job's links, search.ts for `q`, throughput.ts
 * for the chart). A job or run outside the
 * scope answers 404 exactly like a missing one.
 *
 *   GET api/overview                      counts by status and type (live in full, finished over 24 h), oldest due job, last hour, getQueueMetrics, throughput per minute,
 *                                         and what needs attention (attention.ts)
 *   GET api/jobs?type&status&org&withoutOrg&from&to&cursor&limit&id&key&q   (id: exact job id; key: exact idempotency key, with type; q: search.ts; withoutOrg: 1 or true; from/to: time-window.ts)
 *   GET api/jobs/:id                      job, attempts, events, workflow step, replay lineage, failed attempts' stacks (stacks.ts)
 *   GET api/jobs/:id/attempts?cursor&limit   the job's attempts after the first page (listJobAttempts)
 *   GET api/jobs/:id/events?cursor&limit     a page of the job's event log (listJobEvents)
 *   GET api/runs?type&status&waiting&org&withoutOrg&from&to&meta&cursor&limit&q   (meta: key=value, metadata-filter.ts)    (q: id prefix or key substring, search.ts); each run with its step counts (run-insights.ts)
 *                                         (waiting: 1 or true, runs waiting on a person: WorkflowRun.waitingForExternal, whatever their status)
 *   GET api/runs/:id                      run, steps, edges, the first attempts of its jobs (the timeline)
 */
import { z } from 'zod';
import type { Db } from '../client/types.js';
import { organizationScope, noOrganizationScope, type Scope } from '../db/scope.js';
import { NotFoundError, ValidationError } from '../errors/runledger-error.js';
import { getQueueMetrics } from '../metrics/queue-metrics.js';
import { listJobAttempts } from '../queue/attempts.js';
import { findJob, getJob, listJobEvents, listJobs } from '../queue/reads.js';
import type { Job, JobStatus } from '../model/job-rows.js';
import type { Page } from '../queue/inputs.js';
import { getWorkflowRun, listWorkflowRuns, listWorkflowStepDependencies, listWorkflowSteps } from '../workflow/reads.js';
import { inCallOrder } from '../workflow/function-order.js';
import type { WorkflowRun, WorkflowRunStatus, WorkflowStep, WorkflowStepDependency } from '../model/workflow-rows.js';
import { findJobsByIdempotencyKey, readJobLinks, readOverview } from './queries.js';
import { MAX_SEARCH_LENGTH, parseSearch, searchJobs, searchReport, searchRuns, type SearchReport } from './search.js';
import { textProblem } from '../validation/storable.js';
import { readThroughput } from './throughput.js';
import { DEFAULT_ATTENTION, readAttention, type AttentionSettings } from './attention.js';
import { readAttemptStacks } from './stacks.js';
import { readRunAttempts, readRunSummaries, type RunStepSummary } from './run-insights.js';
import { filterRunsByMetadata, parseMetadataFilter, type MetadataReport } from './metadata-filter.js';
import { jobCursorBefore, parseTimeWindow, runCursorBefore, withinWindow } from './time-window.js';
import { parseInput } from '../validation/parse.js';
import { MAX_ORGANIZATION_ID_LENGTH, organizationId, UUID_REGEX } from '../validation/primitives.js';

/** A run page draws at most this many steps and edges (10 pages of the library's largest). */
export const MAX_DRAWN_STEPS = 5_000;
const PAGE = 500;
/** The first page of a job's event log on its page; the rest come a page at a time (jobEventsPage). */
export const EVENTS_PAGE = 50;

const orgFilter = z.object({ org: organizationId });

/**
 * The scope a list filter by organization leaves: admin may narrow to any
 * organization (or to rows without one); an organization scope only to
 * itself, and any other filter matches nothing (null).
 */
export function narrowScope(scope: Scope, query: URLSearchParams): Scope | null {
  const org = optionalText(query, 'org') ?? null;
  const withoutOrg = flag(query, 'withoutOrg');
  if (org !== null && withoutOrg) {
    throw new ValidationError('dashboard.invalid_input', 'org', 'Filter by one organization or by rows without one, not both.');
  }
  if (withoutOrg) return scope.kind === 'admin' || scope.kind === 'no_organization' ? noOrganizationScope() : null;
  if (org === null || org === '') return scope;
  // `org=` (an empty form field) is no filter; `org=%20` is a blank organization, refused like everywhere else
  // (as is one that could never be stored: too long, NUL), whatever the request's own scope.
  parseInput(orgFilter, { org }, 'dashboard.invalid_input');
  if (scope.kind === 'admin') return organizationScope(org);
  return scope.kind === 'organization' && scope.organizationId === org ? scope : null;
}

/**
 * The longest value each text parameter may have: what the column it is
 * compared with can hold (job and workflow types 200 characters, keys 512
 * bytes, organization ids 255 characters), a cursor's longest form, and the
 * search box's own bound. Anything longer can match nothing.
 */
const MAX_PARAMETER_LENGTH: Record<string, number> = {
  q: MAX_SEARCH_LENGTH + 4,
  type: 200,
  key: 512,
  org: MAX_ORGANIZATION_ID_LENGTH,
  cursor: 100,
  id: 100,
  run: 100,
  status: 100,
  from: 40,
  to: 40,
  meta: 1_000,
};

/**
 * A query parameter's text, checked before any read uses it: text PostgreSQL
 * cannot take (NUL, a lone surrogate) was sent as is, and the statement's
 * failure answered 500; now it is 400 `dashboard.invalid_input` naming the
 * parameter, as is a value longer than MAX_PARAMETER_LENGTH.
 */
function checkedText(name: string, value: string): string {
  const problem = textProblem(value);
  if (problem) throw new ValidationError('dashboard.invalid_input', name, `${name} ${problem}.`);
  const max = MAX_PARAMETER_LENGTH[name] ?? MAX_SEARCH_LENGTH;
  if (value.length > max || (name === 'key' && Buffer.byteLength(value, 'utf8') > max)) {
    throw new ValidationError('dashboard.invalid_input', name, `${name} is at most ${max} ${name === 'key' ? 'bytes' : 'characters'}.`);
  }
  return value;
}

/** `withoutOrg=1` or `withoutOrg=true` (or `0` / `false`, the same as leaving it out; `waiting` alike); any other value is refused, not read as false. */
function flag(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  if (value === null) return false;
  if (value === '1' || value === 'true') return true;
  if (value === '0' || value === 'false') return false;
  throw new ValidationError('dashboard.invalid_input', name, `${name} is 1 or true (0 or false: the same as leaving it out).`);
}

function optionalLimit(query: URLSearchParams): number | undefined {
  const raw = query.get('limit');
  if (raw === null || raw === '') return undefined;
  if (!/^[0-9]{1,4}$/.test(raw)) throw new ValidationError('dashboard.invalid_input', 'limit', 'limit must be a whole number.');
  return Number(raw);
}

function optionalText(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name);
  return value === null || value === '' ? undefined : checkedText(name, value);
}

/** `status=A,B` or `status=A&status=B`. */
function statuses<S extends string>(query: URLSearchParams): S[] | undefined {
  const all = query
    .getAll('status')
    .flatMap((value) => checkedText('status', value).split(','))
    .filter((value) => value !== '');
  return all.length === 0 ? undefined : (all as S[]);
}

const JOB_STATUSES: readonly JobStatus[] = ['PENDING', 'LEASED', 'SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'];
const RUN_STATUSES: readonly WorkflowRunStatus[] = ['RUNNING', 'WAITING_FOR_EXTERNAL', 'SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED'];

/** Statuses for a search, which builds its own SQL: checked here against the known ones. */
function knownStatuses(query: URLSearchParams, known: readonly string[]): string[] | undefined {
  const all = statuses<string>(query);
  const bad = all?.findIndex((status) => !known.includes(status)) ?? -1;
  if (bad >= 0) throw new ValidationError('dashboard.invalid_input', `status.${bad}`, `status is one of ${known.join(', ')}.`);
  return all;
}

/** The search a `q` asks for, with the list's other filters (type, status, cursor, limit) applied to its matches. */
function searchFilter(scope: Scope, query: URLSearchParams, q: string, known: readonly string[]) {
  return {
    scope,
    term: parseSearch(q),
    type: optionalText(query, 'type'),
    statuses: knownStatuses(query, known),
    cursor: optionalText(query, 'cursor'),
    limit: optionalLimit(query),
  };
}

/**
 * The overview's own counts (tested against the table, one snapshot) next to
 * the library's queue metrics for the same scope: the last hour's throughput,
 * wait and run time percentiles, dead letters, and the intent backlog.
 */
export async function overview(db: Db, scope: Scope, settings: AttentionSettings = DEFAULT_ATTENTION) {
  const [counts, metrics, throughput, attention] = await Promise.all([
    readOverview(db, scope),
    getQueueMetrics(db, { scope }),
    readThroughput(db, scope),
    readAttention(db, scope, settings),
  ]);
  return { ...counts, metrics, throughput, attention };
}

export async function jobsPage(db: Db, scope: Scope, query: URLSearchParams): Promise<Page<Job> & { search?: SearchReport }> {
  const q = optionalText(query, 'q');
  // Checked before the scope is narrowed, so a bad search is refused the same way in every scope.
  const search = q === undefined ? undefined : searchFilter(scope, query, q, JOB_STATUSES);
  const window = parseTimeWindow(query);
  const narrowed = narrowScope(scope, query);
  if (!narrowed) return { items: [], nextCursor: null, ...(search ? { search: searchReport(search) } : {}) };
  if (search) return withinWindow(await searchJobs(db, { ...search, scope: narrowed }), window);
  const id = optionalText(query, 'id');
  if (id !== undefined) {
    // A search by id: exact, and only within the scope, like every read.
    if (!UUID_REGEX.test(id)) return { items: [], nextCursor: null };
    const job = await findJob(db, { scope: narrowed, jobId: id.toLowerCase() });
    return { items: job ? [job] : [], nextCursor: null };
  }
  const key = optionalText(query, 'key');
  if (key !== undefined) {
    const jobType = optionalText(query, 'type');
    if (jobType === undefined) {
      throw new ValidationError('dashboard.invalid_input', 'type', 'A key search needs the job type: a key is unique per type and organization.');
    }
    return { items: await findJobsByIdempotencyKey(db, narrowed, jobType, key), nextCursor: null };
  }
  const page = await listJobs(db, {
    scope: narrowed,
    jobType: optionalText(query, 'type'),
    status: statuses<JobStatus>(query),
    limit: optionalLimit(query),
    cursor: optionalText(query, 'cursor') ?? (window.to ? jobCursorBefore(window.to) : undefined),
  });
  return withinWindow(page, window);
}

export async function jobDetail(db: Db, scope: Scope, jobId: string) {
  const job = await getJob(db, { scope, jobId });
  const [attempts, events, links, stacks] = await Promise.all([
    listJobAttempts(db, { scope, jobId, limit: PAGE }),
    listJobEvents(db, { scope, jobId, limit: EVENTS_PAGE }),
    readJobLinks(db, scope, jobId),
    readAttemptStacks(db, scope, jobId),
  ]);
  // Deleted between the reads (retention): report it as the library would.
  if (!links) throw new NotFoundError('job.not_found', 'The job does not exist.', { details: { jobId } });
  // Each failed attempt's stack also rides on the attempt itself (the page folds it under the attempt).
  const stackOf = new Map(stacks.map((entry) => [entry.seq, entry.stack]));
  const withStacks = attempts.items.map((a) => {
    const stack = stackOf.get(String(a.seq));
    return stack === undefined ? a : { ...a, stack };
  });
  return {
    job,
    attempts: withStacks,
    attemptsCursor: attempts.nextCursor,
    events: events.items,
    moreEvents: events.nextCursor !== null,
    eventsCursor: events.nextCursor,
    ...links,
    stacks,
  };
}

/** A further page of a job's attempts, in the request's scope (`job.not_found` outside it). */
export function jobAttemptsPage(db: Db, scope: Scope, jobId: string, query: URLSearchParams) {
  return listJobAttempts(db, { scope, jobId, limit: optionalLimit(query), cursor: optionalText(query, 'cursor') });
}

/** A further page of a job's event log, in the request's scope (`job.not_found` outside it). */
export function jobEventsPage(db: Db, scope: Scope, jobId: string, query: URLSearchParams) {
  return listJobEvents(db, { scope, jobId, limit: optionalLimit(query) ?? EVENTS_PAGE, cursor: optionalText(query, 'cursor') });
}

export async function runsPage(
  db: Db,
  scope: Scope,
  query: URLSearchParams,
): Promise<Page<WorkflowRun & { steps: RunStepSummary | null }> & { search?: SearchReport | MetadataReport }> {
  const q = optionalText(query, 'q');
  const metaText = optionalText(query, 'meta');
  const meta = metaText === undefined ? undefined : parseMetadataFilter(metaText);
  if (meta && q !== undefined) throw new ValidationError('dashboard.invalid_input', 'meta', 'Search or filter by metadata, not both.');
  // Checked before the scope is narrowed, as on the jobs list.
  const search = q === undefined ? undefined : searchFilter(scope, query, q, RUN_STATUSES);
  // `waiting=1`: runs waiting on a person; `0` or absent: no filter (as withoutOrg), never "not waiting".
  const waitingForExternal = flag(query, 'waiting') ? true : undefined;
  const window = parseTimeWindow(query);
  const narrowed = narrowScope(scope, query);
  if (!narrowed) return { items: [], nextCursor: null, ...(search ? { search: searchReport(search) } : {}) };
  const page: Page<WorkflowRun> & { search?: SearchReport | MetadataReport } =
    search !== undefined
      ? await searchRuns(db, { ...search, scope: narrowed, waitingForExternal })
      : meta !== undefined
        ? await filterRunsByMetadata(db, {
            scope: narrowed,
            ...meta,
            type: optionalText(query, 'type'),
            statuses: knownStatuses(query, RUN_STATUSES),
            waitingForExternal,
            limit: optionalLimit(query),
            cursor: optionalText(query, 'cursor'),
          })
        : await listWorkflowRuns(db, {
            scope: narrowed,
            workflowType: optionalText(query, 'type'),
            status: statuses<WorkflowRunStatus>(query),
            waitingForExternal,
            limit: optionalLimit(query),
            cursor: optionalText(query, 'cursor') ?? (window.to ? runCursorBefore(window.to) : undefined),
          });
  const inWindow = withinWindow(page, window);
  const summaries = await readRunSummaries(
    db,
    narrowed,
    inWindow.items.map((run) => run.id),
  );
  return { ...inWindow, items: inWindow.items.map((run) => ({ ...run, steps: summaries.get(run.id) ?? null })) };
}

async function allPages<T>(read: (cursor: string | undefined) => Promise<Page<T>>): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await read(cursor);
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && items.length < MAX_DRAWN_STEPS);
  return { items, truncated: cursor !== undefined };
}

export async function runDetail(db: Db, scope: Scope, workflowRunId: string) {
  const run = await getWorkflowRun(db, { scope, workflowRunId });
  const [steps, edges, attempts] = await Promise.all([
    allPages<WorkflowStep>((cursor) => listWorkflowSteps(db, { scope, workflowRunId, limit: PAGE, cursor })),
    allPages<WorkflowStepDependency>((cursor) => listWorkflowStepDependencies(db, { scope, workflowRunId, limit: PAGE, cursor })),
    readRunAttempts(db, scope, run.id),
  ]);
  // A durable function's recorded steps in the order its body called them (function-order.ts).
  return { run, steps: inCallOrder(steps.items), edges: edges.items, attempts, truncated: steps.truncated || edges.truncated };
}
