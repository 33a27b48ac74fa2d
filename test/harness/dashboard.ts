/**
 * A dashboard served on 127.0.0.1 for a test file: `authorize` reads the
 * test's `x-test-scope` header (`admin`, `org:<id>`, `raw-org:<id>` unvalidated,
 * `none`; absent: admin),
 * standing in for the host's own authentication. Closed after the file.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';
import {
  adminScope,
  createDashboard,
  noOrganizationScope,
  organizationScope,
  type DashboardHandler,
  type DashboardOptions,
  type Db,
  type Scope,
} from '../../src/index.js';

export const SCOPE_HEADER = 'x-test-scope';

export function scopeFromHeader(value: string | string[] | undefined): Scope | null {
  if (value === undefined || value === 'admin') return adminScope();
  if (value === 'none') return null;
  if (value === 'no-org') return noOrganizationScope();
  if (typeof value === 'string' && value.startsWith('org:')) return organizationScope(value.slice(4));
  // A scope object built by hand, as a host might from a user whose organization is unset: not validated here.
  if (typeof value === 'string' && value.startsWith('raw-org:')) return { kind: 'organization', organizationId: value.slice(8) };
  return null;
}

export interface ServedDashboard {
  url: string;
  handler: DashboardHandler;
  close(): Promise<void>;
}

const open: ServedDashboard[] = [];
afterAll(async () => {
  await Promise.all(open.splice(0).map((served) => served.close()));
});

export async function serveDashboard(db: Db, options: Partial<DashboardOptions> = {}): Promise<ServedDashboard> {
  const handler = createDashboard({ db, authorize: (req) => scopeFromHeader(req.headers[SCOPE_HEADER]), ...options });
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  const served: ServedDashboard = {
    url: `http://127.0.0.1:${port}${(options.basePath ?? '').replace(/\/+$/, '')}`,
    handler,
    close: () =>
      (closing ??= (async () => {
        await handler.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })()),
  };
  open.push(served);
  return served;
}

/** A browser-like session: the CSRF cookie and token from `api/session`, sent back on POSTs. */
export async function dashboardSession(baseUrl: string, scopeHeader = 'admin'): Promise<{ cookie: string; token: string }> {
  const response = await fetch(`${baseUrl}/api/session`, { headers: { [SCOPE_HEADER]: scopeHeader } });
  if (!response.ok) throw new Error(`session: HTTP ${response.status}`);
  const body = (await response.json()) as { csrfToken: string };
  const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0]!;
  return { cookie, token: body.csrfToken };
}

/** A dashboard API response: its status and its body, parsed when it is JSON. */
export interface DashboardCall {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: an HTTP body the tests dig into; their assertions check its shape
  body: any;
}

/**
 * One request to a served dashboard as `scope` (default admin), with a JSON body if given, and the session's
 * cookie and CSRF token for writes. Redirects are returned, not followed.
 */
export async function callDashboard(
  base: string,
  method: string,
  path: string,
  options: { scope?: string; body?: unknown; session?: { cookie: string; token: string }; headers?: Record<string, string> } = {},
): Promise<DashboardCall> {
  const headers: Record<string, string> = { [SCOPE_HEADER]: options.scope ?? 'admin', ...(options.headers ?? {}) };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.session) {
    headers.cookie = options.session.cookie;
    headers['x-runledger-csrf'] = options.session.token;
  }
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    redirect: 'manual',
  });
  const text = await response.text();
  return { status: response.status, body: text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}
