/**
 * `createWorker` options: the public shape, its zod schema, and the defaults.
 * A bad option is a ValidationError (`worker.invalid_options`) naming the
 * field, thrown by `createWorker` before anything connects.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import type pg from 'pg';
import { poolerConnectionString } from '../client/connect.js';
import { poolDb } from '../client/from-pool.js';
import { isPgPool, isPrismaClient, isTransactionClient, type PrismaClientLike } from '../client/types.js';
import { ValidationError } from '../errors/runledger-error.js';
import { DEFAULT_LEASE_SECONDS } from '../job/defaults.js';
import { MAX_CLAIM_BATCH, MAX_REAP_BATCH } from '../queue/inputs.js';
import { MAX_SCHEDULE_BATCH } from '../schedules/inputs.js';
import { declareSchedulesInputSchema, type DeclareSchedulesInput } from '../schedules/declare.js';
import { DEFAULT_PURGE_BATCH, MAX_PURGE_BATCH } from '../retention/inputs.js';
import { MAX_PROMOTE_BATCH } from '../queue/intent-promote.js';
import { REGISTRY_INTERVAL_MS } from '../model/worker-registry.js';
import { connectionString } from '../validation/connection-string.js';
import { parseInput } from '../validation/parse.js';
import { leaseSeconds, nonBlank, positiveInt } from '../validation/primitives.js';
import { buildHandlerRegistry, isJobDefinition } from '../job/define-job.js';
import type { AnyJobDefinition } from '../job/contract.js';
import type { WorkerTelemetryOptions } from './telemetry-options.js';
import { createConsoleLogger, guardLogger, isWorkerLogger, type WorkerLogger } from '../job/logger.js';
import { adaptiveClaimCeiling, DEFAULT_BATCH_SIZE_PER_HANDLER_SLOT } from './claim-size.js';

export const WORKER_INVALID_OPTIONS = 'worker.invalid_options';

export interface WorkerOptions {
  /**
   * The host's root Prisma client (not a `$transaction` client: the worker
   * opens a transaction per claim, heartbeat and completion), or a `pg` Pool
   * (the one given to `new PrismaPg(pool)`, or any other): the worker's own
   * statements then go to pg directly, without Prisma's query layer, which
   * saves about a third of the worker's Node CPU per job. Give `db` or
   * `connectionString`.
   */
  db?: PrismaClientLike | pg.Pool;
  /**
   * With `db` a pg Pool: name each statement so PostgreSQL reuses its plan
   * (default true). False behind a transaction-mode pooler without
   * prepared-statement support (PgBouncer < 1.21).
   */
  preparedStatements?: boolean;
  /**
   * The worker creates, and closes on `stop()`, its own pg Pool (statements
   * sent without Prisma's query layer) and LISTENs on the same database.
   * Behind a transaction-mode PgBouncer < 1.21, add `pgbouncer=true`
   * (statements unnamed) and give `listenConnectionString`.
   */
  connectionString?: string;
  /**
   * Where to LISTEN for job notifications; default `connectionString` (unless
   * it has `pgbouncer=true`). Give it with `db` (else the worker only polls),
   * or to bypass a transaction-pooling proxy (PgBouncer) that cannot hold a
   * LISTEN session: the database's direct URL.
   */
  listenConnectionString?: string;
  /** One definition per job type; the worker claims only these types. */
  handlers: readonly AnyJobDefinition[];
  /** Most jobs in flight at once. Default 10. */
  concurrency?: number;
  /**
   * Most jobs one claim leases, and most claimed jobs waiting in the
   * worker's local buffer for a handler slot (see docs/concepts/worker-loop.md), fixed. Not
   * given (the default): adaptive (claim-size.ts), starting at
   * 2 x `concurrency`, growing toward 250 while handlers drain the buffer
   * faster than claims fill it, shrinking toward `concurrency` when
   * handlers are slow, and buffering no more than the lease covers; read
   * it from `worker.claimSize` and the `worker:claim_size` event. Give it
   * to pin the old behaviour (at most the claim limit, 1000).
   */
  batchSize?: number;
  /** Lease length, renewed by heartbeats. Default 60. */
  leaseSeconds?: number;
  /** Longest wait between claims when no notification arrives. Default 1000. */
  pollIntervalMs?: number;
  /** The lease owner name. Default `<host>:<pid>:<random>`. */
  workerId?: string;
  /** Default: console at info (see logger.ts). */
  logger?: WorkerLogger;
  /** The expired-lease reaper; `false` disables it (another process reaps). Default `{ intervalMs: 15_000, limit: 100 }`. */
  reaper?: { intervalMs?: number; limit?: number } | false;
  /**
   * The cron scheduler loop (src/worker/scheduler.ts): materialises due slots
   * of every enabled schedule, whatever job types this worker handles. On by
   * default in every worker (leader-free: each slot's job is made exactly
   * once however many run it); `false` turns it off. `now` replaces the
   * database clock (tests). Default `{ intervalMs: 5_000, limit: 100 }`.
   */
  schedules?: { intervalMs?: number; limit?: number; now?: () => Date } | false;
  /**
   * Periodic retention (src/worker/retention.ts), off by default: every
   * `intervalMs` (default 1 h) purge what finished more than `olderThanMs`
   * ago (see `purgeFinished`), `batchSize` rows per transaction (default 500).
   */
  retention?: { olderThanMs: number; intervalMs?: number; batchSize?: number } | false;
  /**
   * Schedules declared in code, written by `start()` before the scheduler
   * loop runs (see `declareSchedules`): upserted idempotently, safe with many
   * workers starting at once. Schedules dropped from the list stay unless
   * `prune: true` with an `owner` tag deletes that owner's undeclared ones.
   */
  declareSchedules?: DeclareSchedulesInput;
  /**
   * Write the registered definitions to the job definitions catalog at start (`syncJobDefinitions`; a
   * failure is logged and retried by the intent promoter's passes). Default true.
   */
  syncDefinitions?: boolean;
  /**
   * The enqueue-intent promoter loop (src/worker/intent-promoter.ts): promotes pending intents of the
   * registered, enabled types. `false` turns it off. Default `{ intervalMs: 5_000, limit: 100 }`.
   */
  intents?: { intervalMs?: number; limit?: number } | false;
  /**
   * The worker's row in runledger.workers (src/worker/registry.ts), for the dashboard's workers and queues
   * pages: upserted every `intervalMs`, never on a job's path, deleted at stop. `false` turns it off.
   * Default `{ intervalMs: 15_000 }`.
   */
  workerRegistry?: { intervalMs?: number } | false;
  /** Heartbeat every `leaseSeconds * heartbeatFraction`. Default 1/3. */
  heartbeatFraction?: number;
  /** LISTEN for job notifications (an accelerator; polling is the correctness path). Default true. */
  listen?: boolean;
  /** How long a success waits to share a commit with others. Default 2 ms; 0: until the next event-loop turn. */
  completionBatchMs?: number;
  /**
   * Most successes one completion commit records. Default: the larger of
   * `batchSize` and 100 (at most the claim limit, 1000); with the adaptive
   * claim size, its ceiling (250, or 2 x `concurrency` if larger: a batch
   * only grows that large when successes pile up that fast; in the bench's
   * drain at 500 it took 0.017 statements per job to 0.007). Independent of how
   * many jobs a claim takes: successes that pile up while a batch commits
   * share the next commit instead of waiting for several (fewer commits per
   * job; in a quick check 1,000 workflow chains went from ~1,850 to ~2,600
   * steps/s at 20 -> 100).
   */
  completionBatchSize?: number;
  /**
   * OpenTelemetry (src/telemetry/): when `@opentelemetry/api` is installed, a
   * span per job execution continuing the enqueuer's trace, and job metrics,
   * through the globally registered providers or the ones given here. `false`
   * turns it off. Without the package (or an SDK) nothing is recorded.
   */
  telemetry?: WorkerTelemetryOptions | false;
}

