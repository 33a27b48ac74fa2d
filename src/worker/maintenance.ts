/**
 * The worker's maintenance loops, started from one list: the reaper, the
 * intent promoter, the scheduler, retention and the worker registry. Each is
 * a PeriodicLoop on its own timer, off the job path; which of them run is the
 * worker's options (`reaper`, `intents`, `schedules`, `retention`,
 * `workerRegistry`: each off when false).
 *
 * Order: started in list order once the listener is up and the definitions
 * are synced (the promoter needs the catalog rows). Stopped in two phases:
 * every loop but the registry when claiming stops (no new work appears while
 * the worker drains), the registry after the drain (a draining worker still
 * holds jobs, and the registry says so; its stop deletes the worker's row).
 */
import type { PrismaClientLike } from '../client/types.js';
import type { WorkerLogger } from '../job/logger.js';
import type { WorkerOperation } from './events.js';
import { IntentPromoterLoop } from './intent-promoter.js';
import type { ResolvedWorkerOptions } from './options.js';
import type { PeriodicLoop } from './periodic-loop.js';
import { Reaper } from './reaper.js';
import { WorkerRegistryLoop } from './registry.js';
import { RetentionLoop } from './retention.js';
import { SchedulerLoop } from './scheduler.js';

/** When a loop stops: with claiming, or after the drain. */
export type StopPhase = 'claims-stopped' | 'drained';

export interface MaintenanceLoop {
  /** The `operation` of the loop's `worker:error` events. */
  readonly operation: WorkerOperation;
  readonly loop: PeriodicLoop;
  readonly stopPhase: StopPhase;
  stop(): Promise<void>;
}

/** What the loops need from the worker. */
export interface MaintenanceContext {
  db: PrismaClientLike;
  workerId: string;
  jobTypes: string[];
  logger: WorkerLogger;
  /** Jobs may be runnable now (a loop returned or enqueued some): claim. */
  requestClaim(): void;
  /** Reported as a `worker:error` event with the loop's operation. */
  reportError(operation: WorkerOperation, error: unknown): void;
  /** Leases the worker holds now (the registry publishes it). */
  inFlight(): number;
  /** Retries the catalog sync that failed at start (the promoter runs it before its passes); undefined: it succeeded. */
  syncPending: (() => Promise<boolean>) | undefined;
}

type Options = Pick<ResolvedWorkerOptions, 'reaper' | 'intents' | 'schedules' | 'retention' | 'workerRegistry' | 'concurrency'>;

/** The loops the options turn on, in start order; none started yet. */
export function maintenanceLoops(options: Options, context: MaintenanceContext): MaintenanceLoop[] {
  const { db, logger } = context;
  const onError = (operation: WorkerOperation) => (error: unknown) => context.reportError(operation, error);
  const loops: MaintenanceLoop[] = [];
  const add = (operation: WorkerOperation, loop: PeriodicLoop, stopPhase: StopPhase = 'claims-stopped', stop = () => loop.stop()) =>
    loops.push({ operation, loop, stopPhase, stop });
  if (options.reaper) {
    add('reap', new Reaper({ db, ...options.reaper, logger, onRetried: context.requestClaim, onError: onError('reap') }));
  }
  if (options.intents) {
    const { intervalMs, limit } = options.intents;
    const promoter = new IntentPromoterLoop({
      db,
      intervalMs,
      limit,
      jobTypes: context.jobTypes,
      syncPending: context.syncPending,
      logger,
      onEnqueued: context.requestClaim,
      onError: onError('promote_intents'),
    });
    add('promote_intents', promoter);
  }
  if (options.schedules) {
    add('schedule', new SchedulerLoop({ db, ...options.schedules, logger, onEnqueued: context.requestClaim, onError: onError('schedule') }));
  }
  if (options.retention) {
    add('purge', new RetentionLoop({ db, ...options.retention, logger, onError: onError('purge') }));
  }
  if (options.workerRegistry) {
    const registry = new WorkerRegistryLoop({
      db,
      workerId: context.workerId,
      jobTypes: context.jobTypes,
      concurrency: options.concurrency,
      intervalMs: options.workerRegistry.intervalMs,
      logger,
      inFlight: context.inFlight,
      onError: onError('registry'),
    });
    add('registry', registry, 'drained', () => registry.deregister());
  }
  return loops;
}

/** Stops the loops of one phase, each after the pass it is in. */
export async function stopMaintenanceLoops(loops: readonly MaintenanceLoop[], phase: StopPhase): Promise<void> {
  for (const entry of loops) if (entry.stopPhase === phase) await entry.stop();
}
