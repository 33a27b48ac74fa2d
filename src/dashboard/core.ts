/**
 * The dashboard, transport-free: options, routes, scope, CSRF, read-only and
 * errors, answering a DashboardRequest with a DashboardAnswer (exchange.ts).
 * `createDashboard` (Node) and `createDashboardFetchHandler` (Fetch API) are
 * thin translations around one of these, so both answer every request the
 * same way.
 *
 * Every request first asks `authorize` (with the transport's own request
 * object) for the scope it may see, or null to refuse it (403
 * `dashboard.forbidden`). Every read and action then runs in that scope and
 * only in it. Actions are POSTs checked against CSRF (csrf.ts) and refused
 * with `dashboard.read_only` when `readOnly`.
 *
 * Routes, relative to `basePath`: `/` the page, `/assets/*` its script,
 * style and icon, `/api/*` JSON (api.ts, actions.ts), `/api/events` the live stream
 * (live.ts). The page uses relative URLs only, so it works under any prefix.
 * An error answers JSON, except a page load asking for HTML outside `/api/`,
 * which gets a small HTML page (error-page.ts).
 */
import { connectionStringProblem } from '../validation/connection-string.js';
import { isPrismaClient, type Db } from '../client/types.js';
import { scopeSchema, type Scope } from '../db/scope.js';
import { InternalError, NotFoundError, ValidationError } from '../errors/runledger-error.js';
import { cancelJobAction, cancelRunAction, completeStepAction, replayJobAction, requeueJobAction } from './actions.js';
import { jobAttemptsPage, jobDetail, jobEventsPage, jobsPage, overview, runDetail, runsPage } from './api.js';
import { AssetStore } from './assets.js';
import { attentionSettings, type AttentionSettings, type DashboardAttentionOptions } from './attention.js';
import { readCatalog } from './catalog.js';
import { checkCsrf, sessionToken } from './csrf.js';
import { errorPage, wantsHtml } from './error-page.js';
import type { DashboardAnswer, DashboardRequest } from './exchange.js';
import { errorAnswer, jsonAnswer, readJsonBody } from './http.js';
import { LIVE_HEADERS, LiveFeed } from './live.js';
import { OPERATION_ACTIONS, OPERATION_READS } from './operations.js';
import { getWorkflowRun } from '../workflow/reads.js';

/** The options of every transport; `R` is the request `authorize` is shown (Node's IncomingMessage, or a Web Request). */
export interface DashboardCoreOptions<R> {
  /** The Prisma client the dashboard reads and acts through (a root client, not a transaction). */
  db: Db;
  /**
   * Where the pages' reads go (overview with `getQueueMetrics`, lists,
   * details), e.g. a client on a read replica: they tolerate its lag.
   * Actions, and the run a live stream watches, stay on `db`. Default `db`.
   */
  readDb?: Db;
  /**
   * Connection string for live updates over the library's one LISTEN
   * connection. Without it the page still refreshes, by polling.
   */
  listenConnectionString?: string;
  /**
   * The scope this request may see and act in, or null (or undefined) to
   * refuse it with 403. Called for every request, the page's files included;
   * a throw refuses it too (500, the error is not shown).
   */
  authorize: (request: R) => Scope | null | undefined | Promise<Scope | null | undefined>;
  /** Hide and refuse every action (`dashboard.read_only`, 403). Default false. */
  readOnly?: boolean;
  /** The public path the dashboard is mounted at, e.g. '/admin/jobs'. Default '' (the root). */
  basePath?: string;
  /** When the overview's "Needs attention" calls a queue saturated or failing (attention.ts: the defaults). */
  attention?: DashboardAttentionOptions;
}

export interface DashboardCore<R> {
  /** Never rejects: a failure is an error answer. */
  answer(request: DashboardRequest, native: R): Promise<DashboardAnswer>;
  /** Ends the live streams and leaves the LISTEN connection. */
  close(): Promise<void>;
}

const BASE_PATH = /^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$/;
const ID = '([0-9A-Za-z-]{1,64})';

function invalidOption(field: string, message: string): ValidationError {
  return new ValidationError('dashboard.invalid_options', field, message);
}

