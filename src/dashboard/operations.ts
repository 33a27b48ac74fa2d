/**
 * The operator's pages and actions beyond one job or run: bulk
 * requeue of dead letters, recovery of a finished run, the worker registry,
 * the queues per job type, schedules and job definitions. Each is one
 * library operation or fleet.ts read, in the request's scope; core.ts routes
 * them with the others, so every action here is a POST checked against CSRF
 * and refused in read-only mode before it runs.
 *
 *   GET  api/dead-letters/count?type&errorCode&after&before   preview of a bulk requeue: { count, more, cap }
 *   GET  api/dead-letters/groups    direct dead letters by type and error code, with live workers per type (no query fields)
 *   POST api/dead-letters/requeue   { type?, errorCode?, after?, before?, limit, reason, statePolicy? }
 *   POST api/runs/:id/recover       { mode: full|failed_only, reason, requestKey, again?, fromCallIndex? }
 *   GET  api/queues                 per job type (readQueues), in the request's scope
 *   GET  api/workers                the registry, each worker with the jobs it holds and its heartbeat's state (admin only)
 *   GET  api/schedules?cursor       (admin only)       POST api/schedules/:key/pause, /resume
 *   GET  api/definitions?cursor     (admin only)       POST api/definitions/:type/enabled { enabled }
 *   GET  api/concurrency?after      concurrency keys in the request's scope (listConcurrencyLimits: limit, leased, waiting, set by)
 *   POST api/concurrency/:key/limit { limit: N | null }  (admin only) pins the key's limit, or (null) gives it back to enqueues
 *   GET  api/rate-limits?after      rate keys in the request's scope (listRateLimits: limit, period, burst, tokens, waiting, set by)
 *   POST api/rate-limits/:key       { limit: N, periodMs: N, burst?: N } | { limit: null }  (admin only) pins or gives back
 *
 * Every body and the preview's query are parsed strictly: a blank filter
 * field, a time not in ISO 8601, or a field the route does not take is
 * refused (400, naming it) before anything is read or written.
 *
 * Schedules, job definitions, workers and concurrency and rate limits belong to no
 * organization (a schedule may enqueue for any, a definition and a worker
 * serve all, a key's limit binds every organization's jobs of the key), so only
 * an admin scope reads or changes them: another scope gets 403
 * `dashboard.forbidden`, the same whether the row exists or not.
 */
import { z } from 'zod';
import type { Db } from '../client/types.js';
import type { Scope } from '../db/scope.js';
import { ValidationError } from '../errors/runledger-error.js';
import { listJobDefinitions, setJobDefinitionEnabled } from '../queue/catalog.js';
import { listConcurrencyLimits, setConcurrencyLimit } from '../queue/concurrency.js';
import { listRateLimits, setRateLimit } from '../queue/rate-limits.js';
import { ratePeriodMs, rateStarts } from '../validation/primitives.js';
import { recoverWorkflowRun } from '../recovery/recover.js';
import { countDeadLetteredJobs, deadLetterFilterSchema, MAX_BULK_REQUEUE, requeueDeadLetteredJobs, type DeadLetterFilter } from '../replay/bulk-requeue.js';
import type { RequeueStatePolicy } from '../replay/inputs.js';
import { listSchedules, pauseSchedule, resumeSchedule } from '../schedules/crud.js';
import type { WorkflowRecoveryMode } from '../model/workflow-rows.js';
import { isoTime } from '../validation/iso-time.js';
import { readDeadLetterGroups } from './dead-letter-groups.js';
import type { AttentionSettings } from './attention.js';
import { readQueues, readWorkers } from './fleet.js';
import { onlyFields, queryFields, routeInput } from './http.js';

type Body = Record<string, unknown>;
type Read = (db: Db, scope: Scope, match: string[], query: URLSearchParams, attention: AttentionSettings) => Promise<unknown>;
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

/**
 * The dead-letter filter under the dashboard's names: each field the library's own rule (a blank type is refused,
 * never read as every type), times in ISO 8601 only; a field the route does not take is refused too.
 */
const deadLetterQuery = z.strictObject({
  type: deadLetterFilterSchema.shape.jobType,
  errorCode: deadLetterFilterSchema.shape.errorCode,
  after: isoTime.optional(),
  before: isoTime.optional(),
});
/** The library judges limit, reason and statePolicy itself (`job.invalid_input`, under the same names). */
const requeueBody = deadLetterQuery.extend({ limit: z.unknown().optional(), reason: z.unknown().optional(), statePolicy: z.unknown().optional() });

function deadLetterFilter(fields: z.output<typeof deadLetterQuery>): DeadLetterFilter {
  return {
    ...(fields.type === undefined ? {} : { jobType: fields.type }),
    ...(fields.errorCode === undefined ? {} : { errorCode: fields.errorCode }),
    ...(fields.after === undefined ? {} : { finishedAfter: fields.after }),
    ...(fields.before === undefined ? {} : { finishedBefore: fields.before }),
  };
}

async function deadLetterPreview(db: Db, scope: Scope, query: URLSearchParams) {
  const filter = deadLetterFilter(routeInput(deadLetterQuery, queryFields(query)));
  const count = await countDeadLetteredJobs(db, { scope, filter });
  return { ...count, cap: MAX_BULK_REQUEUE };
}

async function requeueDeadLetters(db: Db, scope: Scope, body: Body) {
  const fields = routeInput(requeueBody, body);
  const result = await requeueDeadLetteredJobs(db, {
    scope,
    filter: deadLetterFilter(fields),
    limit: fields.limit as number,
    reason: fields.reason as string,
    ...(fields.statePolicy === undefined ? {} : { statePolicy: fields.statePolicy as RequeueStatePolicy }),
  });
  return { requeue: { ...result, count: result.jobIds.length } };
}

