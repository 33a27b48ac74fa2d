/**
 * A refused or failed page load, as a page: a browser that asked for HTML
 * (the dashboard's own URL, a bookmark, a 403 for a user the host does not
 * let in) gets a small readable document with the error's code and public
 * message, not a JSON body. The API (`/api/*`) keeps answering JSON. The page
 * carries no script, and every text is escaped.
 */
import { httpStatusOf, toRunledgerError } from './http.js';
import type { BodyAnswer, DashboardRequest } from './exchange.js';

const TITLES: Record<number, string> = {
  400: 'Bad request',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Method not allowed',
  413: 'Too large',
  500: 'Something went wrong',
  503: 'Not available',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** True for a browser's page request: not the API, and HTML accepted. */
export function wantsHtml(request: DashboardRequest, relativePath: string | undefined): boolean {
  if (relativePath?.startsWith('/api/')) return false;
  return /\btext\/html\b/i.test(request.header('accept') ?? '');
}

export function errorPage(error: unknown): BodyAnswer {
  const coded = toRunledgerError(error);
  const status = httpStatusOf(coded);
  const title = TITLES[status] ?? `Error ${status}`;
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · runledger dashboard</title>
<style>body{font-family:system-ui,sans-serif;margin:3rem auto;max-width:40rem;padding:0 1rem;color:#111827;background:#fff}code{background:#f3f4f6;padding:1px 4px}@media (prefers-color-scheme: dark){body{color:#e5e7eb;background:#111827}code{background:#1f2937}}</style>
</head><body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(coded.message)}</p><p>HTTP ${status} · <code>${escapeHtml(coded.code)}</code></p></main></body></html>
`;
  return {
    kind: 'body',
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // The inline style above, and nothing else.
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    },
    body,
  };
}
