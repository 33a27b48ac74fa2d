/**
 * Runs every runnable job of the given handlers' types in-process, through
 * the real worker (same claim, payload validation, timeouts, outcomes), until
 * nothing runnable remains, then stops. A host application's test can thereby
 * drive a workflow to completion deterministically: released dependents are
 * picked up in the same call. Jobs due later (a retry waiting out its
 * backoff, a delayed job) are left for a later call, unless
 * `includeDelayed` says to run them now: then, each time the worker goes
 * idle, the test's clock jumps to the next moment one falls due (their due
 * time is moved up to now: src/queue/due-later.ts) and the worker runs again,
 * so a test sees a job through its retries without sleeping.
 */
import { z } from 'zod';
import type { PrismaClientLike } from '../client/types.js';
import { RunledgerError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { timerMs } from '../validation/primitives.js';
import type { AnyJobDefinition } from '../job/contract.js';
import { silentLogger, type WorkerLogger } from '../job/logger.js';
import { bringDueLaterForward } from '../queue/due-later.js';
import { createWorker } from '../worker/worker.js';

/** `timeoutMs` feeds a Node timer: NaN or more than 2^31-1 ms would fire it at once. The rest is checked by createWorker. */
const runUntilIdleOptionsSchema = z.object({
  timeoutMs: timerMs.optional(),
  includeDelayed: z.union([z.boolean(), z.strictObject({ withinMs: z.number().int('must be an integer').min(0, 'must be at least 0') })]).optional(),
});

export interface RunUntilIdleOptions {
  /** Handlers run one at a time by default, so the order is the claim order (priority, then due time). */
  concurrency?: number;
  /** Fail when the queue is still busy after this long (default 30 s): e.g. a job that re-enqueues itself forever. */
  timeoutMs?: number;
  workerId?: string;
  logger?: WorkerLogger;
  /**
   * Also run jobs due later (retries waiting out their backoff, delayed jobs),
   * without waiting for them: `true`, however far off; `{ withinMs }`, those
   * falling due within that much test-clock time from the call. Default false.
   */
  includeDelayed?: boolean | { withinMs: number };
}

export interface RunUntilIdleJob {
  jobId: string;
  jobType: string;
  attempt: number;
  outcome: 'succeeded' | 'retry_scheduled' | 'dead_lettered' | 'lease_lost';
  errorCode?: string;
}

export interface RunUntilIdleResult {
  /** Every attempt that ran, in completion order. */
  jobs: RunUntilIdleJob[];
  succeeded: number;
  failed: number;
}

export async function runUntilIdle(
  db: PrismaClientLike,
  handlers: readonly AnyJobDefinition[],
  options: RunUntilIdleOptions = {},
): Promise<RunUntilIdleResult> {
  const { timeoutMs = 30_000, includeDelayed = false } = parseInput(runUntilIdleOptionsSchema, options, 'testing.invalid_options', 'options');
  const jobs: RunUntilIdleJob[] = [];
  const deadline = Date.now() + timeoutMs;
  const jobTypes = handlers.map((handler) => handler.jobType);
  // How much further the test's clock may still jump: null, no bound.
  let horizonMs = includeDelayed === false ? 0 : includeDelayed === true ? null : includeDelayed.withinMs;
  for (;;) {
    await runRound(db, handlers, options, jobs, deadline, timeoutMs);
    if (horizonMs === 0) break;
    const { moved, advancedMs } = await bringDueLaterForward(db, { jobTypes, withinMs: horizonMs });
    if (moved === 0) break;
    if (horizonMs !== null) horizonMs = Math.max(0, horizonMs - Math.ceil(advancedMs));
  }
  return {
    jobs,
    succeeded: jobs.filter((job) => job.outcome === 'succeeded').length,
    failed: jobs.filter((job) => job.outcome === 'retry_scheduled' || job.outcome === 'dead_lettered').length,
  };
}

/** One worker, from its start until it first reports idle; its attempts are appended to `jobs`. */
async function runRound(
  db: PrismaClientLike,
  handlers: readonly AnyJobDefinition[],
  options: RunUntilIdleOptions,
  jobs: RunUntilIdleJob[],
  deadline: number,
  timeoutMs: number,
): Promise<void> {
  const worker = createWorker({
    db,
    handlers,
    concurrency: options.concurrency ?? 1,
    listen: false,
    reaper: false,
    // The worker claims again after every completion; the timer only matters if nothing completes.
    pollIntervalMs: 60_000,
    logger: options.logger ?? silentLogger,
    workerId: options.workerId ?? 'runledger-run-until-idle',
  });
  worker.on('job:success', ({ job }) => jobs.push({ jobId: job.jobId, jobType: job.jobType, attempt: job.attempt, outcome: 'succeeded' }));
  worker.on('job:failure', ({ job, code, status }) =>
    jobs.push({
      jobId: job.jobId,
      jobType: job.jobType,
      attempt: job.attempt,
      outcome: status === 'PENDING' ? 'retry_scheduled' : 'dead_lettered',
      errorCode: code,
    }),
  );
  worker.on('job:lease_lost', ({ job }) => jobs.push({ jobId: job.jobId, jobType: job.jobType, attempt: job.attempt, outcome: 'lease_lost' }));
  const idle = new Promise<void>((resolve) => worker.once('worker:idle', () => resolve()));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()))));
  try {
    await worker.start();
    if ((await Promise.race([idle, timedOut])) === 'timeout') {
      throw new RunledgerError('unavailable', 'testing.run_until_idle_timeout', `Jobs were still runnable after ${timeoutMs} ms.`, {
        details: { ran: jobs.length },
      });
    }
  } finally {
    clearTimeout(timer);
    await worker.stop({ drainMs: 0 });
  }
}
