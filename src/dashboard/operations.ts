/**
 * The operator's pages and actions beyond one job or run (issue 25): bulk
 * requeue of dead letters, recovery of a finished run, the worker registry,
 * the queues per job type, schedules and job definitions. Each is one
 * library operation or fleet.ts read, in the request's scope; core.ts routes
 * them with the others, so every action here is a POST checked against CSRF
 * and refused in read-only mode before it runs.
 *
 *   GET  api/dead-letters/count?type&errorCode&after&before   preview of a bulk requeue: { count, more, cap }
 *   POST api/dead-letters/requeue   { type?, errorCode?, after?, before?, limit, reason, statePolicy? }
 *   POST api/runs/:id/recover       { mode: full|failed_only, reason, requestKey }
 *   GET  api/queues                 per job type (readQueues), in the request's scope
 *   GET  api/workers                the registry (admin only)
 *   GET  api/schedules?cursor       (admin only)       POST api/schedules/:key/pause, /resume
 *   GET  api/definitions?cursor     (admin only)       POST api/definitions/:type/enabled { enabled }
 *
 * Schedules, job definitions and workers belong to no organization (a
 * schedule may enqueue for any, a definition and a worker serve all), so only
 * an admin scope reads or changes them: another scope gets 403
 * `dashboard.forbidden`, the same whether the row exists or not.
 */
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { ValidationError } from '../errors/runledger-error.js';
import { listJobDefinitions, setJobDefinitionEnabled } from '../queue/catalog.js';
import { recoverWorkflowRun } from '../recovery/recover.js';
import { countDeadLetteredJobs, MAX_BULK_REQUEUE, requeueDeadLetteredJobs, type DeadLetterFilter } from '../replay/bulk-requeue.js';
import type { RequeueStatePolicy } from '../replay/inputs.js';
import { listSchedules, pauseSchedule, resumeSchedule } from '../schedules/crud.js';
import type { WorkflowRecoveryMode } from '../model/workflow-rows.js';
import { readQueues, readWorkers } from './fleet.js';

type Body = Record<string, unknown>;
type Read = (db: Db, scope: Scope, match: string[], query: URLSearchParams) => Promise<unknown>;
type Act = (db: Db, scope: Scope, match: string[], body: Body) => Promise<unknown>;

const ID = '([0-9A-Za-z-]{1,64})';
const SEGMENT = '([^/]{1,600})';

function invalid(field: string, message: string): ValidationError {
  return new ValidationError('dashboard.invalid_input', field, message);
}

function adminOnly(scope: Scope): void {
  if (scope.kind !== 'admin')
    throw new ValidationError('dashboard.forbidden', 'authorization', 'Only an operator of every organization may see or change this.');
}

function decoded(segment: string, field: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw invalid(field, `The ${field} in the URL is not valid percent-encoding.`);
  }
}

/** An ISO time from a query string or body, or absent; anything else names its field. */
function time(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) throw invalid(field, `${field} must be an ISO 8601 time.`);
  return date;
}

/** Text for the library's own validation to judge; a non-string is refused here, naming the field. */
function text(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalid(field, `${field} must be text.`);
  return value;
}

function deadLetterFilter(get: (name: string) => unknown): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  const jobType = text(get('type'), 'type');
  const errorCode = text(get('errorCode'), 'errorCode');
  const after = time(get('after'), 'after');
  const before = time(get('before'), 'before');
  if (jobType !== undefined) filter.jobType = jobType;
  if (errorCode !== undefined) filter.errorCode = errorCode;
  if (after !== undefined) filter.finishedAfter = after;
  if (before !== undefined) filter.finishedBefore = before;
  return filter;
}

async function deadLetterPreview(db: Db, scope: Scope, query: URLSearchParams) {
  const count = await countDeadLetteredJobs(db, { scope, filter: deadLetterFilter((name) => query.get(name) ?? undefined) });
  return { ...count, cap: MAX_BULK_REQUEUE };
}

async function requeueDeadLetters(db: Db, scope: Scope, body: Body) {
  const result = await requeueDeadLetteredJobs(db, {
    scope,
    filter: deadLetterFilter((name) => body[name]),
    limit: body.limit as number,
    reason: body.reason as string,
    ...(body.statePolicy === undefined ? {} : { statePolicy: body.statePolicy as RequeueStatePolicy }),
  });
  return { requeue: { ...result, count: result.jobIds.length } };
}

async function recoverRun(db: Db, scope: Scope, runId: string, body: Body) {
  const recovery = await recoverWorkflowRun(db, {
    scope,
    sourceRunId: runId,
    requestKey: body.requestKey as string,
    reason: body.reason as string,
    ...(body.mode === undefined ? {} : { mode: body.mode as WorkflowRecoveryMode }),
  });
  return { recovery };
}

function pageQuery(query: URLSearchParams): { cursor?: string } {
  const cursor = query.get('cursor');
  return cursor ? { cursor } : {};
}

export const OPERATION_READS: [RegExp, Read][] = [
  [/^dead-letters\/count$/, (db, scope, _m, query) => deadLetterPreview(db, scope, query)],
  [/^queues$/, (db, scope) => readQueues(db, scope)],
  [
    /^workers$/,
    async (db, scope) => {
      adminOnly(scope);
      return readWorkers(db);
    },
  ],
  [
    /^schedules$/,
    async (db, scope, _m, query) => {
      adminOnly(scope);
      return listSchedules(db, { limit: 100, ...pageQuery(query) });
    },
  ],
  [
    /^definitions$/,
    async (db, scope, _m, query) => {
      adminOnly(scope);
      return listJobDefinitions(db, { limit: 100, ...pageQuery(query) });
    },
  ],
];

export const OPERATION_ACTIONS: [RegExp, Act][] = [
  [/^dead-letters\/requeue$/, (db, scope, _m, body) => requeueDeadLetters(db, scope, body)],
  [new RegExp(`^runs/${ID}/recover$`), (db, scope, m, body) => recoverRun(db, scope, m[1]!, body)],
  [
    new RegExp(`^schedules/${SEGMENT}/(pause|resume)$`),
    async (db, scope, m) => {
      adminOnly(scope);
      const key = decoded(m[1]!, 'key');
      return { schedule: m[2] === 'pause' ? await pauseSchedule(db, { key }) : await resumeSchedule(db, { key }) };
    },
  ],
  [
    new RegExp(`^definitions/${SEGMENT}/enabled$`),
    async (db, scope, m, body) => {
      adminOnly(scope);
      return { definition: await setJobDefinitionEnabled(db, { jobType: decoded(m[1]!, 'jobType'), enabled: body.enabled as boolean }) };
    },
  ],
];
