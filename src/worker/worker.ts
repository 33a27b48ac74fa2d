/**
 * The worker facade: lifecycle, handler and lease slots, and executions. Its
 * states, claim loop, buffer, slots and shutdown are described in
 * docs/concepts/worker-loop.md (the site's "Inside the worker").
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { PrismaClientLike } from '../client/types.js';
import { ConflictError, isRunledgerError } from '../errors/runledger-error.js';
import { createPoolDb } from '../client/connect.js';
import type { PoolDb } from '../client/pool-db.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import { loadOpenTelemetry } from '../telemetry/otel-api.js';
import { WorkerTelemetry } from './telemetry.js';
import { parseInput } from '../validation/parse.js';
import { CompletionBatcher } from './completion-batcher.js';
import { DueWakes } from './due-wakes.js';
import { WorkerEventEmitter, type WorkerEventListener, type WorkerEventName, type WorkerStats } from './events.js';
import { JobExecution, type ExecutionOwner, type JobExecutionDeps } from './job-execution.js';
import { JobAvailableListener } from './listener.js';
import { resolveWorkerOptions, WORKER_INVALID_OPTIONS, type ResolvedWorkerOptions, type WorkerOptions } from './options.js';
import { declareSchedules } from '../schedules/declare.js';
import { syncJobDefinitions } from '../queue/catalog.js';
import { sleep, Wakeup } from './timing.js';
import { ClaimSizer } from './claim-size.js';
import { ClaimLoop } from './claim-loop.js';
import { JobBuffer } from './job-buffer.js';
import { maintenanceLoops, stopMaintenanceLoops, type MaintenanceLoop } from './maintenance.js';
import { checkWorkerDatabase } from './start-check.js';

export type WorkerState = 'created' | 'starting' | 'running' | 'stopping' | 'stopped';

export interface StopOptions {
  /** How long running handlers may take to finish before they are aborted and their leases released. Default 10 000. */
  drainMs?: number;
}

export const DEFAULT_DRAIN_MS = 10_000;

export interface Worker {
  readonly workerId: string;
  readonly state: WorkerState;
  /**
   * Checks the database once (see start-check.ts), connects the listener, starts the reaper and the claim
   * loop; resolves when the worker is running. Rejects at once, having opened nothing, when the worker could
   * never work: `client.pool_ended`, `database.unavailable`, `database.read_only`, `migrate.required`,
   * `worker.transaction_database_mismatch`. Idempotent.
   */
  start(): Promise<void>;
  /** Graceful shutdown (docs/concepts/worker-loop.md, "Shutdown"). Idempotent: every call returns the same promise. */
  stop(options?: StopOptions): Promise<void>;
  stats(): WorkerStats;
  /**
   * Most jobs the next claim may lease: `batchSize` when given, else the
   * adaptive size (claim-size.ts); each change is a `worker:claim_size` event.
   */
  readonly claimSize: number;
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): Worker;
  once<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): Worker;
  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): Worker;
}

const stopOptionsSchema = z.strictObject({
  drainMs: z.number().int('must be an integer').min(0, 'must not be negative').max(2_147_483_647).optional(),
});

/**
 * Creates a worker; nothing connects until `start()`.
 *
 * @example
 * const worker = createWorker({ db: prisma, handlers: [sendEmail, captureInvoice], concurrency: 20 });
 * await worker.start();
 * process.once('SIGTERM', () => void worker.stop({ drainMs: 30_000 }));
 */
export function createWorker(options: WorkerOptions): Worker {
  return new RunledgerWorker(resolveWorkerOptions(options));
}

/**
 * Creates and starts a worker.
 *
 * @example
 * const worker = await runWorker({ connectionString: process.env.DATABASE_URL!, handlers });
 */
export async function runWorker(options: WorkerOptions): Promise<Worker> {
  const worker = createWorker(options);
  await worker.start();
  return worker;
}

class RunledgerWorker implements Worker {
  readonly workerId: string;
  private currentState: WorkerState = 'created';
  private readonly db: PrismaClientLike;
  private readonly ownedClient: PoolDb | undefined;
  private readonly events: WorkerEventEmitter;
  private telemetry: WorkerTelemetry | undefined;
  private readonly batcher: CompletionBatcher;
  private readonly sizer: ClaimSizer;
  private readonly buffer: JobBuffer;
  private readonly claims: ClaimLoop;
  /** Claims when continuations this worker wrote fall due (due-wakes.ts). */
  private readonly dueWakes = new DueWakes(() => this.claims.request());
  private readonly jobTypes: string[];
  private readonly counters = { claimed: 0, succeeded: 0, failed: 0, released: 0, leaseLost: 0 };
  /** Jobs holding a lease slot outside the buffer: started (or being released), and not yet both recorded and settled. */
  private readonly active = new Set<JobExecution>();
  /** Jobs holding a handler slot: started, and not yet `slotFree`. */
  private handlerSlotsUsed = 0;
  private readonly wakeup = new Wakeup();
  private readonly stopController = new AbortController();
  private listener: JobAvailableListener | undefined;
  private deps: JobExecutionDeps | undefined;
  private loops: MaintenanceLoop[] = [];
  private loop: Promise<void> | undefined;
  private startPromise: Promise<void> | undefined;
  private stopPromise: Promise<void> | undefined;

