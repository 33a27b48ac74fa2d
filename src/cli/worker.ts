/** `runledger worker --handlers <module>`: runs a worker for the job definitions a module exports. */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { isJobDefinition, type AnyJobDefinition } from '../worker/define-job.js';
import type { LogFields, WorkerLogger } from '../worker/logger.js';
import { createWorker } from '../worker/worker.js';
import { UsageError, type CliContext } from './context.js';
import { integerOption } from './options.js';

/** The module's `handlers` export, or its default export: an array of defineJob(...) definitions. */
export async function loadHandlers(modulePath: string): Promise<AnyJobDefinition[]> {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(path.resolve(modulePath)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`Cannot load handlers module ${modulePath}: ${(error as Error).message}`);
  }
  const candidate = loaded.handlers ?? loaded.default;
  if (!Array.isArray(candidate) || candidate.length === 0 || !candidate.every(isJobDefinition)) {
    throw new UsageError(`${modulePath} must export \`handlers\` (or a default export): a non-empty array of defineJob(...) definitions.`);
  }
  return candidate;
}

/** Worker logs go to stderr, one line each, so stdout stays the command's output (and valid JSON with --json). */
const line = (level: string) => (message: string, fields?: LogFields) =>
  void process.stderr.write(`${new Date().toISOString()} ${level} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}\n`);
const stderrLogger: WorkerLogger = { debug: () => undefined, info: line('info'), warn: line('warn'), error: line('error') };

export function registerWorkerCommand(program: Command, context: CliContext): void {
  program
    .command('worker')
    .description('run a worker for the job definitions exported by a module')
    .requiredOption('--handlers <module>', 'module exporting `handlers`: an array of defineJob(...) definitions (compiled JS, or TS under a loader such as tsx)')
    .option('--concurrency <n>', 'handlers running at once', integerOption({ min: 1 }), 10)
    .option('--lease-seconds <n>', 'lease length; heartbeats renew it', integerOption({ min: 1 }), 60)
    .option('--drain-ms <n>', 'on SIGINT/SIGTERM, how long running handlers may finish (0: release them at once)', integerOption({ min: 0, max: 2_147_483_647 }), 10_000)
    .option('--until-idle', 'exit once nothing runnable is left (cron-style runs, scripts)', false)
    .action(async (options: { handlers: string; concurrency: number; leaseSeconds: number; drainMs: number; untilIdle: boolean }) => {
      const handlers = await loadHandlers(options.handlers);
      const worker = createWorker({
        connectionString: context.connectionString(),
        handlers,
        concurrency: options.concurrency,
        leaseSeconds: options.leaseSeconds,
        logger: stderrLogger,
        ...(options.untilIdle ? { reaper: false } : {}),
      });
      const stop = () => void worker.stop({ drainMs: options.drainMs });
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const stopped = new Promise<void>((resolve) => worker.once('worker:stopped', () => resolve()));
      if (options.untilIdle) worker.once('worker:idle', stop);
      await worker.start();
      process.stderr.write(`worker ${worker.workerId} running ${handlers.map((h) => h.jobType).join(', ')}\n`);
      await stopped;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      context.print(`worker ${worker.workerId} stopped`, { workerId: worker.workerId, stats: worker.stats() });
    });
}
