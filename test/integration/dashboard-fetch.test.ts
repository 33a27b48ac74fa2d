/**
 * createDashboardFetchHandler, called with real Web `Request` objects: it
 * answers exactly as the Node handler does (statuses, headers, error JSON,
 * HEAD, CSRF, read-only, the body limit, the bare-path redirect), and its
 * live stream is a ReadableStream that lets go of the feed (and, with the
 * last page, of the LISTEN connection) when the request aborts, when the
 * runtime cancels the body, and on close(). The real-HTTP mount is in
 * dashboard-mounts.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  adminScope,
  createDashboardFetchHandler,
  enqueueJob,
  getJob,
  isRunledgerError,
  type DashboardFetchHandler,
  type DashboardFetchOptions,
} from '../../src/index.js';
import { LISTEN_APPLICATION_NAME, listenConnectionStats } from '../../src/notify/listen-client.js';
import { buildDashboardAssets } from '../../scripts/build-dashboard.js';
import { useTestDatabase } from '../harness/database.js';
import { scopeFromHeader, SCOPE_HEADER, serveDashboard } from '../harness/dashboard.js';
import { fetchToNode } from '../harness/fetch-bridge.js';

const db = useTestDatabase();
const BASE_PATH = '/ops/jobs';
const ORIGIN = 'http://dashboard.test';

const handlers: DashboardFetchHandler[] = [];
function fetchDashboard(options: Partial<DashboardFetchOptions> = {}): DashboardFetchHandler {
  const handler = createDashboardFetchHandler({
    db: db.prisma,
    basePath: BASE_PATH,
    authorize: (request) => scopeFromHeader(request.headers.get(SCOPE_HEADER) ?? undefined),
    ...options,
  });
  handlers.push(handler);
  return handler;
}

/** Its own key for the shared LISTEN hub, so this test's subscriber count is its own (pg ignores the unknown parameter). */
function liveUrl(tag: string): string {
  const url = new URL(db.url);
  url.searchParams.set('runledger_test', tag);
  return url.toString();
}

