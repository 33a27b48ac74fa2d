/**
 * The dashboard mounted under a base path inside real host servers on
 * 127.0.0.1: Express 5 (`app.use(path, dashboard)`), Fastify 5 through
 * `@fastify/middie`, and the Fetch API handler served by a Node-to-Request
 * bridge (as Next.js and Hono's node-server do). In each: the page and its
 * files load, a read answers in the request's scope, a POST action passes CSRF
 * with the session cookie (and is refused without it), the live stream says
 * hello, and the host's own routes (a JSON body parser included) still work.
 * Last, a page that leaves while `authorize` is still deciding leaves no live
 * client behind, on either handler.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import middie from '@fastify/middie';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard, createDashboardFetchHandler, enqueueJob, getJob, adminScope } from '../../src/index.js';
import { listenConnectionStats } from '../../src/notify/listen-client.js';
import { buildDashboardAssets } from '../../scripts/build-dashboard.js';
import { useTestDatabase } from '../harness/database.js';
import { scopeFromHeader, SCOPE_HEADER } from '../harness/dashboard.js';
import { fetchToNode } from '../harness/fetch-bridge.js';

const db = useTestDatabase();
const BASE_PATH = '/admin/runledger';

interface Host {
  /** http://127.0.0.1:port, the host app's origin. */
  origin: string;
  close(): Promise<void>;
}

/** Serves `server` on 127.0.0.1; closing ends the dashboard's streams first, then every connection. */
async function serve(server: http.Server, dashboard: { close(): Promise<void> }): Promise<Host> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await dashboard.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const HOSTS: Record<string, () => Promise<Host>> = {
  async express() {
    const dashboard = createDashboard({
      db: db.prisma,
      listenConnectionString: db.url,
      basePath: BASE_PATH,
      authorize: (req) => scopeFromHeader(req.headers[SCOPE_HEADER]),
    });
    const app = express();
    app.get('/health', (_req, res) => {
      res.json({ host: 'express' });
    });
    // Before the host's body parser: the dashboard reads (and bounds) its own bodies.
    app.use(BASE_PATH, dashboard);
    app.use(express.json());
    app.post('/echo', (req, res) => {
      res.json(req.body);
    });
    const server = http.createServer(app);
    return serve(server, dashboard);
  },
  async fastify() {
    const dashboard = createDashboard({
      db: db.prisma,
      listenConnectionString: db.url,
      basePath: BASE_PATH,
      authorize: (req) => scopeFromHeader(req.headers[SCOPE_HEADER]),
    });
    const app = Fastify();
    await app.register(middie);
    app.use(BASE_PATH, dashboard);
    app.get('/health', async () => ({ host: 'fastify' }));
    app.post('/echo', async (request) => request.body);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    return {
      origin: `http://127.0.0.1:${port}`,
      close: async () => {
        await dashboard.close();
        app.server.closeAllConnections();
        await app.close();
      },
    };
  },
  async fetch() {
    // The shape of a Next.js catch-all route (app/admin/runledger/[[...path]]/route.ts) in front of a host app.
    const dashboard = createDashboardFetchHandler({
      db: db.prisma,
      listenConnectionString: db.url,
      basePath: BASE_PATH,
      authorize: (request) => scopeFromHeader(request.headers.get(SCOPE_HEADER) ?? undefined),
    });
    const route = fetchToNode(dashboard);
    const server = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      if (path === BASE_PATH || path.startsWith(`${BASE_PATH}/`)) return route(req, res);
      if (req.method === 'GET' && path === '/health')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ host: 'fetch' }));
      if (req.method === 'POST' && path === '/echo') return void req.pipe(res.writeHead(200, { 'content-type': 'application/json' }));
      res.writeHead(404).end();
    });
    return serve(server, dashboard);
  },
};

let orgAJob: string;
let orgBJob: string;

beforeAll(async () => {
  await buildDashboardAssets();
  orgBJob = (await enqueueJob(db.prisma, { jobType: 'mount.read', payload: {}, organizationId: 'org-b' })).jobId;
  orgAJob = (await enqueueJob(db.prisma, { jobType: 'mount.read', payload: {}, organizationId: 'org-a' })).jobId;
});