export interface ResolvedWorkerOptions {
  db: PrismaClientLike | undefined;
  connectionString: string | undefined;
  /** Where the listener connects; undefined: polling only. */
  listenConnectionString: string | undefined;
  registry: ReadonlyMap<string, AnyJobDefinition>;
  concurrency: number;
  /** The user's fixed claim size; undefined: adaptive (claim-size.ts). */
  batchSize: number | undefined;
  leaseSeconds: number;
  pollIntervalMs: number;
  workerId: string;
  logger: WorkerLogger;
  reaper: { intervalMs: number; limit: number } | false;
  schedules: { intervalMs: number; limit: number; now: (() => Date) | undefined } | false;
  retention: { olderThanMs: number; intervalMs: number; batchSize: number } | false;
  /** As given (validated at createWorker); declareSchedules parses it again at start. */
  declareSchedules: DeclareSchedulesInput | undefined;
  syncDefinitions: boolean;
  intents: { intervalMs: number; limit: number } | false;
  workerRegistry: { intervalMs: number } | false;
  heartbeatIntervalMs: number;
  listen: boolean;
  completionBatchMs: number;
  completionBatchSize: number;
  telemetry: WorkerTelemetryOptions | false;
}

export { DEFAULT_LEASE_SECONDS };
export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_REAPER_INTERVAL_MS = 15_000;
export const DEFAULT_REAPER_LIMIT = 100;
export const DEFAULT_SCHEDULER_INTERVAL_MS = 5_000;
export const DEFAULT_SCHEDULER_LIMIT = 100;
export const DEFAULT_RETENTION_INTERVAL_MS = 3_600_000;
export const DEFAULT_INTENT_PROMOTER_INTERVAL_MS = 5_000;
export const DEFAULT_INTENT_PROMOTER_LIMIT = 100;
export const DEFAULT_HEARTBEAT_FRACTION = 1 / 3;
export const DEFAULT_COMPLETION_BATCH_MS = 2;
/** Default floor of `completionBatchSize`. */
export const DEFAULT_COMPLETION_BATCH_SIZE = 100;
export { DEFAULT_BATCH_SIZE_PER_HANDLER_SLOT };
const MAX_CONCURRENCY = 1_000;

