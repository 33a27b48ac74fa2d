/**
 * `runledger dashboard [--port 4000] [--host 127.0.0.1]`: the web dashboard
 * for a quick local look, in the CLI's scope (admin by default; --org or
 * --without-org narrow it). It binds to 127.0.0.1 unless told otherwise: it
 * has no login of its own, so whoever reaches the port acts in that scope.
 * Runs until SIGINT or SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Command } from 'commander';
import { createDashboard, type DashboardHandler } from '../dashboard/create-dashboard.js';
import { UsageError, type CliContext } from './context.js';
import { connectionUrlOption, integerOption } from './options.js';
import { poolerConnectionString } from '../client/connect.js';

export interface DashboardCommandOptions {
  port: number;
  host: string;
  readOnly: boolean;
  basePath: string;
  /** A direct connection string for the live feed's LISTEN (behind a transaction pooler). */
  listenUrl?: string;
}

export interface RunningDashboard {
  url: string;
  handler: DashboardHandler;
  close(): Promise<void>;
}

/** Starts the server; resolves once it listens (a taken port is a usage error naming --port). */
export async function startDashboardServer(context: CliContext, options: DashboardCommandOptions): Promise<RunningDashboard> {
  const scope = context.scope;
  const handler = createDashboard({
    db: context.db(),
    // Through a transaction pooler (`pgbouncer=true`) a LISTEN would stay on a pooled backend: no live feed then,
    // unless --listen-url names a direct connection.
    ...(options.listenUrl !== undefined
      ? { listenConnectionString: options.listenUrl }
      : poolerConnectionString(context.connectionString()).pooled
        ? {}
        : { listenConnectionString: context.connectionString() }),
    authorize: () => scope,
    readOnly: options.readOnly,
    basePath: options.basePath,
  });
  const server = http.createServer(handler);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await handler.close();
    throw new UsageError(`Cannot listen on ${options.host}:${options.port}: ${(error as Error).message}`, { code: 'cli.invalid_argument', field: '--port' });
  }
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}${options.basePath.replace(/\/+$/, '')}/`,
    handler,
    close: async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

export function registerDashboardCommand(program: Command, context: CliContext): void {
  program
    .command('dashboard')
    .description('serve the web dashboard (live runs, DAGs, jobs, actions) until interrupted')
    .option('--port <n>', 'port to listen on (0: any free port)', integerOption({ min: 0, max: 65_535 }), 4000)
    .option('--host <address>', 'address to bind (the dashboard has no login of its own: keep it local)', '127.0.0.1')
    .option('--read-only', 'hide and refuse every action', false)
    .option('--base-path <path>', "serve under this path, e.g. '/runledger'", '')
    .option(
      '--listen-url <url>',
      "direct connection string for the live updates' LISTEN (behind a transaction pooler, whose URL is marked pgbouncer=true: without it the page polls)",
      connectionUrlOption,
    )
    .action(async (options: DashboardCommandOptions) => {
      const running = await startDashboardServer(context, options);
      process.stderr.write(`runledger dashboard on ${running.url} (scope: ${context.scope.kind}${options.readOnly ? ', read-only' : ''}); Ctrl-C stops it\n`);
      context.print(running.url, { url: running.url });
      await untilSignal();
      await running.close();
    });
}
