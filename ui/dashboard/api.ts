/** The page's one way to the server: relative URLs (the dashboard may be mounted under any prefix), coded errors. */
export interface ApiErrorBody {
  code: string;
  category: string;
  message: string;
  details: Record<string, unknown>;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(`${body.code}: ${body.message}`);
  }
}

export interface Session {
  scope: { kind: 'admin' } | { kind: 'no_organization' } | { kind: 'organization'; organizationId: string };
  readOnly: boolean;
  live: boolean;
  csrfToken: string;
}

let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

async function parse<T>(response: Response): Promise<T> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    body = null;
  }
  if (!response.ok) {
    const error = (body as { error?: ApiErrorBody } | null)?.error;
    throw new ApiError(response.status, error ?? { code: 'dashboard.http_error', category: 'internal', message: `HTTP ${response.status}`, details: {} });
  }
  return body as T;
}

export async function get<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(key, value);
  const search = params.toString();
  return parse<T>(await fetch(`api/${path}${search ? `?${search}` : ''}`, { headers: { accept: 'application/json' }, credentials: 'same-origin' }));
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  return parse<T>(
    await fetch(`api/${path}`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-runledger-csrf': csrfToken },
      body: JSON.stringify(body),
    }),
  );
}