function validateOptions<R>(options: DashboardCoreOptions<R>, factory: string): { basePath: string; attention: AttentionSettings } {
  if (!options || typeof options !== 'object') throw invalidOption('options', `${factory} takes an options object.`);
  if (!isPrismaClient(options.db)) throw invalidOption('db', 'db must be a Prisma client or poolDb(pool).');
  if (options.readDb !== undefined && !isPrismaClient(options.readDb)) {
    throw invalidOption('readDb', 'readDb must be a Prisma client.');
  }
  if (typeof options.authorize !== 'function')
    throw invalidOption('authorize', "authorize must be a function returning the request's scope, or null to refuse it.");
  const listenProblem = options.listenConnectionString === undefined ? undefined : connectionStringProblem(options.listenConnectionString);
  if (listenProblem) {
    // A malformed URL would otherwise be retried for ever by the live feed's LISTEN connection.
    throw invalidOption('listenConnectionString', `listenConnectionString ${listenProblem}.`);
  }
  if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean') throw invalidOption('readOnly', 'readOnly must be a boolean.');
  if (options.basePath !== undefined && typeof options.basePath !== 'string')
    throw invalidOption('basePath', "basePath must be a URL path such as '/admin/jobs'.");
  const basePath = (options.basePath ?? '').replace(/\/+$/, '');
  if (!BASE_PATH.test(basePath)) throw invalidOption('basePath', "basePath must be a URL path such as '/admin/jobs'.");
  return { basePath, attention: attentionSettings(options.attention) };
}

async function authorizeRequest<R>(options: DashboardCoreOptions<R>, native: R): Promise<Scope> {
  let scope: unknown;
  try {
    scope = await options.authorize(native);
  } catch (cause) {
    throw new InternalError('dashboard.internal', 'The dashboard could not answer this request.', { cause, internalMessage: 'authorize threw' });
  }
  if (scope === null || scope === undefined) throw new ValidationError('dashboard.forbidden', 'authorization', 'You may not see this dashboard.');
  const parsed = scopeSchema.safeParse(scope);
  if (!parsed.success)
    throw new InternalError('dashboard.invalid_scope', 'The dashboard could not answer this request.', {
      internalMessage: 'authorize returned something other than a Scope',
    });
  return parsed.data as Scope;
}

function decodeSegment(segment: string, field: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ValidationError('dashboard.invalid_input', field, `The ${field} in the URL is not valid percent-encoding.`);
  }
}

/**
 * `api/events?run=<id>`: the run whose step moves the stream also reports,
 * once the run is found in the request's scope (`workflow.run_not_found`
 * otherwise, exactly like its page), so a stream never confirms another
 * organization's run.
 */
async function watchedRun(db: Db, scope: Scope, query: URLSearchParams): Promise<string | undefined> {
  const runId = query.get('run');
  if (runId === null || runId === '') return undefined;
  const run = await getWorkflowRun(db, { scope, workflowRunId: runId });
  return run.id;
}

function routeNotFound(): NotFoundError {
  return new NotFoundError('dashboard.not_found', 'No such dashboard page or API route.');
}

function methodNotAllowed(allowed: string): ValidationError {
  return new ValidationError('dashboard.method_not_allowed', 'method', `Use ${allowed} for this route.`);
}

const READS: [RegExp, (db: Db, scope: Scope, match: string[], query: URLSearchParams, attention: AttentionSettings) => Promise<unknown>][] = [
  [/^overview$/, (db, scope, _m, _query, attention) => overview(db, scope, attention)],
  [/^catalog$/, (db) => readCatalog(db)],
  [/^jobs$/, (db, scope, _m, query) => jobsPage(db, scope, query)],
  [new RegExp(`^jobs/${ID}$`), (db, scope, m) => jobDetail(db, scope, m[1]!)],
  [new RegExp(`^jobs/${ID}/attempts$`), (db, scope, m, query) => jobAttemptsPage(db, scope, m[1]!, query)],
  [new RegExp(`^jobs/${ID}/events$`), (db, scope, m, query) => jobEventsPage(db, scope, m[1]!, query)],
  [/^runs$/, (db, scope, _m, query) => runsPage(db, scope, query)],
  [new RegExp(`^runs/${ID}$`), (db, scope, m) => runDetail(db, scope, m[1]!)],
  ...OPERATION_READS,
];

const ACTIONS: [RegExp, (db: Db, scope: Scope, match: string[], body: Record<string, unknown>) => Promise<unknown>][] = [
  [new RegExp(`^runs/${ID}/cancel$`), (db, scope, m, body) => cancelRunAction(db, scope, m[1]!, body)],
  [
    new RegExp(`^runs/${ID}/steps/([^/]{1,600})/complete$`),
    (db, scope, m, body) => completeStepAction(db, scope, m[1]!, decodeSegment(m[2]!, 'stepKey'), body),
  ],
  [new RegExp(`^jobs/${ID}/cancel$`), (db, scope, m, body) => cancelJobAction(db, scope, m[1]!, body)],
  [new RegExp(`^jobs/${ID}/replay$`), (db, scope, m, body) => replayJobAction(db, scope, m[1]!, body)],
  [new RegExp(`^jobs/${ID}/requeue$`), (db, scope, m, body) => requeueJobAction(db, scope, m[1]!, body)],
  ...OPERATION_ACTIONS,
];