  constructor(private readonly options: ResolvedWorkerOptions) {
    this.workerId = options.workerId;
    this.jobTypes = [...options.registry.keys()];
    this.events = new WorkerEventEmitter(options.logger);
    if (options.db) {
      this.db = options.db;
    } else {
      // resolveWorkerOptions guarantees one of db and connectionString.
      this.ownedClient = createPoolDb(options.connectionString!);
      this.db = this.ownedClient;
    }
    this.batcher = new CompletionBatcher(this.db, options.completionBatchMs, options.completionBatchSize);
    this.sizer = new ClaimSizer({ concurrency: options.concurrency, fixed: options.batchSize, heartbeatIntervalMs: options.heartbeatIntervalMs });
    this.buffer = new JobBuffer(options.heartbeatIntervalMs, {
      stopping: () => this.stopController.signal.aborted,
      freeSlots: () => options.concurrency - this.handlerSlotsUsed,
      launch: (job, claimedAt) => this.launch(job, claimedAt),
      release: (job, claimedAt, reason) => this.releaseUnstarted(job, claimedAt, reason),
      expired: (count, now) => {
        options.logger.warn('buffered jobs waited too long for a handler slot; releasing their leases unrun', {
          count,
          maxWaitMs: options.heartbeatIntervalMs,
        });
        this.claims.pausePrefetch(now + options.heartbeatIntervalMs);
      },
      observe: (buffered, freeSlots) => this.sizer.observe(buffered, freeSlots),
    });
    const { concurrency, completionBatchSize, pollIntervalMs, leaseSeconds, logger } = options;
    this.claims = new ClaimLoop(
      { db: this.db, workerId: this.workerId, jobTypes: this.jobTypes, concurrency, completionBatchSize, pollIntervalMs, leaseSeconds, logger },
      this.sizer,
      this.buffer,
      this.wakeup,
      this.events,
      {
        active: () => this.active.size,
        handlerSlotsUsed: () => this.handlerSlotsUsed,
        claimed: (count) => {
          this.counters.claimed += count;
        },
        pump: () => this.buffer.pump(),
        wakeAfter: (ms) => this.dueWakes.after(ms),
      },
    );
  }

  get claimSize(): number {
    return this.sizer.size;
  }

  get state(): WorkerState {
    return this.currentState;
  }