const rootClientShape = z.custom<PrismaClientLike | pg.Pool>((value) => isPgPool(value) || isPrismaClient(value), {
  error: 'must be a Prisma client or a pg Pool',
});

const workerOptionsSchema = z
  .strictObject({
    db: rootClientShape.optional(),
    preparedStatements: z.boolean().optional(),
    // postgres:// URLs: a malformed one is refused here, not retried as a connection failure.
    connectionString: connectionString.optional(),
    listenConnectionString: connectionString.optional(),
    handlers: z.array(z.custom<AnyJobDefinition>(isJobDefinition, { error: 'must be made by defineJob()' })).min(1, 'must register at least one handler'),
    concurrency: positiveInt.max(MAX_CONCURRENCY).default(DEFAULT_CONCURRENCY),
    batchSize: positiveInt.max(MAX_CLAIM_BATCH).optional(),
    leaseSeconds: leaseSeconds.default(DEFAULT_LEASE_SECONDS),
    pollIntervalMs: positiveInt.default(DEFAULT_POLL_INTERVAL_MS),
    workerId: nonBlank(200).optional(),
    logger: z.custom<WorkerLogger>(isWorkerLogger, { error: 'must have debug, info, warn and error methods' }).optional(),
    reaper: z
      .union([
        z.literal(false),
        z.strictObject({
          intervalMs: positiveInt.default(DEFAULT_REAPER_INTERVAL_MS),
          limit: positiveInt.max(MAX_REAP_BATCH).default(DEFAULT_REAPER_LIMIT),
        }),
      ])
      .default({ intervalMs: DEFAULT_REAPER_INTERVAL_MS, limit: DEFAULT_REAPER_LIMIT }),
    schedules: z
      .union([
        z.literal(false),
        z.strictObject({
          intervalMs: positiveInt.default(DEFAULT_SCHEDULER_INTERVAL_MS),
          limit: positiveInt.max(MAX_SCHEDULE_BATCH).default(DEFAULT_SCHEDULER_LIMIT),
          now: z.custom<() => Date>((value) => typeof value === 'function', { error: 'must be a function returning a Date' }).optional(),
        }),
      ])
      .default({ intervalMs: DEFAULT_SCHEDULER_INTERVAL_MS, limit: DEFAULT_SCHEDULER_LIMIT }),
    retention: z
      .union([
        z.literal(false),
        z.strictObject({
          olderThanMs: z.number().int('must be an integer').min(1, 'must be at least 1').max(Number.MAX_SAFE_INTEGER),
          intervalMs: positiveInt.default(DEFAULT_RETENTION_INTERVAL_MS),
          batchSize: positiveInt.max(MAX_PURGE_BATCH).default(DEFAULT_PURGE_BATCH),
        }),
      ])
      .default(false),
    declareSchedules: declareSchedulesInputSchema.optional(),
    syncDefinitions: z.boolean().default(true),
    intents: z
      .union([
        z.literal(false),
        z.strictObject({
          intervalMs: positiveInt.default(DEFAULT_INTENT_PROMOTER_INTERVAL_MS),
          limit: positiveInt.max(MAX_PROMOTE_BATCH).default(DEFAULT_INTENT_PROMOTER_LIMIT),
        }),
      ])
      .default({ intervalMs: DEFAULT_INTENT_PROMOTER_INTERVAL_MS, limit: DEFAULT_INTENT_PROMOTER_LIMIT }),
    workerRegistry: z
      .union([z.literal(false), z.strictObject({ intervalMs: positiveInt.default(REGISTRY_INTERVAL_MS) })])
      .default({ intervalMs: REGISTRY_INTERVAL_MS }),
    heartbeatFraction: z.number().gt(0, 'must be above 0').lt(1, 'must be below 1').default(DEFAULT_HEARTBEAT_FRACTION),
    listen: z.boolean().default(true),
    completionBatchMs: z.number().int('must be an integer').min(0, 'must not be negative').max(60_000).default(DEFAULT_COMPLETION_BATCH_MS),
    completionBatchSize: positiveInt.max(MAX_CLAIM_BATCH).optional(),
    telemetry: z
      .union([
        z.literal(false),
        z.strictObject({
          tracerProvider: z.custom<object>(hasMethod('getTracer'), { error: 'must be an OpenTelemetry TracerProvider' }).optional(),
          meterProvider: z.custom<object>(hasMethod('getMeter'), { error: 'must be an OpenTelemetry MeterProvider' }).optional(),
        }),
      ])
      .default({}),
  })
  .refine((o) => (o.db === undefined) !== (o.connectionString === undefined), {
    path: ['db'],
    message: 'give db or connectionString, exactly one',
  });

