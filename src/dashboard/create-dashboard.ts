/**
 * `createDashboard(options)`: the live web dashboard as one standard Node
 * request handler, `(req, res) => void`, to mount in the host's own server
 * (plain `http`, Express, Connect, Fastify through `@fastify/middie`) behind
 * the host's own authentication. For runtimes that speak the Fetch API
 * (Next.js route handlers, Hono, Bun, Deno) see fetch-handler.ts.
 *
 * This file only translates Node's request and response; what is answered is
 * decided in core.ts. The public path is `req.originalUrl` when a framework
 * (Express, middie) rewrote `req.url` to strip the mount prefix.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createDashboardCore, type DashboardCoreOptions } from './core.js';
import type { DashboardAnswer, DashboardRequest } from './exchange.js';

export interface DashboardOptions extends DashboardCoreOptions<IncomingMessage> {}

/** A standard Node request handler, plus `close()` to end the live streams and leave the LISTEN connection. */
export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  close(): Promise<void>;
}

function nodeRequest(req: IncomingMessage): DashboardRequest {
  return {
    method: req.method ?? 'GET',
    target: (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/',
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    secure: Boolean((req.socket as { encrypted?: boolean } | null)?.encrypted),
    body: () => req,
  };
}

function write(res: ServerResponse, answer: DashboardAnswer): void {
  if (answer.kind === 'stream') {
    // The client left while authorize ran: 'close' has fired already and would never detach a stream opened now.
    if (!res.destroyed) answer.open(res);
    return;
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body ?? undefined);
}

/**
 * @example
 * const dashboard = createDashboard({
 *   db: prisma,
 *   listenConnectionString: process.env.DATABASE_URL,
 *   authorize: (req) => (isOperator(req) ? adminScope() : null),
 *   basePath: '/admin/jobs',
 * });
 * http.createServer((req, res) => (req.url?.startsWith('/admin/jobs') ? dashboard(req, res) : app(req, res)));
 */
export function createDashboard(options: DashboardOptions): DashboardHandler {
  const core = createDashboardCore(options, 'createDashboard');
  const handler = ((req: IncomingMessage, res: ServerResponse) => {
    // answer() never rejects; a throw while writing means the socket is gone, so drop it.
    void core
      .answer(nodeRequest(req), req)
      .then((answer) => write(res, answer))
      .catch(() => res.destroy());
  }) as DashboardHandler;
  handler.close = () => core.close();
  return handler;
}