async function listenerCount(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = ${LISTEN_APPLICATION_NAME}`;
  return row!.n;
}

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** What a client can see of an answer, minus what a transport adds on its own (date, connection, transfer-encoding). */
async function visible(response: Response): Promise<{ status: number; headers: Record<string, string | null>; body: string }> {
  const headers: Record<string, string | null> = {};
  for (const name of [
    'content-type',
    'content-length',
    'cache-control',
    'location',
    'content-security-policy',
    'x-content-type-options',
    'referrer-policy',
    'x-accel-buffering',
  ]) {
    headers[name] = response.headers.get(name);
  }
  // The token is random per session; its shape and attributes must match.
  headers['set-cookie'] = response.headers.get('set-cookie')?.replace(/=[A-Za-z0-9_-]{43};/, '=<token>;') ?? null;
  const body = (await response.text()).replace(/"csrfToken":"[A-Za-z0-9_-]{43}"/, '"csrfToken":"<token>"');
  return { status: response.status, headers, body };
}

beforeAll(async () => {
  await buildDashboardAssets();
});
afterAll(async () => {
  await Promise.all(handlers.splice(0).map((handler) => handler.close()));
});

describe('createDashboardFetchHandler: the same answers as createDashboard', () => {
  it('answers every kind of request identically: page, redirect, reads, HEAD, refusals, CSRF, body checks, error JSON', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'fetch.parity', payload: {}, organizationId: 'org-a' });
    const node = await serveDashboard(db.prisma, { basePath: BASE_PATH });
    const web = fetchDashboard();
    const nodeSession = (await (await fetch(`${node.url}/api/session`)).json()) as { csrfToken: string };
    const nodeCookie = `runledger_dashboard_csrf=${nodeSession.csrfToken}`;
    const webSession = (await (await web(new Request(`${ORIGIN}${BASE_PATH}/api/session`))).json()) as { csrfToken: string };
    const webCookie = `runledger_dashboard_csrf=${webSession.csrfToken}`;
    const json = { 'content-type': 'application/json' };

    const cases: Sent[] = [
      { method: 'GET', path: '' },
      { method: 'GET', path: '?x=1' },
      { method: 'GET', path: '/' },
      { method: 'HEAD', path: '/' },
      { method: 'GET', path: '/assets/app.css' },
      { method: 'HEAD', path: '/assets/app.js' },
      { method: 'GET', path: '/api/session', headers: { [SCOPE_HEADER]: 'org:org-a' } },
      { method: 'GET', path: '/api/session', headers: { 'x-forwarded-proto': 'https' } },
      { method: 'GET', path: `/api/jobs?type=fetch.parity`, headers: { [SCOPE_HEADER]: 'org:org-a' } },
      { method: 'HEAD', path: `/api/jobs/${jobId}` },
      { method: 'HEAD', path: '/api/events' },
      { method: 'GET', path: `/api/jobs/${jobId}`, headers: { [SCOPE_HEADER]: 'org:org-b' } },
      { method: 'GET', path: '/api/overview', headers: { [SCOPE_HEADER]: 'none' } },
      { method: 'GET', path: '/api/nothing' },
      { method: 'GET', path: '/nothing' },
      { method: 'POST', path: '/api/overview' },
      { method: 'GET', path: `/api/jobs/${jobId}/cancel` },
      { method: 'GET', path: '/api/jobs?status=NOPE' },
      { method: 'POST', path: `/api/jobs/${jobId}/cancel`, headers: json, body: '{}' },
      { method: 'POST', path: `/api/jobs/${jobId}/cancel`, headers: { ...json, 'x-runledger-csrf': '<token>', 'sec-fetch-site': 'cross-site' }, body: '{}' },
      { method: 'POST', path: `/api/jobs/${jobId}/cancel`, headers: { ...json, 'x-runledger-csrf': 'x'.repeat(43) }, body: '{}' },
      { method: 'POST', path: `/api/jobs/${jobId}/cancel`, headers: { 'content-type': 'text/plain', 'x-runledger-csrf': '<token>' }, body: 'cancel' },
      {
        method: 'POST',
        path: `/api/jobs/${jobId}/cancel`,
        headers: { ...json, 'x-runledger-csrf': '<token>' },
        body: JSON.stringify({ reason: 'x'.repeat(1_100_000) }),
      },
      { method: 'POST', path: `/api/jobs/${jobId}/cancel`, headers: { ...json, 'x-runledger-csrf': '<token>' }, body: '{"reason":' },
      { method: 'POST', path: `/api/jobs/${jobId}/cancel`, headers: { ...json, 'x-runledger-csrf': '<token>' }, body: '[1]' },
      { method: 'POST', path: '/api/runs/not-a-run/steps/%E0%A4%A/complete', headers: { ...json, 'x-runledger-csrf': '<token>' }, body: '{}' },
    ];
    for (const sent of cases) {
      const headers = (token: string, cookie: string) => {
        const out: Record<string, string> = { ...sent.headers };
        if (out['x-runledger-csrf'] === '<token>') out['x-runledger-csrf'] = token;
        // A request with a token header also sends the session cookie (a browser on the page would).
        if (out['x-runledger-csrf'] !== undefined) out.cookie = cookie;
        return out;
      };
      const init = (token: string, cookie: string): RequestInit => ({
        method: sent.method,
        headers: headers(token, cookie),
        body: sent.body ?? null,
        redirect: 'manual',
      });
      const fromNode = await visible(await fetch(`${node.url}${sent.path}`, init(nodeSession.csrfToken, nodeCookie)));
      const fromWeb = await visible(await web(new Request(`${ORIGIN}${BASE_PATH}${sent.path}`, init(webSession.csrfToken, webCookie))));
      expect(fromWeb, `${sent.method} ${sent.path}`).toEqual(fromNode);
    }
    // Nothing above was allowed to act.
    expect((await getJob(db.prisma, { scope: adminScope(), jobId })).status).toBe('PENDING');
  });

  it('marks the cookie Secure for a request that came over https, and runs an action with the session cookie', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'fetch.action', payload: {} });
    const web = fetchDashboard();
    const session = await web(new Request(`https://dashboard.test${BASE_PATH}/api/session`));
    const setCookie = session.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^runledger_dashboard_csrf=[A-Za-z0-9_-]{43}; Path=\/ops\/jobs; HttpOnly; SameSite=Strict; Secure$/);
    const { csrfToken } = (await session.json()) as { csrfToken: string };
    const done = await web(
      new Request(`https://dashboard.test${BASE_PATH}/api/jobs/${jobId}/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: setCookie.split(';')[0]!, 'x-runledger-csrf': csrfToken, 'sec-fetch-site': 'same-origin' },
        body: JSON.stringify({ reason: 'from a Request' }),
      }),
    );
    expect([done.status, ((await done.json()) as any).job.status]).toEqual([200, 'CANCELED']);
    expect((await getJob(db.prisma, { scope: adminScope(), jobId })).status).toBe('CANCELED');
  });

  it('refuses actions when read-only, and fails closed when authorize throws', async () => {
    const readOnly = fetchDashboard({ readOnly: true });
    const refused = await readOnly(
      new Request(`${ORIGIN}${BASE_PATH}/api/runs/r/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
    );
    expect([refused.status, ((await refused.json()) as any).error.code]).toEqual([403, 'dashboard.read_only']);
    const throwing = fetchDashboard({
      authorize: () => {
        throw new Error('session store down: secret-detail');
      },
    });
    const thrown = await throwing(new Request(`${ORIGIN}${BASE_PATH}/api/overview`));
    const text = await thrown.text();
    expect([thrown.status, JSON.parse(text).error.code]).toEqual([500, 'dashboard.internal']);
    expect(text).not.toContain('secret-detail');
  });

  it('refuses bad options with dashboard.invalid_options naming the field', () => {
    const attempt = (options: object) => {
      try {
        void createDashboardFetchHandler({ db: db.prisma, authorize: () => null, ...options }).close();
        return 'accepted';
      } catch (error) {
        return isRunledgerError(error, 'dashboard.invalid_options') ? (error.details.field as string) : String(error);
      }
    };
    expect(attempt({ basePath: 'no-slash' })).toBe('basePath');
    expect(attempt({ authorize: 'yes' })).toBe('authorize');
    expect(attempt({ listenConnectionString: '' })).toBe('listenConnectionString');
    // A malformed URL was accepted, and the live feed retried it for ever.
    expect(attempt({ listenConnectionString: 'not a url' })).toBe('listenConnectionString');
    expect(attempt({ listenConnectionString: 'postgresql://u:%zz@127.0.0.1/db' })).toBe('listenConnectionString');
    expect(attempt({ basePath: '/admin/runledger/' })).toBe('accepted');
  });
});

