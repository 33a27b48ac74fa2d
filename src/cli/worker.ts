/** `runledger worker --handlers <module>`: runs a worker for the job definitions a module exports. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { isJobDefinition } from '../job/define-job.js';
import type { AnyJobDefinition } from '../job/contract.js';
import type { LogFields, WorkerLogger } from '../job/logger.js';
import { findNextDueAt } from '../queue/due-later.js';
import { createWorker, type Worker } from '../worker/worker.js';
import type { WorkerStats } from '../worker/events.js';
import { UsageError, type CliContext } from './context.js';
import { connectionUrlOption, integerOption } from './options.js';
import { reapAllExpiredLeases } from './reap.js';

/** The module's `handlers` export, or its default export: an array of defineJob(...) definitions. */
export async function loadHandlers(modulePath: string): Promise<AnyJobDefinition[]> {
  let loaded: Record<string, unknown>;
  try {
    loaded = await importModule(path.resolve(modulePath));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`Cannot load handlers module ${modulePath}: ${(error as Error).message}`, { field: '--handlers' });
  }
  const candidate = loaded.handlers ?? loaded.default;
  if (!Array.isArray(candidate) || candidate.length === 0 || !candidate.every(isJobDefinition)) {
    throw new UsageError(`${modulePath} must export \`handlers\` (or a default export): a non-empty array of defineJob(...) definitions.`, {
      field: '--handlers',
    });
  }
  return candidate;
}

/**
 * Imports the module as Node can; a TypeScript file Node cannot load
 * (Node 20 and 22 before type stripping: ERR_UNKNOWN_FILE_EXTENSION) goes
 * through tsx's `tsImport` when the project has tsx installed, else a coded
 * error says how to run it. Plain import first, so a process already under a
 * loader (`--import tsx`, vitest) loads the module once, in its own graph.
 */
async function importModule(file: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_UNKNOWN_FILE_EXTENSION' || !/\.[cm]?tsx?$/.test(file)) throw error;
  }
  const tsx = tsxApiInProject();
  if (tsx === undefined) {
    throw new UsageError(
      `Cannot load ${path.basename(file)}: Node does not run TypeScript by itself. Install tsx in your project (npm install --save-dev tsx), run with NODE_OPTIONS='--import tsx', or point --handlers at compiled JavaScript.`,
      { code: 'cli.typescript_handlers', field: '--handlers' },
    );
  }
  const { tsImport } = (await import(pathToFileURL(tsx).href)) as { tsImport(specifier: string, parentURL: string): Promise<Record<string, unknown>> };
  return tsImport(pathToFileURL(file).href, pathToFileURL(path.join(process.cwd(), 'noop.js')).href);
}

/**
 * The ES module entry of `tsx/esm/api` as the project in the working directory
 * has it, or undefined when tsx is not installed there. Read from tsx's exports
 * map: require.resolve would give its CommonJS entry, whose loader registration
 * fails when imported from an ES module.
 */
function tsxApiInProject(): string | undefined {
  try {
    const manifest = createRequire(path.join(process.cwd(), 'noop.js')).resolve('tsx/package.json');
    const entry = (JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: Record<string, { import?: string | { default?: string } }> }).exports?.[
      './esm/api'
    ]?.import;
    const relative = typeof entry === 'string' ? entry : entry?.default;
    return relative === undefined ? undefined : path.join(path.dirname(manifest), relative);
  } catch {
    return undefined;
  }
}

/** Worker logs go to stderr, one line each, so stdout stays the command's output (and valid JSON with --json). */
const line = (level: string) => (message: string, fields?: LogFields) =>
  void process.stderr.write(`${new Date().toISOString()} ${level} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}\n`);
const stderrLogger: WorkerLogger = { debug: () => undefined, info: line('info'), warn: line('warn'), error: line('error') };

export function registerWorkerCommand(program: Command, context: CliContext): void {
  program
    .command('worker')
    .description('run a worker for the job definitions exported by a module')
    .requiredOption(
      '--handlers <module>',
      'module exporting `handlers`: an array of defineJob(...) definitions (JavaScript; TypeScript through tsx when the project has it installed)',
    )
    .option('--concurrency <n>', 'handlers running at once', integerOption({ min: 1 }), 10)
    .option('--lease-seconds <n>', 'lease length; heartbeats renew it', integerOption({ min: 1 }), 60)
    .option(
      '--drain-ms <n>',
      'on SIGINT/SIGTERM, how long running handlers may finish (0: release them at once)',
      integerOption({ min: 0, max: 2_147_483_647 }),
      10_000,
    )
    .option('--until-idle', 'reap expired leases, run until nothing runnable is left, then exit (cron-style runs, scripts)', false)
    .option(
      '--wait-due <ms>',
      'with --until-idle: also wait for jobs of these types falling due within this many ms of the start (retries waiting out their backoff, delayed jobs), and run them',
      integerOption({ min: 0, max: 2_147_483_647 }),
      0,
    )
    .option(
      '--listen-url <url>',
      "direct connection string for the worker's LISTEN (behind a transaction pooler, which cannot hold one: the database URL is used otherwise, unless it is marked pgbouncer=true, when the worker polls)",
      connectionUrlOption,
    )
    .action(async (options: WorkerCommandOptions) => {
      if (options.waitDue > 0 && !options.untilIdle)
        throw new UsageError('--wait-due applies to --until-idle.', { code: 'cli.conflicting_options', field: '--wait-due' });
      const handlers = await loadHandlers(options.handlers);
      const interruption = onInterrupt(options.drainMs);
      try {
        const run = options.untilIdle
          ? await runUntilIdle(context, handlers, options, interruption)
          : await runWorker(context, handlers, options, interruption, false);
        context.print(`worker ${run.workerId} stopped`, run);
      } finally {
        interruption.dispose();
      }
    });
}

