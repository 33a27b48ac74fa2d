/** `runledger worker --handlers <module>`: runs a worker for the job definitions a module exports. */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { isJobDefinition, type AnyJobDefinition } from '../worker/define-job.js';
import type { LogFields, WorkerLogger } from '../worker/logger.js';
import { createWorker } from '../worker/worker.js';
import type { WorkerStats } from '../worker/events.js';
import { UsageError, type CliContext } from './context.js';
import { integerOption } from './options.js';
import { reapAllExpiredLeases } from './reap.js';

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
    .option('--until-idle', 'reap expired leases, run until nothing runnable is left, then exit (cron-style runs, scripts)', false)
    .action(async (options: WorkerCommandOptions) => {
      const handlers = await loadHandlers(options.handlers);
      const run = options.untilIdle ? await runUntilIdle(context, handlers, options) : await runOnce(context, handlers, options, false);
      context.print(`worker ${run.workerId} stopped`, run);
    });
}

interface WorkerCommandOptions {
  handlers: string;
  concurrency: number;
  leaseSeconds: number;
  drainMs: number;
  untilIdle: boolean;
}

interface WorkerRun {
  workerId: string;
  stats: WorkerStats;
  /** Only with --until-idle: leases reaped before going idle. */
  reaped?: { retried: number; deadLettered: number };
}

/**
 * Runs one worker until SIGINT/SIGTERM or, with `stopWhenIdle`, until it first
 * reports idle. `interrupted` tells the caller a signal ended it.
 */
async function runOnce(context: CliContext, handlers: AnyJobDefinition[], options: WorkerCommandOptions, stopWhenIdle: boolean): Promise<WorkerRun & { interrupted: boolean }> {
  const worker = createWorker({
    connectionString: context.connectionString(),
    handlers,
    concurrency: options.concurrency,
    leaseSeconds: options.leaseSeconds,
    logger: stderrLogger,
  });
  let interrupted = false;
  const stop = () => void worker.stop({ drainMs: options.drainMs });
  const onSignal = () => {
    interrupted = true;
    stop();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const stopped = new Promise<void>((resolve) => worker.once('worker:stopped', () => resolve()));
    if (stopWhenIdle) worker.once('worker:idle', stop);
    await worker.start();
    process.stderr.write(`worker ${worker.workerId} running ${handlers.map((h) => h.jobType).join(', ')}\n`);
    await stopped;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return { workerId: worker.workerId, stats: worker.stats(), interrupted };
}

/**
 * --until-idle. A worker that found nothing to claim is not done while a
 * crashed worker's job sits LEASED with an expired lease: that job would
 * otherwise wait for a long-running worker's reaper that a cron-style
 * deployment never has. So: reap, run a worker until it is idle, reap again;
 * stop only when a reap right after going idle finds nothing. A reap that
 * found something starts a fresh worker, because jobs it returned to PENDING
 * (or dependents released by a job it dead-lettered) may be ours, and a fresh
 * worker claims at once and reports idle again whether or not they were.
 */
async function runUntilIdle(context: CliContext, handlers: AnyJobDefinition[], options: WorkerCommandOptions): Promise<WorkerRun> {
  const stats: WorkerStats = { inFlight: 0, claimed: 0, succeeded: 0, failed: 0, released: 0, leaseLost: 0 };
  const reaped = { retried: 0, deadLettered: 0 };
  const reap = async () => {
    const totals = await reapAllExpiredLeases(context.db());
    reaped.retried += totals.retried.length;
    reaped.deadLettered += totals.deadLettered.length;
    if (totals.retried.length + totals.deadLettered.length > 0) {
      stderrLogger.info('reaped expired leases', { retried: totals.retried.length, deadLettered: totals.deadLettered.length });
    }
    return totals.retried.length + totals.deadLettered.length;
  };
  await reap();
  for (;;) {
    const run = await runOnce(context, handlers, options, true);
    for (const key of Object.keys(stats) as (keyof WorkerStats)[]) stats[key] += run.stats[key];
    if (run.interrupted || (await reap()) === 0) return { workerId: run.workerId, stats, reaped };
  }
}
