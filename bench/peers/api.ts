/**
 * The part of the peers' APIs the bench uses, typed here so `npm run
 * typecheck` passes in a clone where bench/peers is not installed (the peers
 * are loaded at run time by load.ts). Shapes follow pg-boss 12.38 and
 * graphile-worker 0.18.0 (their .d.ts files); a drift shows up at run time.
 */
import type { EventEmitter } from 'node:events';
import type pg from 'pg';

// ---------------------------------------------------------------------------
// pg-boss 12
// ---------------------------------------------------------------------------
export interface PgBossDb {
  // biome-ignore lint/suspicious/noExplicitAny: each peer's driver returns its own row shape; the workloads read named columns
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

export interface PgBossJob<T> {
  id: string;
  name: string;
  data: T;
  retryCount: number;
}

export interface PgBossConstructorOptions {
  connectionString: string;
  max?: number;
  supervise?: boolean;
  schedule?: boolean;
  migrate?: boolean;
  useListenNotify?: boolean;
}

export interface PgBossWorkOptions {
  batchSize?: number;
  localConcurrency?: number;
  pollingIntervalSeconds?: number;
  notifyPollingIntervalSeconds?: number;
  burstWhenBatchFull?: boolean;
  transactional?: boolean;
}

export interface PgBoss extends EventEmitter {
  start(): Promise<PgBoss>;
  stop(options?: { close?: boolean; graceful?: boolean; timeout?: number }): Promise<void>;
  createQueue(name: string, options?: { notify?: boolean; partition?: boolean }): Promise<void>;
  send(name: string, data?: object | null, options?: { db?: PgBossDb }): Promise<string | null>;
  insert(name: string, jobs: { data?: object }[], options?: { db?: PgBossDb }): Promise<string[] | null>;
  fetch<T>(name: string, options?: { batchSize?: number }): Promise<PgBossJob<T>[]>;
  complete(name: string, id: string | string[]): Promise<unknown>;
  work<T>(name: string, options: PgBossWorkOptions, handler: (jobs: PgBossJob<T>[], tx: PgBossDb) => Promise<unknown>): Promise<string>;
  offWork(name: string, options?: { id?: string; wait?: boolean }): Promise<void>;
}

export interface PgBossModule {
  PgBoss: new (options: PgBossConstructorOptions) => PgBoss;
}

// ---------------------------------------------------------------------------
// graphile-worker 0.18
// ---------------------------------------------------------------------------
export type GraphileLogFunction = (level: string, message: string, meta?: unknown) => void;

export interface GraphileLogger {
  readonly __brand?: 'graphile-logger';
}

export interface GraphileJob {
  id: string;
  task_identifier: string;
  payload: unknown;
}

export interface GraphileHelpers {
  job: GraphileJob;
  withPgClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  addJob(identifier: string, payload?: unknown): Promise<unknown>;
  addJobs(specs: { identifier: string; payload: unknown }[]): Promise<unknown>;
}

export type GraphileTask = (payload: unknown, helpers: GraphileHelpers) => Promise<void> | void;

export interface GraphileWorkerPreset {
  worker?: {
    localQueue?: { size: number; ttl?: number };
    completeJobBatchDelay?: number;
    failJobBatchDelay?: number;
  };
}

export interface GraphileRunnerOptions {
  connectionString: string;
  concurrency?: number;
  maxPoolSize?: number;
  noHandleSignals?: boolean;
  logger?: GraphileLogger;
  events?: EventEmitter;
  taskList?: Record<string, GraphileTask>;
  preset?: GraphileWorkerPreset;
}

export interface GraphileRunner {
  stop(): Promise<void>;
  promise: Promise<void>;
}

export interface GraphileWorkerUtils {
  addJob(identifier: string, payload?: unknown): Promise<unknown>;
  addJobs(specs: { identifier: string; payload: unknown }[]): Promise<unknown>;
  withPgClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  release(): Promise<void>;
}

export interface GraphileWorkerModule {
  Logger: new (factory: (scope: unknown) => GraphileLogFunction) => GraphileLogger;
  run(options: GraphileRunnerOptions): Promise<GraphileRunner>;
  runMigrations(options: { connectionString: string; logger?: GraphileLogger }): Promise<void>;
  makeWorkerUtils(options: { connectionString: string; maxPoolSize?: number; logger?: GraphileLogger }): Promise<GraphileWorkerUtils>;
}

// ---------------------------------------------------------------------------
// DBOS Transact 5.3 (@dbos-inc/dbos-sdk; dist/src/dbos.d.ts, wfqueue.d.ts)
// ---------------------------------------------------------------------------
export interface DbosConfig {
  name: string;
  systemDatabaseUrl?: string;
  systemDatabasePoolSize?: number;
  logLevel?: string;
  runMigrations?: boolean;
}

export interface DbosQueueOptions {
  /** Running workflows of the queue in one process. */
  workerConcurrency?: number;
  /** The dispatch loop's base poll interval (DBOS default 1000 ms). */
  minPollingIntervalMs?: number;
  onConflict?: 'update_if_latest_version' | 'always_update' | 'never_update';
}

export interface DbosWorkflowHandle<R> {
  readonly workflowID: string;
  getResult(options?: { pollingIntervalMs?: number }): Promise<R>;
}

export interface DbosStatic {
  setConfig(config: DbosConfig): void;
  migrate(systemDatabaseUrl: string): Promise<void>;
  launch(): Promise<void>;
  shutdown(options?: { workflowCompletionTimeoutMS?: number }): Promise<void>;
  registerWorkflow<Args extends unknown[], R>(fn: (...args: Args) => Promise<R>, config: { name: string }): (...args: Args) => Promise<R>;
  runStep<R>(fn: () => Promise<R>, config?: { name?: string }): Promise<R>;
  startWorkflow<Args extends unknown[], R>(
    target: (...args: Args) => Promise<R>,
    params?: { queueName?: string },
  ): (...args: Args) => Promise<DbosWorkflowHandle<R>>;
  registerQueue(name: string, options?: DbosQueueOptions): Promise<unknown>;
  sleep(durationMs: number): Promise<void>;
}

export interface DbosModule {
  DBOS: DbosStatic;
}