export function resolveWorkerOptions(options: WorkerOptions): ResolvedWorkerOptions {
  const o = parseInput(workerOptionsSchema, options, WORKER_INVALID_OPTIONS, 'options');
  if (o.preparedStatements !== undefined && !isPgPool(o.db)) {
    throw new ValidationError(WORKER_INVALID_OPTIONS, 'preparedStatements', 'Invalid preparedStatements: applies only when db is a pg Pool');
  }
  // poolDb's one client per pool: a worker per call on a long-lived pool adds no listener of its own.
  const db = isPgPool(o.db) ? poolDb(o.db, { preparedStatements: o.preparedStatements ?? true }) : o.db;
  if (db && isTransactionClient(db)) {
    throw new ValidationError(WORKER_INVALID_OPTIONS, 'db', 'Invalid db: must be a root Prisma client, not a transaction client');
  }
  return {
    db,
    connectionString: o.connectionString,
    // A `pgbouncer=true` string goes through a transaction pooler: a LISTEN there would stay on a pooled
    // backend (other clients' session) and hear nothing, so such a worker polls unless told where to LISTEN.
    listenConnectionString: o.listen
      ? (o.listenConnectionString ?? (o.connectionString && !poolerConnectionString(o.connectionString).pooled ? o.connectionString : undefined))
      : undefined,
    registry: buildHandlerRegistry(o.handlers, WORKER_INVALID_OPTIONS),
    concurrency: o.concurrency,
    batchSize: o.batchSize,
    leaseSeconds: o.leaseSeconds,
    pollIntervalMs: o.pollIntervalMs,
    workerId: o.workerId ?? defaultWorkerId(),
    logger: guardLogger(o.logger ?? createConsoleLogger({ level: 'info' })),
    reaper: o.reaper,
    retention: o.retention,
    declareSchedules: options.declareSchedules,
    schedules: o.schedules === false ? false : { intervalMs: o.schedules.intervalMs, limit: o.schedules.limit, now: o.schedules.now },
    syncDefinitions: o.syncDefinitions,
    intents: o.intents,
    workerRegistry: o.workerRegistry,
    heartbeatIntervalMs: Math.max(10, Math.floor(o.leaseSeconds * 1000 * o.heartbeatFraction)),
    listen: o.listen,
    completionBatchMs: o.completionBatchMs,
    completionBatchSize:
      o.completionBatchSize ?? Math.min(Math.max(o.batchSize ?? adaptiveClaimCeiling(o.concurrency), DEFAULT_COMPLETION_BATCH_SIZE), MAX_CLAIM_BATCH),
    telemetry: o.telemetry,
  };
}

function hasMethod(name: string): (value: unknown) => boolean {
  return (value) => typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[name] === 'function';
}

function defaultWorkerId(): string {
  return `${hostname().slice(0, 150)}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
}
