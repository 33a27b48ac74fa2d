/**
 * The worker: claims jobs of its registered types, runs their handlers with
 * at most `concurrency` in flight, and records each outcome under its lease.
 *
 * This file is the facade: the lifecycle below, handler and lease slots, and
 * the executions (job-execution.ts). Its parts: the claim loop (claim-loop.ts),
 * the local job buffer (job-buffer.ts), and the maintenance loops, started
 * from one list (maintenance.ts: reaper, intent promoter, scheduler, retention,
 * registry).
 *
 * Lifecycle (`worker.state`):
 *
 *   created --start()--> starting --listener tried, reaper up--> running
 *   running --stop()--> stopping --drained or deadline, leases released,
 *                                  completions flushed, connections closed--> stopped
 *   starting --stop()--> stopping          (start() resolves without starting the loop)
 *   created --stop()--> stopped            (nothing was opened; start() now refuses)
 *
 * The claim loop, while running (one async loop; all of its state is touched
 * only on the event loop thread, so the flag checks below and the wait that
 * follows them cannot interleave with a wake-up):
 *
 *   IDLE --wantClaim && limit > 0 && buffer at most half the prefetch && < 2 claims in flight
 *        && not backing off--> CLAIMING       (wantClaim starts set: the first claim is at once)
 *   A claim is sent without awaiting it (at most MAX_CLAIMS_IN_FLIGHT = 2 at
 *   once, so the next batch is on its way while one is being claimed); the
 *   jobs a claim in flight may bring count as buffered when the next sizes itself.
 *   CLAIMING --got n == limit--> wantClaim set: claim again while slots and buffer have room
 *   CLAIMING --got n <  limit--> wantClaim cleared (the queue has nothing more for us now)
 *   CLAIMING --error--> BACKOFF (exponential, capped; no claim until it passes) --> CLAIMING
 *   Either way the claimed jobs go into the buffer and `pump` starts them.
 *   IDLE waits for one of:
 *     NOTIFY for a registered type    -> wantClaim
 *     the poll timer (pollIntervalMs) -> wantClaim
 *     reaper returned jobs to PENDING -> wantClaim
 *     a workflow or resource job's outcome recorded -> wantClaim (its
 *                                       commit may have released dependents,
 *                                       or freed its resource key, which a
 *                                       claim overlapping it could not see)
 *     a slot freed                    -> claims only if wantClaim is still set
 *                                       (a wake-up that came while all slots were busy)
 *   After a wake-up other than the timer, while any job is in flight, the loop
 *   yields one macrotask, so the jobs of one completion batch all free their
 *   slots before the next claim sizes itself (one claim of N, not N claims of
 *   one). With no job in flight no slot can free meanwhile, so it does not
 *   yield: a NOTIFY on an idle worker sends the claim in the same turn.
 *     stop()                          -> leaves the loop (after the claims in flight return)
 *   limit = min(S, free handler slots + prefetch - buffered, free lease slots),
 *   S and prefetch from the claim sizer (claim-size.ts): S = prefetch =
 *   `batchSize` when the user gives it; otherwise S adapts (it grows while
 *   handlers empty the buffer before a full claim lands, shrinks while the
 *   buffer holds more than a round trip needs) and the prefetch is S capped
 *   by what the lease covers at the measured handler times (0 until one
 *   handler has finished). Every claim's send and return, and every slot
 *   that frees, is reported to the sizer; a change is a `worker:claim_size`
 *   event and `worker.claimSize`.
 *   - the local buffer (like graphile-worker's `localQueue`): claimed jobs
 *     go into a FIFO buffer and start as handler slots free (`pump`), so a
 *     slot that frees takes the next job at once instead of waiting for a
 *     claim round trip. The buffer holds at most `prefetch` jobs beyond the
 *     free slots; the loop refills it only once it is at most half full, so
 *     claims stay large.
 *   - handler slots (`concurrency`): a job holds one from `start()` (it
 *     leaves the buffer) until its handler has settled and its outcome is
 *     recorded or its success queued on the completion batcher
 *     (job-execution.ts `slotFree`). So at most `concurrency` handlers run at
 *     once, however many jobs are buffered, and the next claim overlaps the
 *     commit of the previous batch's successes instead of waiting for it.
 *   - lease slots (`2 x concurrency + S + 2 x completionBatchSize`:
 *     two completion batches may commit at once): a job holds one from
 *     claim until its outcome is recorded and its handler has settled (or,
 *     for a buffered job, until its release is recorded); this bounds the
 *     leases the worker holds (buffered jobs, running jobs and successes
 *     waiting for their commit) and is what `stats().inFlight` counts.
 *
 * Buffered jobs and their leases. A buffered job's lease runs from its
 * claim, and nothing heartbeats it until it starts. The adaptive prefetch
 * plans for every buffered job to start within half of the wait allowed
 * below; the release is the backstop for handlers slower than measured (and
 * the only guard with a fixed `batchSize`). Choice: a job may wait
 * in the buffer at most `heartbeatIntervalMs` (leaseSeconds x
 * heartbeatFraction, default 1/3 of the lease) since its claim was sent;
 * one older than that is released unrun (`releaseJob`, reason
 * `job.buffer_expired`, counted in `released`, PENDING again at once with
 * its attempt not used up) instead of started, by `pump` or by a timer set
 * for the oldest buffered job, whichever comes first, and the worker then
 * claims only for free handler slots (no prefetch) for one such interval, so
 * long handlers do not make it claim and release the same jobs over and
 * over. A started job's first heartbeat is due `heartbeatIntervalMs` after
 * its claim (not after its start), so a buffered job's lease is renewed on
 * the same schedule as a job started at once. The timeout clock
 * (`timeoutSeconds`) and `durationMs` start when the handler starts. The
 * claim writes the RUNNING event and `started_at` (`markRunning`), so for a
 * buffered job they precede the handler's start by its wait in the buffer
 * (milliseconds when slots keep up; at most `heartbeatIntervalMs`).
 *
 * Why polling stays the correctness path and LISTEN is only an accelerator:
 * a NOTIFY reaches only sessions listening when the enqueue commits (one sent
 * while the LISTEN connection is down or reconnecting is lost); nothing is
 * sent when a delayed job (`runAt`, a retry's backoff) becomes due, nor when
 * the reaper returns a job to PENDING in another process, nor for rows
 * written by other means. Every wait is therefore bounded by
 * `pollIntervalMs`, and the claim statement, not the notification, decides
 * what runs. A lost notification costs at most one poll interval of latency.
 *
 * Shutdown (`stop({ drainMs })`): claiming stops at once; buffered jobs are
 * released at once (`job.worker_shutdown`, counted in `released`; so are the
 * jobs of a claim that returns after stop() was called), before running handlers are
 * drained; running handlers
 * get `drainMs` to finish; then every job whose outcome is still open has its
 * signal aborted ('shutdown') and its lease released as a retryable failure
 * (`job.worker_shutdown`) rather than left to expire; pending successes are
 * flushed; the LISTEN client and an owned Prisma client are closed. A lease is
 * left behind only when the database refused every attempt to release it; the
 * reaper of another worker then returns the job after the lease expires.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { PrismaClientLike } from '../client/types.js';
import { ConflictError } from '../errors/runledger-error.js';
import { createPoolDb } from '../client/connect.js';
import type { PoolDb } from '../client/pool-db.js';
import type { ClaimedJob } from '../job/claimed-job.js';
import { loadOpenTelemetry } from '../telemetry/otel-api.js';
import { WorkerTelemetry } from './telemetry.js';
import { parseInput } from '../validation/parse.js';
import { CompletionBatcher } from './completion-batcher.js';
import { WorkerEventEmitter, type WorkerEventListener, type WorkerEventName, type WorkerStats } from './events.js';
import { JobExecution } from './job-execution.js';
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
  /** Graceful shutdown (see the module comment). Idempotent: every call returns the same promise. */
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
  private readonly jobTypes: string[];
  private readonly counters = { claimed: 0, succeeded: 0, failed: 0, released: 0, leaseLost: 0 };
  /** Jobs holding a lease slot outside the buffer: started (or being released), and not yet both recorded and settled. */
  private readonly active = new Set<JobExecution>();
  /** Jobs holding a handler slot: started, and not yet `slotFree`. */
  private handlerSlotsUsed = 0;
  private readonly wakeup = new Wakeup();
  private readonly stopController = new AbortController();
  private listener: JobAvailableListener | undefined;
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
      // Before anything is opened: a database the worker could never work on is refused with the reason.
      await checkWorkerDatabase(this.db, this.options.registry.values());
    } catch (error) {
      if (!this.stopController.signal.aborted) {
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
    void execution.releaseUnstarted(reason).then(() => {
      this.active.delete(execution);
      this.wakeup.signal();
    });
  }

  private newExecution(job: ClaimedJob, claimedAt: number): JobExecution {
    // The claim filters on the registered types, so the definition exists.
    return new JobExecution(
      job,
      this.options.registry.get(job.jobType)!,
      {
        db: this.db,
        leaseSeconds: this.options.leaseSeconds,
        heartbeatIntervalMs: this.options.heartbeatIntervalMs,
        logger: this.options.logger,
        events: this.events,
        batcher: this.batcher,
        telemetry: this.telemetry,
        stats: this.counters,
        databaseFault: () => this.claims.databaseFault(),
      },
      claimedAt,
    );
  }

  private launch(job: ClaimedJob, claimedAt: number): void {
    const execution = this.newExecution(job, claimedAt);
    this.active.add(execution);
    this.handlerSlotsUsed += 1;
    const launchedAt = performance.now();
    void execution.slotFree.then(() => {
      this.handlerSlotsUsed -= 1;
      this.claims.claimSizeChanged(this.sizer.recordSlotTime(performance.now() - launchedAt));
      this.buffer.pump();
      this.wakeup.signal();
    });
    void Promise.all([execution.recorded, execution.settled]).then(() => {
      this.active.delete(execution);
      // A workflow job's outcome may have released dependent steps' jobs in its transaction, and a resource
      // job's outcome frees its key for the key's next job (no NOTIFY announces either). A claim that overlapped
      // that commit (the handler slot frees before it) could not see them: claim once more.
      if (job.workflowManaged || job.resourceKey !== null) this.claims.want();
      this.wakeup.signal();
    });
    execution.start();
  }

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