/** Reads an event stream until `needle` appears; resolves with what was read. */
async function readUntil(response: Response, needle: string): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (!text.includes(needle)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before ${needle}: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
    return text;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

describe.each(Object.keys(HOSTS))('dashboard mounted in %s', (name) => {
  let host: Host;
  let base: string;
  beforeAll(async () => {
    host = await HOSTS[name]!();
    base = `${host.origin}${BASE_PATH}`;
  });
  afterAll(async () => {
    await host?.close();
  });

  it('serves the page and its files under the base path, redirecting the bare path to its trailing slash', async () => {
    const redirect = await fetch(base, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([308, `${BASE_PATH}/`]);
    const page = await fetch(`${base}/`);
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    const html = await page.text();
    expect(html).toContain('src="assets/app.js"');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    for (const [file, type] of [
      ['app.js', 'text/javascript'],
      ['app.css', 'text/css'],
    ] as const) {
      const asset = await fetch(`${base}/assets/${file}`);
      expect([asset.status, asset.headers.get('content-type')]).toEqual([200, `${type}; charset=utf-8`]);
      expect((await asset.arrayBuffer()).byteLength).toBe(Number(asset.headers.get('content-length')));
    }
    const head = await fetch(`${base}/`, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-length'), await head.text()]).toEqual([200, String(Buffer.byteLength(html)), '']);
    const refused = await fetch(`${base}/`, { headers: { [SCOPE_HEADER]: 'none' } });
    expect([refused.status, ((await refused.json()) as any).error.code]).toEqual([403, 'dashboard.forbidden']);
  });

  it("answers a read in the request's scope only", async () => {
    const jobs = (await (await fetch(`${base}/api/jobs?type=mount.read`, { headers: { [SCOPE_HEADER]: 'org:org-a' } })).json()) as { items: { id: string }[] };
    expect(jobs.items.map((job) => job.id)).toEqual([orgAJob]);
    const foreign = await fetch(`${base}/api/jobs/${orgBJob}`, { headers: { [SCOPE_HEADER]: 'org:org-a' } });
    expect([foreign.status, ((await foreign.json()) as any).error.code]).toEqual([404, 'job.not_found']);
    const missing = await fetch(`${base}/api/nothing`);
    expect([missing.status, ((await missing.json()) as any).error.code]).toEqual([404, 'dashboard.not_found']);
  });

  it('runs a POST action that carries the session cookie and token, and refuses one that does not', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'mount.cancel', payload: {}, organizationId: 'org-a' });
    const headers = { [SCOPE_HEADER]: 'org:org-a', 'content-type': 'application/json' };
    const session = await fetch(`${base}/api/session`, { headers });
    const { csrfToken } = (await session.json()) as { csrfToken: string };
    const setCookie = session.headers.get('set-cookie') ?? '';
    expect(setCookie).toContain(`Path=${BASE_PATH}; HttpOnly; SameSite=Strict`);
    const cookie = setCookie.split(';')[0]!;

    const bare = await fetch(`${base}/api/jobs/${jobId}/cancel`, { method: 'POST', headers, body: '{}' });
    expect([bare.status, ((await bare.json()) as any).error.details.reason]).toEqual([403, 'missing_token']);
    const crossSite = await fetch(`${base}/api/jobs/${jobId}/cancel`, {
      method: 'POST',
      headers: { ...headers, cookie, 'x-runledger-csrf': csrfToken, 'sec-fetch-site': 'cross-site' },
      body: '{}',
    });
    expect([crossSite.status, ((await crossSite.json()) as any).error.details.reason]).toEqual([403, 'cross_site']);
    expect((await getJob(db.prisma, { scope: adminScope(), jobId })).status).toBe('PENDING');

    const done = await fetch(`${base}/api/jobs/${jobId}/cancel`, {
      method: 'POST',
      headers: { ...headers, cookie, 'x-runledger-csrf': csrfToken, 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify({ reason: `via ${name}` }),
    });
    expect(done.status).toBe(200);
    expect(((await done.json()) as any).job.status).toBe('CANCELED');
    expect((await getJob(db.prisma, { scope: adminScope(), jobId })).status).toBe('CANCELED');
  });

  it('refuses an oversized action body with 413 before acting', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'mount.cancel', payload: {} });
    const session = await fetch(`${base}/api/session`);
    const { csrfToken } = (await session.json()) as { csrfToken: string };
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0]!;
    const huge = await fetch(`${base}/api/jobs/${jobId}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-runledger-csrf': csrfToken },
      body: JSON.stringify({ reason: 'x'.repeat(1_100_000) }),
    });
    expect([huge.status, ((await huge.json()) as any).error.code]).toEqual([413, 'dashboard.payload_too_large']);
    expect((await getJob(db.prisma, { scope: adminScope(), jobId })).status).toBe('PENDING');
  });

  it('streams the live events, starting with hello', async () => {
    const aborted = new AbortController();
    try {
      const response = await fetch(`${base}/api/events`, { headers: { [SCOPE_HEADER]: 'org:org-a' }, signal: aborted.signal });
      expect([response.status, response.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
      const text = await readUntil(response, 'event: hello');
      expect(text).toContain('data: {"live":true}');
    } finally {
      aborted.abort();
    }
  });

  it("leaves the host's own routes and body parser alone", async () => {
    expect(await (await fetch(`${host.origin}/health`)).json()).toEqual({ host: name });
    const echo = await fetch(`${host.origin}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 42 }) });
    expect([echo.status, await echo.json()]).toEqual([200, { n: 42 }]);
    // A path that only shares the base path's prefix is the host's, not the dashboard's.
    const sibling = await fetch(`${base}-other`);
    expect(sibling.status).toBe(404);
    expect(await sibling.text()).not.toContain('dashboard.not_found');
  });
});