/** The path below `basePath`, or undefined when the target is outside it. */
function relativePath(target: string, basePath: string): string | undefined {
  const pathname = new URL(target, 'http://dashboard.invalid').pathname;
  if (basePath !== '' && pathname !== basePath && !pathname.startsWith(`${basePath}/`)) return undefined;
  return pathname.slice(basePath.length);
}

/** Validates `options` (throwing `dashboard.invalid_options` naming the field, `factory` naming the caller) and builds the dashboard. */
export function createDashboardCore<R>(options: DashboardCoreOptions<R>, factory: string): DashboardCore<R> {
  const { basePath, attention } = validateOptions(options, factory);
  const readOnly = options.readOnly ?? false;
  const cookiePath = basePath === '' ? '/' : basePath;
  const assets = new AssetStore();
  const live = new LiveFeed(options.listenConnectionString);
  const db = options.db;
  const readDb = options.readDb ?? db;

  async function route(request: DashboardRequest, native: R): Promise<DashboardAnswer> {
    const url = new URL(request.target, 'http://dashboard.invalid');
    const method = request.method;
    if (basePath !== '' && url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) throw routeNotFound();
    const rel = url.pathname.slice(basePath.length);
    if (rel === '') {
      // Relative URLs in the page resolve against a trailing slash.
      return { kind: 'body', status: 308, headers: { location: `${basePath}/${url.search}` }, body: null };
    }
    const scope = await authorizeRequest(options, native);
    const isRead = method === 'GET' || method === 'HEAD';

    if (rel === '/' || rel === '/index.html' || rel === '/assets/app.js' || rel === '/assets/app.css' || rel === '/assets/favicon.svg') {
      if (!isRead) throw methodNotAllowed('GET');
      return assets.answer(rel === '/' || rel === '/index.html' ? 'index.html' : (rel.slice('/assets/'.length) as 'app.js' | 'app.css' | 'favicon.svg'));
    }
    if (!rel.startsWith('/api/')) throw routeNotFound();
    const path = rel.slice('/api/'.length);

    if (path === 'session') {
      if (!isRead) throw methodNotAllowed('GET');
      const { token, setCookie } = sessionToken(request, cookiePath);
      return jsonAnswer(
        200,
        { scope, readOnly, live: options.listenConnectionString !== undefined, csrfToken: token },
        setCookie ? { 'set-cookie': setCookie } : {},
      );
    }
    if (path === 'events') {
      if (!isRead) throw methodNotAllowed('GET');
      // A HEAD learns the headers; only a GET holds a stream (and a LISTEN subscription) open.
      const watching = await watchedRun(db, scope, url.searchParams);
      if (method === 'HEAD') return { kind: 'body', status: 200, headers: { ...LIVE_HEADERS }, body: null };
      return { kind: 'stream', open: (writer) => live.attach(writer, watching) };
    }
    for (const [pattern, read] of READS) {
      const match = pattern.exec(path);
      if (!match) continue;
      if (!isRead) throw methodNotAllowed('GET');
      return jsonAnswer(200, await read(readDb, scope, match, url.searchParams, attention));
    }
    for (const [pattern, act] of ACTIONS) {
      const match = pattern.exec(path);
      if (!match) continue;
      if (method !== 'POST') throw methodNotAllowed('POST');
      if (readOnly) throw new ValidationError('dashboard.read_only', 'method', 'This dashboard is read-only.');
      checkCsrf(request);
      const body = await readJsonBody(request);
      return jsonAnswer(200, await act(db, scope, match, body));
    }
    throw routeNotFound();
  }

  return {
    async answer(request, native) {
      let answer: DashboardAnswer;
      try {
        answer = await route(request, native);
      } catch (error) {
        // A page load refused or failed reads as a page; the API, and anything not asking for HTML, as JSON.
        answer = wantsHtml(request, relativePath(request.target, basePath)) ? errorPage(error) : errorAnswer(error);
      }
      // HEAD: every header of the GET (content-length included), no body.
      if (request.method === 'HEAD' && answer.kind === 'body' && answer.body !== null) return { ...answer, body: null };
      return answer;
    },
    close: () => live.close(),
  };
}
