/**
 * CSRF protection of the dashboard's actions: a double-submit token plus the
 * browser's own fetch metadata.
 *
 * - `GET api/session` hands the page a random token in its JSON body and sets
 *   the same token in an HttpOnly, SameSite=Strict cookie scoped to the
 *   dashboard's path.
 * - Every POST must carry that token in the `x-runledger-csrf` header, equal
 *   (compared in constant time) to the cookie. Another site can neither read
 *   the session JSON (no CORS headers are ever sent) nor send a custom header
 *   cross-origin without a preflight that the dashboard never approves.
 * - A browser that sends `Sec-Fetch-Site` must say `same-origin` (or `none`,
 *   a request typed by the user): a cross-site POST is refused before the
 *   token is even looked at.
 * Refusals are `dashboard.csrf_rejected` (HTTP 403), and nothing is done.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ValidationError } from '../errors/runledger-error.js';
import type { DashboardRequest } from './exchange.js';

export const CSRF_COOKIE = 'runledger_dashboard_csrf';
export const CSRF_HEADER = 'x-runledger-csrf';
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

function cookieToken(req: DashboardRequest): string | undefined {
  for (const part of (req.header('cookie') ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === CSRF_COOKIE) {
      const token = value.join('=');
      return TOKEN.test(token) ? token : undefined;
    }
  }
  return undefined;
}

/** The session's token, and the Set-Cookie header when a new one had to be made. */
export function sessionToken(req: DashboardRequest, cookiePath: string): { token: string; setCookie?: string } {
  const existing = cookieToken(req);
  if (existing) return { token: existing };
  const token = randomBytes(32).toString('base64url');
  const secure = req.secure || req.header('x-forwarded-proto') === 'https';
  const setCookie = `${CSRF_COOKIE}=${token}; Path=${cookiePath}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  return { token, setCookie };
}

function rejected(reason: string): ValidationError {
  return new ValidationError('dashboard.csrf_rejected', CSRF_HEADER, 'The request was refused as a possible cross-site request; reload the dashboard.', {
    details: { reason },
  });
}

/** Throws `dashboard.csrf_rejected` unless the POST comes from the dashboard's own page. */
export function checkCsrf(req: DashboardRequest): void {
  const site = req.header('sec-fetch-site');
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') throw rejected('cross_site');
  const cookie = cookieToken(req);
  const header = req.header(CSRF_HEADER);
  if (!cookie || typeof header !== 'string' || !TOKEN.test(header)) throw rejected('missing_token');
  if (!timingSafeEqual(Buffer.from(cookie), Buffer.from(header))) throw rejected('token_mismatch');
}
