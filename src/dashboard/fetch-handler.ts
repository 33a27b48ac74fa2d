/**
 * `createDashboardFetchHandler(options)`: the same dashboard as
 * `createDashboard`, for runtimes that speak the Fetch API instead of Node's
 * (req, res): Next.js app-router route handlers, Hono, Bun.serve, Deno.serve,
 * Cloudflare-style `fetch(request)`. `authorize` receives the Web `Request`.
 * Answers are decided in core.ts, so both handlers answer alike; this file
 * only translates.
 *
 * The live stream (`api/events`) is a streaming `ReadableStream` body. It
 * ends, and the page's client leaves the feed (the LISTEN subscription goes
 * with the last one), when the request's `signal` aborts (what a runtime
 * does when the client disconnects; test/harness/fetch-bridge.ts does it the
 * way Next.js's Node server does), when the runtime cancels the body, or on
 * `close()`.
 */
import { createDashboardCore, type DashboardCoreOptions } from './core.js';
import type { DashboardAnswer, DashboardRequest } from './exchange.js';
import type { LiveWriter } from './live.js';

export interface DashboardFetchOptions extends DashboardCoreOptions<Request> {}

/** `(request) => Promise<Response>`, plus `close()` to end the live streams and leave the LISTEN connection. */
export interface DashboardFetchHandler {
  (request: Request): Promise<Response>;
  close(): Promise<void>;
}

const EMPTY: AsyncIterable<Uint8Array> = { async *[Symbol.asyncIterator]() {} };

function webRequest(request: Request): DashboardRequest {
  const url = new URL(request.url);
  return {
    method: request.method.toUpperCase(),
    target: `${url.pathname}${url.search}`,
    header: (name) => request.headers.get(name) ?? undefined,
    secure: url.protocol === 'https:',
    body: () => request.body ?? EMPTY,
  };
}

/** A LiveWriter over a ReadableStream: the feed's writes become the Response body's chunks. */
function streamingResponse(open: (writer: LiveWriter) => void, signal: AbortSignal): Response {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let head: { status: number; headers: Record<string, string> } | undefined;
  let ended = false;
  const closeListeners: (() => void)[] = [];
  const finish = () => {
    if (ended) return;
    ended = true;
    signal.removeEventListener('abort', onAbort);
    for (const listener of closeListeners.splice(0)) listener();
  };
  const onAbort = () => {
    if (ended) return;
    try {
      controller.close();
    } catch {
      // Already closed or errored by the runtime: nothing left to end.
    }
    finish();
  };
  const body = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
    // The consumer stopped reading (the runtime saw the client leave).
    cancel: finish,
  });
  const writer: LiveWriter = {
    writeHead: (status, headers) => {
      head = { status, headers };
    },
    write: (chunk) => {
      if (ended) return;
      try {
        controller.enqueue(encoder.encode(chunk));
      } catch {
        // The runtime errored the stream: the client is gone; a throw here would escape the feed's timers.
        finish();
      }
    },
    end: () => {
      if (ended) return;
      try {
        controller.close();
      } catch {
        // The runtime already ended the stream.
      }
      finish();
    },
    on: (_event, listener) => {
      if (ended) listener();
      else closeListeners.push(listener);
    },
  };
  open(writer);
  // Subscribed after open: a request already aborted still gets its client attached, then detached here at once.
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  // LiveFeed.attach always writes its head synchronously (200 with events, or 503 once closed).
  const { status, headers } = head ?? { status: 500, headers: {} };
  return new Response(status === 200 ? body : null, { status, headers });
}

function toResponse(answer: DashboardAnswer, signal: AbortSignal): Response {
  if (answer.kind === 'stream') return streamingResponse((writer) => answer.open(writer), signal);
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

/**
 * @example
 * // app/admin/runledger/[[...path]]/route.ts (Next.js app router)
 * const dashboard = createDashboardFetchHandler({
 *   db: prisma,
 *   listenConnectionString: process.env.DATABASE_URL,
 *   authorize: async (request) => ((await isOperator(request)) ? adminScope() : null),
 *   basePath: '/admin/runledger',
 * });
 * export { dashboard as GET, dashboard as POST, dashboard as HEAD };
 */
export function createDashboardFetchHandler(options: DashboardFetchOptions): DashboardFetchHandler {
  const core = createDashboardCore(options, 'createDashboardFetchHandler');
  const handler = (async (request: Request) => toResponse(await core.answer(webRequest(request), request), request.signal)) as DashboardFetchHandler;
  handler.close = () => core.close();
  return handler;
}