async function recoverRun(db: Db, scope: Scope, runId: string, body: Body) {
  // `failedOnly: true` (not a field) must not leave mode at its default, full: every step run again.
  onlyFields(body, ['mode', 'reason', 'requestKey', 'again', 'fromCallIndex']);
  const recovery = await recoverWorkflowRun(db, {
    scope,
    sourceRunId: runId,
    requestKey: body.requestKey as string,
    reason: body.reason as string,
    ...(body.mode === undefined ? {} : { mode: body.mode as WorkflowRecoveryMode }),
    // The library refuses anything but a boolean (`workflow.invalid_input`, field again): "yes" never widens it.
    ...(body.again === undefined ? {} : { again: body.again as boolean }),
    // A durable function's fork point; the library refuses a non-integer or a DAG run, naming fromCallIndex.
    ...(body.fromCallIndex === undefined ? {} : { fromCallIndex: body.fromCallIndex as number }),
  });
  return { recovery };
}

/** `after` only (the last key of the previous page); blank is refused by the library's key rule, naming it. */
const concurrencyQuery = z.strictObject({ after: z.unknown().optional() });

async function concurrencyKeys(db: Db, scope: Scope, query: URLSearchParams) {
  const { after } = routeInput(concurrencyQuery, queryFields(query));
  return listConcurrencyLimits(db, { scope, limit: 100, ...(after === undefined ? {} : { after: after as string }) });
}

/**
 * `{ limit: N }` pins the key's limit, `{ limit: null }` gives it back to enqueues. A body without `limit` is
 * refused, never read as either: the two differ in what every enqueue of the key does next.
 */
async function setKeyLimit(db: Db, key: string, body: Body) {
  onlyFields(body, ['limit']);
  if (!Object.hasOwn(body, 'limit')) throw invalid('limit', 'limit is a whole number of slots, or null to give the limit back to enqueues.');
  return { concurrency: await setConcurrencyLimit(db, { key, limit: body.limit as number | null }) };
}

async function rateKeys(db: Db, scope: Scope, query: URLSearchParams) {
  const { after } = routeInput(concurrencyQuery, queryFields(query));
  return listRateLimits(db, { scope, limit: 100, ...(after === undefined ? {} : { after: after as string }) });
}

/**
 * `{ limit, periodMs, burst? }` pins the key's rate limit, `{ limit: null }` gives it back to enqueues. Parsed
 * here, flat, so each error names the body's own field: a body without `limit`, a null limit with a period or
 * burst, or a limit without a period is refused, never read as either action.
 */
const rateBody = z
  .strictObject({ limit: z.union([rateStarts, z.null()]), periodMs: ratePeriodMs.optional(), burst: rateStarts.optional() })
  .superRefine((body, ctx) => {
    if (body.limit === null) {
      for (const field of ['periodMs', 'burst'] as const) {
        if (body[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'is given with limit null (which gives the limit back)' });
      }
    } else if (body.periodMs === undefined) {
      ctx.addIssue({ code: 'custom', path: ['periodMs'], message: 'is required with a limit: starts per how many milliseconds' });
    }
  });

async function setRateKeyLimit(db: Db, key: string, body: Body) {
  if (!Object.hasOwn(body, 'limit')) {
    onlyFields(body, ['limit', 'periodMs', 'burst']);
    throw invalid('limit', 'limit is a whole number of starts per periodMs, or null to give the limit back to enqueues.');
  }
  const { limit, periodMs, burst } = routeInput(rateBody, body);
  const setting = limit === null ? null : { limit, periodMs: periodMs!, ...(burst === undefined ? {} : { burst }) };
  return { rateLimit: await setRateLimit(db, { key, limit: setting }) };
}

function pageQuery(query: URLSearchParams): { cursor?: string } {
  const cursor = query.get('cursor');
  return cursor ? { cursor } : {};
}

export const OPERATION_READS: [RegExp, Read][] = [
  [/^dead-letters\/count$/, (db, scope, _m, query) => deadLetterPreview(db, scope, query)],
  [
    /^dead-letters\/groups$/,
    async (db, scope, _m, query) => {
      onlyFields(queryFields(query), []);
      return readDeadLetterGroups(db, scope);
    },
  ],
  [/^queues$/, (db, scope, _m, _query, attention) => readQueues(db, scope, attention.saturationWaitMs)],
  [/^concurrency$/, (db, scope, _m, query) => concurrencyKeys(db, scope, query)],
  [/^rate-limits$/, (db, scope, _m, query) => rateKeys(db, scope, query)],
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
    async (db, scope, m, body) => {
      adminOnly(scope);
      onlyFields(body, []);
      const key = decoded(m[1]!, 'key');
      return { schedule: m[2] === 'pause' ? await pauseSchedule(db, { key }) : await resumeSchedule(db, { key }) };
    },
  ],
  [
    new RegExp(`^definitions/${SEGMENT}/enabled$`),
    async (db, scope, m, body) => {
      adminOnly(scope);
      onlyFields(body, ['enabled']);
      return { definition: await setJobDefinitionEnabled(db, { jobType: decoded(m[1]!, 'jobType'), enabled: body.enabled as boolean }) };
    },
  ],
  [
    new RegExp(`^concurrency/${SEGMENT}/limit$`),
    async (db, scope, m, body) => {
      adminOnly(scope);
      return setKeyLimit(db, decoded(m[1]!, 'key'), body);
    },
  ],
  [
    new RegExp(`^rate-limits/${SEGMENT}$`),
    async (db, scope, m, body) => {
      adminOnly(scope);
      return setRateKeyLimit(db, decoded(m[1]!, 'key'), body);
    },
  ],
];