describe('a page that leaves while authorize is still deciding', () => {
  /** Its own key for the shared LISTEN hub (pg ignores the unknown parameter), so the subscriber count is this test's. */
  function liveUrl(tag: string): string {
    const url = new URL(db.url);
    url.searchParams.set('runledger_test', tag);
    return url.toString();
  }

  it('leaves no client behind on the Node handler (its close event has already fired)', async () => {
    const url = liveUrl('node-gone');
    let called!: () => void;
    const authorizeCalled = new Promise<void>((resolve) => (called = resolve));
    let decided!: () => void;
    const authorizeDecided = new Promise<void>((resolve) => (decided = resolve));
    const dashboard = createDashboard({
      db: db.prisma,
      listenConnectionString: url,
      authorize: async (req) => {
        const gone = new Promise((resolve) => req.socket.once('close', resolve));
        called();
        await gone;
        decided();
        return adminScope();
      },
    });
    const host = await serve(http.createServer(dashboard), dashboard);
    const { origin } = host;
    try {
      const aborted = new AbortController();
      const request = fetch(`${origin}/api/events`, { signal: aborted.signal }).catch((error: unknown) => error);
      await authorizeCalled;
      aborted.abort();
      await request;
      await authorizeDecided;
      // The answer is written in the microtasks after authorize resolves; a macrotask turn is after all of them.
      await new Promise((resolve) => setImmediate(resolve));
      expect(listenConnectionStats(url)).toBeUndefined();
    } finally {
      await host.close();
    }
  });

  it('ends the stream at once on the fetch handler (its signal had already aborted)', async () => {
    const url = liveUrl('fetch-gone');
    const aborted = new AbortController();
    const dashboard = createDashboardFetchHandler({
      db: db.prisma,
      listenConnectionString: url,
      authorize: () => {
        aborted.abort();
        return adminScope();
      },
    });
    try {
      const response = await dashboard(new Request('http://dashboard.test/api/events', { signal: aborted.signal }));
      expect(listenConnectionStats(url)).toBeUndefined();
      // What was written before the abort was seen, then the end.
      expect(await response.text()).toMatch(/^retry: 3000\nevent: hello\n/);
    } finally {
      await dashboard.close();
    }
  });
});