interface WorkerCommandOptions {
  handlers: string;
  concurrency: number;
  leaseSeconds: number;
  drainMs: number;
  untilIdle: boolean;
  waitDue: number;
  listenUrl?: string;
}

interface WorkerRun {
  workerId: string;
  stats: WorkerStats;
  /** Only with --until-idle: leases reaped before going idle. */
  reaped?: { retried: number; deadLettered: number };
}

interface Interruption {
  /** A SIGINT/SIGTERM arrived: stop the current worker (draining) and start no other. */
  readonly interrupted: boolean;
  /** The worker a signal stops. */
  current: Worker | undefined;
  /** Resolves after `ms`, or at once on a signal. */
  pause(ms: number): Promise<void>;
  dispose(): void;
}

/**
 * One handler for the whole command, so a signal that arrives between two
 * workers of --until-idle (while reaping) still ends it. `once`: a second
 * signal gets Node's default (exit at once), an operator's way out of a long drain.
 */
function onInterrupt(drainMs: number): Interruption {
  let interrupted = false;
  const pauses = new Set<() => void>();
  const state: Interruption = {
    get interrupted() {
      return interrupted;
    },
    current: undefined,
    pause(ms) {
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          pauses.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        pauses.add(done);
      });
    },
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
  function onSignal() {
    interrupted = true;
    void state.current?.stop({ drainMs });
    for (const done of [...pauses]) done();
  }
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return state;
}

/** Runs one worker until a signal or, with `stopWhenIdle`, until it first reports idle. */
async function runWorker(
  context: CliContext,
  handlers: AnyJobDefinition[],
  options: WorkerCommandOptions,
  interruption: Interruption,
  stopWhenIdle: boolean,
): Promise<WorkerRun> {
  const worker = createWorker({
    connectionString: context.connectionString(),
    handlers,
    concurrency: options.concurrency,
    leaseSeconds: options.leaseSeconds,
    ...(options.listenUrl === undefined ? {} : { listenConnectionString: options.listenUrl }),
    logger: stderrLogger,
  });
  const stopped = new Promise<void>((resolve) => worker.once('worker:stopped', () => resolve()));
  if (stopWhenIdle) worker.once('worker:idle', () => void worker.stop({ drainMs: options.drainMs }));
  await worker.start();
  process.stderr.write(`worker ${worker.workerId} running ${handlers.map((h) => h.jobType).join(', ')}\n`);
  // A signal during start() found no worker to stop: stop it now.
  interruption.current = worker;
  if (interruption.interrupted) void worker.stop({ drainMs: options.drainMs });
  await stopped;
  interruption.current = undefined;
  return { workerId: worker.workerId, stats: worker.stats() };
}

/**
 * --until-idle. A worker that found nothing to claim is not done while a
 * crashed worker's job sits LEASED with an expired lease: that job would
 * otherwise wait for a long-running worker's reaper that a cron-style
 * deployment never has. So: reap, run a worker until it is idle, reap again;
 * stop only when a reap right after going idle finds nothing. A reap that
 * found something starts a fresh worker, because jobs it returned to PENDING
 * (or dependents released by a job it dead-lettered) may be ours, and a fresh
 * worker claims at once and reports idle again whether or not they were
 * (the worker reports idle once per idle period, after a claim that found jobs).
 * With --wait-due, idle with nothing to reap is not done either while a job of
 * these types falls due before the bound: it sleeps until then and goes round.
 */
async function runUntilIdle(context: CliContext, handlers: AnyJobDefinition[], options: WorkerCommandOptions, interruption: Interruption): Promise<WorkerRun> {
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
  const waitUntil = Date.now() + options.waitDue;
  const jobTypes = handlers.map((handler) => handler.jobType);
  await reap();
  for (;;) {
    const run = await runWorker(context, handlers, options, interruption, true);
    for (const key of Object.keys(stats) as (keyof WorkerStats)[]) stats[key] += run.stats[key];
    if (interruption.interrupted) return { workerId: run.workerId, stats, reaped };
    if ((await reap()) > 0) continue;
    const withinMs = waitUntil - Date.now();
    const dueAt = withinMs > 0 ? await findNextDueAt(context.db(), { jobTypes, withinMs }) : null;
    if (dueAt === null || interruption.interrupted) return { workerId: run.workerId, stats, reaped };
    stderrLogger.info('waiting for a job due later', { dueAt: dueAt.toISOString() });
    await interruption.pause(Math.max(0, dueAt.getTime() - Date.now()));
    if (interruption.interrupted) return { workerId: run.workerId, stats, reaped };
  }
}