describe('createDashboardFetchHandler: the live stream', () => {
  async function openStream(handler: DashboardFetchHandler, signal?: AbortSignal) {
    const response = await handler(
      new Request(`${ORIGIN}${BASE_PATH}/api/events`, { headers: { [SCOPE_HEADER]: 'org:org-a' }, ...(signal ? { signal } : {}) }),
    );
    expect([response.status, response.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    return {
      reader,
      /** Reads until `needle` has arrived. */
      async until(needle: string) {
        while (!text.includes(needle)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`stream ended before ${needle}: ${text}`);
          text += decoder.decode(value, { stream: true });
        }
        return text;
      },
      /** Reads to the end; true when the stream ended (rather than erroring). */
      async ended() {
        for (;;) {
          const { done } = await reader.read();
          if (done) return true;
        }
      },
    };
  }

  it('delivers hello and change events, and releases its client when the request aborts: the LISTEN subscription goes with the last one', async () => {
    const url = liveUrl('abort');
    const handler = fetchDashboard({ listenConnectionString: url });
    const first = new AbortController();
    const second = new AbortController();
    const a = await openStream(handler, first.signal);
    const b = await openStream(handler, second.signal);
    expect(await a.until('event: hello')).toContain('data: {"live":true}');
    // LISTEN is in effect once the feed says resync, so the NOTIFY below cannot be missed.
    await a.until('"kind":"resync"');
    await b.until('event: hello');
    // One feed, three channels: the job-available, run-terminal and step-changed subscriptions, however many pages.
    expect(listenConnectionStats(url)?.subscribers).toBe(3);
    expect(await listenerCount()).toBe(1);
    await enqueueJob(db.prisma, { jobType: 'fetch.live', payload: {}, organizationId: 'org-b' });
    expect(await a.until('"kind":"job"')).not.toContain('fetch.live');

    first.abort();
    expect(await a.ended()).toBe(true);
    expect(listenConnectionStats(url)?.subscribers).toBe(3);
    second.abort();
    expect(await b.ended()).toBe(true);
    expect(listenConnectionStats(url)).toBeUndefined();
    await vi.waitFor(async () => expect(await listenerCount()).toBe(0), { timeout: 10_000 });
  });

  it('releases its client when the runtime cancels the body without aborting the request', async () => {
    const url = liveUrl('cancel');
    const handler = fetchDashboard({ listenConnectionString: url });
    const stream = await openStream(handler);
    await stream.until('event: hello');
    expect(listenConnectionStats(url)?.subscribers).toBe(3);
    await stream.reader.cancel();
    expect(listenConnectionStats(url)).toBeUndefined();
  });

  it('releases its client when an HTTP client disconnects from a server bridging to the handler', async () => {
    const url = liveUrl('http');
    const handler = fetchDashboard({ listenConnectionString: url });
    const server = http.createServer(fetchToNode(handler));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const aborted = new AbortController();
      const response = await fetch(`http://127.0.0.1:${port}${BASE_PATH}/api/events`, { signal: aborted.signal });
      const reader = response.body!.getReader();
      let text = '';
      while (!text.includes('event: hello')) text += new TextDecoder().decode((await reader.read()).value);
      expect(listenConnectionStats(url)?.subscribers).toBe(3);
      aborted.abort();
      // The server learns of the disconnect asynchronously (socket close -> request.signal).
      await vi.waitFor(() => expect(listenConnectionStats(url)).toBeUndefined(), { timeout: 10_000 });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('ends every stream on close(), and answers a stream opened afterwards with 503', async () => {
    const url = liveUrl('close');
    const handler = fetchDashboard({ listenConnectionString: url });
    const stream = await openStream(handler);
    await stream.until('event: hello');
    await handler.close();
    expect(await stream.ended()).toBe(true);
    expect(listenConnectionStats(url)).toBeUndefined();
    const late = await handler(new Request(`${ORIGIN}${BASE_PATH}/api/events`));
    expect([late.status, await late.text()]).toEqual([503, '']);
  });
});