  stats(): WorkerStats {
    return { inFlight: this.active.size + this.buffer.length, ...this.counters };
  }

  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): Worker {
    this.events.on(event, listener);
    return this;
  }

  once<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): Worker {
    this.events.once(event, listener);
    return this;
  }

  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): Worker {
    this.events.off(event, listener);
    return this;
  }

  start(): Promise<void> {
    this.startPromise ??= this.startOnce();
    return this.startPromise;
  }

  stop(options: StopOptions = {}): Promise<void> {
    const { drainMs = DEFAULT_DRAIN_MS } = parseInput(stopOptionsSchema, options, WORKER_INVALID_OPTIONS, 'options');
    this.stopPromise ??= this.stopOnce(drainMs);
    return this.stopPromise;
  }

  /** Writes the registered definitions to the catalog; false (logged, reported) when the database refused. */
  private async syncDefinitions(): Promise<boolean> {
    try {
      await syncJobDefinitions(this.db, [...this.options.registry.values()]);
      return true;
    } catch (error) {
      this.options.logger.warn('syncing job definitions failed; retried by the intent promoter', { error });
      this.events.emit('worker:error', { error, operation: 'sync_definitions' });
      return false;
    }
  }

  private async startOnce(): Promise<void> {
    if (this.currentState !== 'created') {
      throw new ConflictError('worker.stopped', 'The worker has been stopped; create a new one.');
    }
    this.currentState = 'starting';
    const { logger, listenConnectionString, listen, pollIntervalMs } = this.options;
    try {
      // On the pool under the host's PrismaPg adapter, Prisma itself may send nothing all the worker's life, and
      // a Prisma client that never connected disposes nothing on $disconnect(): one built with
      // `disposeExternalPool` would leave its pool open. Connected now, its $disconnect() ends what it always did.
      // A failure here is left to the check below, which names the reason.
      await this.options.adapterClient?.$connect().catch(() => undefined);
      // Before anything is opened: a database the worker could never work on is refused with the reason.
      await checkWorkerDatabase(this.db, this.options.registry.values());
    } catch (error) {
      if (!this.stopController.signal.aborted) {
        if (isRunledgerError(error, 'database.unavailable')) {
          // Unreachable now (an outage, a restart): start() may be called again on this worker; stop() closes.
          this.currentState = 'created';
          this.startPromise = undefined;
          throw error;
        }
        this.currentState = 'stopped';
        await this.closeConnections();
      }
      throw error;
    }
    if (this.stopController.signal.aborted) return; // stop() was called while the check ran
    if (this.options.telemetry) {
      const api = await loadOpenTelemetry();
      if (api) this.telemetry = new WorkerTelemetry(api, this.options.telemetry, this.events);
      if (this.stopController.signal.aborted) return; // stop() was called meanwhile: open nothing
    }
    if (listenConnectionString) {
      this.listener = new JobAvailableListener({
        connectionString: listenConnectionString,
        logger,
        onNotify: (jobType) => {
          if (this.options.registry.has(jobType)) this.claims.request();
        },
        // LISTEN (back) in effect means the database answers again: claim now, not after the claim backoff.
        onListening: () => {
          this.claims.resetBackoff();
          this.claims.request();
        },
        onError: (error) => this.events.emit('worker:error', { error, operation: 'listen' }),
      });
      // Awaited so that a job enqueued after start() resolves is announced to us (when LISTEN is up).
      await this.listener.start();
    }
    // Once, at start: which path wakes this worker. A `db` without `listenConnectionString` is a
    // quiet latency cost (up to pollIntervalMs per job) that the operator must be able to see.
    if (listenConnectionString) {
      logger.info('wake-ups: LISTEN/NOTIFY, with polling as the safety net', { pollIntervalMs });
    } else if (listen) {
      logger.info('wake-ups: polling only; no connection string to LISTEN on (pass listenConnectionString with db to be woken by NOTIFY)', { pollIntervalMs });
    } else {
      logger.info('wake-ups: polling only (listen: false)', { pollIntervalMs });
    }
    // Once, at start: which client runs the worker's own statements, where the choice was made for the user.
    if (this.options.dbPath === 'adapter-pool') {
      logger.info("worker statements: through the pg Pool under the Prisma client's PrismaPg adapter, without Prisma's query layer (adapterPool)");
    } else if (this.options.dbPath === 'prisma') {
      logger.info(
        "worker statements: through the Prisma client's query layer; db: the pg Pool given to new PrismaPg(pool) runs them without it, about a third less Node CPU per job",
      );
    }
    // Before any loop: the promoter needs the catalog rows; a failure here is retried by its passes.
    const syncPending = this.options.syncDefinitions && !(await this.syncDefinitions()) ? () => this.syncDefinitions() : undefined;
    if (this.stopController.signal.aborted) return; // stop() was called while the listener connected or the sync ran
    if (this.options.declareSchedules) {
      // Before the scheduler's first pass, so a declared schedule's first slot is not missed; a failure fails start().
      const declared = await declareSchedules(this.db, this.options.declareSchedules);
      logger.info('declared schedules', { count: declared.schedules.length, pruned: declared.pruned });
    }
    this.loops = maintenanceLoops(this.options, {
      db: this.db,
      workerId: this.workerId,
      jobTypes: this.jobTypes,
      logger,
      requestClaim: () => this.claims.request(),
      reportError: (operation, error) => this.events.emit('worker:error', { error, operation }),
      inFlight: () => this.stats().inFlight,
      syncPending,
    });
    for (const { loop } of this.loops) loop.start();
    this.currentState = 'running';
    this.loop = this.claims.run(this.stopController.signal);
    logger.info('worker started', { workerId: this.workerId, jobTypes: this.jobTypes, concurrency: this.options.concurrency });
  }

  /** Gives back the lease of a buffered job that will not run here; it holds its lease slot (in `active`) until the release is recorded. */
  private releaseUnstarted(job: ClaimedJob, claimedAt: number, reason: string): void {
    const execution = this.newExecution(job, claimedAt);
    this.active.add(execution);
    // `finished` (executionOwner) takes it out of `active` once the release is recorded.
    void execution.releaseUnstarted(reason);
  }

  private newExecution(job: ClaimedJob, claimedAt: number): JobExecution {
    // The claim filters on the registered types, so the definition exists.
    return new JobExecution(job, this.options.registry.get(job.jobType)!, this.executionDeps(), claimedAt);
  }

  /** One deps object for every execution (built once telemetry is known): not an object and a closure per job. */
  private executionDeps(): JobExecutionDeps {
    if (!this.deps || this.deps.telemetry !== this.telemetry) {
      this.deps = {
        db: this.db,
        leaseSeconds: this.options.leaseSeconds,
        heartbeatIntervalMs: this.options.heartbeatIntervalMs,
        logger: this.options.logger,
        events: this.events,
        batcher: this.batcher,
        telemetry: this.telemetry,
        stats: this.counters,
        dueWakes: this.dueWakes,
        databaseFault: () => this.claims.databaseFault(),
        owner: this.executionOwner,
      };
    }
    return this.deps;
  }

  private launch(job: ClaimedJob, claimedAt: number): void {
    const execution = this.newExecution(job, claimedAt);
    this.active.add(execution);
    this.handlerSlotsUsed += 1;
    execution.start();
  }

  /** What every execution tells the worker (job-execution.ts, ExecutionOwner): one object, no promise chain per job. */
  private readonly executionOwner: ExecutionOwner = {
    slotFree: (execution) => {
      this.handlerSlotsUsed -= 1;
      this.claims.claimSizeChanged(this.sizer.recordSlotTime(performance.now() - execution.startedAtPerf));
      this.buffer.pump();
      this.wakeup.signal();
    },
    finished: (execution) => {
      this.active.delete(execution);
      // A workflow job's outcome may have released dependent steps' jobs in its transaction, and a resource
      // or concurrency-keyed job's outcome frees its key's slot for the key's next job (no NOTIFY announces
      // either). A claim that overlapped that commit (the handler slot frees before it) could not see them:
      // claim once more.
      const { workflowManaged, resourceKey, concurrencyKey } = execution.job;
      if (!Number.isNaN(execution.startedAtPerf) && (workflowManaged || resourceKey !== null || concurrencyKey !== null)) this.claims.want();
      this.wakeup.signal();
    },
  };

  private async stopOnce(drainMs: number): Promise<void> {
    const { logger } = this.options;
    if (this.currentState === 'created') {
      this.currentState = 'stopped';
      await this.closeConnections();
      this.events.emit('worker:stopped', { workerId: this.workerId, stats: this.stats() });
      return;
    }
    if (this.currentState === 'stopped') return; // start() refused the database and closed what it had opened
    // Claiming stops now, synchronously; a start() in progress sees it and starts no loop.
    this.currentState = 'stopping';
    this.stopController.abort();
    this.dueWakes.close();
    // Buffered jobs go back at once (pump releases everything once stopped), before running handlers are drained.
    this.buffer.pump();
    this.wakeup.signal();
    // A start() that failed has reported why to its caller; stopping goes on.
    await this.startPromise?.catch(() => undefined);
    logger.info('worker stopping', { workerId: this.workerId, inFlight: this.active.size, drainMs });
    await this.loop;
    await stopMaintenanceLoops(this.loops, 'claims-stopped');

    const drained = await this.drain(drainMs);
    if (!drained) {
      const undecided = [...this.active].filter((execution) => execution.undecided);
      logger.warn('drain deadline passed; aborting handlers and releasing their leases', { count: undecided.length });
      await Promise.all(undecided.map((execution) => execution.shutdown()));
    }
    await this.batcher.flush();
    await Promise.all([...this.active].map((execution) => execution.recorded));
    this.buffer.close();
    // After the drain: a draining worker still holds jobs, and the registry says so.
    await stopMaintenanceLoops(this.loops, 'drained');

    await this.closeConnections();
    this.currentState = 'stopped';
    logger.info('worker stopped', { workerId: this.workerId, ...this.stats() });
    this.events.emit('worker:stopped', { workerId: this.workerId, stats: this.stats() });
  }

  /** Waits until every in-flight outcome is recorded, or `drainMs`; true when all were. */
  private async drain(drainMs: number): Promise<boolean> {
    const deadline = new AbortController();
    const allRecorded = Promise.all([...this.active].map((execution) => execution.recorded)).then(() => true);
    const timedOut = sleep(drainMs, deadline.signal).then(() => false);
    try {
      return await Promise.race([allRecorded, timedOut]);
    } finally {
      deadline.abort();
    }
  }

  private async closeConnections(): Promise<void> {
    await this.listener?.close();
    await this.ownedClient?.$disconnect();
  }
}
