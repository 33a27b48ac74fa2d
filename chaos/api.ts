/**
 * Every call the chaos run makes into runledger's public API, in one place:
 * when a signature changes, this file is the only one to fix. Everything
 * else in chaos/ talks to these functions or to PostgreSQL directly (to
 * observe, never to change runledger's tables).
 */
import {
  cancelJob,
  cancelWorkflowRun,
  compareAndReplaySucceededJob,
  compareAndRequeueJob,
  completeExternalWorkflowStep,
  createWorker,
  defineJob,
  enqueueJob,
  enqueueWorkflowRun,
  noOrganizationScope,
  isRunledgerError,
  migrate,
  verifyIntegrity,
  workflow,
  WORKFLOW_RUN_TERMINAL_CHANNEL,
  RetryableError,
  TerminalError,
  type AnyJobDefinition,
  type IntegrityReport,
  type JobContext,
  type RunledgerError,
  type Worker,
  type WorkerLogger,
  type WorkflowBuilder,
} from '../src/index.js';
import type pg from 'pg';
import { createPrismaClient, type RunledgerPrismaClient } from '../src/client/connect.js';

export { defineJob, workflow, RetryableError, TerminalError, isRunledgerError, WORKFLOW_RUN_TERMINAL_CHANNEL };
export type { AnyJobDefinition, IntegrityReport, JobContext, RunledgerError, Worker, WorkerLogger, WorkflowBuilder };
export type Client = RunledgerPrismaClient;

export function connect(url: string, max: number): Client {
  return createPrismaClient(url, { max });
}

export async function migrateDatabase(url: string): Promise<void> {
  await migrate({ connectionString: url });
}

/**
 * A chaos worker. `pool`: its own statements go through this pg Pool (db: a pg Pool, src/client/pool-db.ts)
 * instead of the Prisma client, so the chaos run proves both paths under the same faults.
 */
export function startWorker(options: {
  db: Client;
  pool?: { pool: pg.Pool; preparedStatements: boolean };
  listenUrl: string;
  handlers: AnyJobDefinition[];
  workerId: string;
  logger: WorkerLogger;
}): Worker {
  return createWorker({
    ...(options.pool ? { db: options.pool.pool, preparedStatements: options.pool.preparedStatements } : { db: options.db }),
    listenConnectionString: options.listenUrl,
    handlers: options.handlers,
    workerId: options.workerId,
    logger: options.logger,
    concurrency: 8,
    leaseSeconds: 4,
    pollIntervalMs: 250,
    reaper: { intervalMs: 1_000, limit: 200 },
  });
}

export interface DirectJobSpec {
  jobType: string;
  payload: Record<string, string | number | boolean>;
  idempotencyKey?: string;
  maxAttempts?: number;
  timeoutSeconds?: number;
  concurrency?: { key: string; limit: number };
  rateLimit?: { key: string; limit: number; periodMs: number; burst: number };
  backoff?: { baseDelayMs: number; maxDelayMs: number };
}

export async function enqueueDirect(db: Client, spec: DirectJobSpec): Promise<{ jobId: string; disposition: 'inserted' | 'existing' }> {
  const result = await enqueueJob(db, {
    jobType: spec.jobType,
    payload: spec.payload,
    ...(spec.idempotencyKey ? { idempotencyKey: spec.idempotencyKey } : {}),
    ...(spec.maxAttempts ? { maxAttempts: spec.maxAttempts } : {}),
    ...(spec.timeoutSeconds ? { timeoutSeconds: spec.timeoutSeconds } : {}),
    ...(spec.concurrency ? { concurrency: spec.concurrency } : {}),
    ...(spec.rateLimit ? { rateLimit: spec.rateLimit } : {}),
    ...(spec.backoff ? { backoff: spec.backoff } : {}),
  });
  // No debounce or throttle here: an enqueue's answer is one of these two.
  return { jobId: result.jobId, disposition: result.disposition as 'inserted' | 'existing' };
}

export async function enqueueRun(
  db: Client,
  run: ReturnType<WorkflowBuilder['build']>,
): Promise<{ workflowRunId: string; disposition: 'inserted' | 'existing' }> {
  const result = await enqueueWorkflowRun(db, run);
  return { workflowRunId: result.workflowRunId, disposition: result.disposition };
}

export async function cancelOneJob(db: Client, jobId: string): Promise<string> {
  return (await cancelJob(db, { jobId, scope: noOrganizationScope(), reason: 'chaos cancel' })).status;
}

export async function cancelRun(db: Client, workflowRunId: string): Promise<string> {
  return (await cancelWorkflowRun(db, { workflowRunId, scope: noOrganizationScope(), reason: 'chaos cancel' })).status;
}

export type ExternalOutcome = { status: 'succeeded'; output: { by: string } } | { status: 'failed' };

export async function completeExternal(db: Client, workflowRunId: string, stepKey: string, outcome: ExternalOutcome): Promise<string> {
  return (await completeExternalWorkflowStep(db, { workflowRunId, stepKey, scope: noOrganizationScope(), outcome })).status;
}

export async function replaySucceeded(db: Client, sourceJobId: string, runNumber: number, key: string): Promise<string> {
  const result = await compareAndReplaySucceededJob(db, {
    scope: noOrganizationScope(),
    sourceJobId,
    expectedRunNumber: runNumber,
    replayRequestKey: key,
    reason: 'chaos replay',
  });
  return result.kind === 'replayed' ? `replayed.${result.replay.disposition}` : result.kind;
}

export async function requeueDeadLettered(db: Client, jobId: string, runNumber: number): Promise<string> {
  const result = await compareAndRequeueJob(db, {
    scope: noOrganizationScope(),
    jobId,
    expectedStatus: 'DEAD_LETTERED',
    expectedRunNumber: runNumber,
    statePolicy: 'reset_progress_and_checkpoint',
  });
  return result.kind;
}

export async function checkIntegrity(db: Client): Promise<IntegrityReport> {
  return verifyIntegrity(db, { pageSize: 500, maxViolations: 100 });
}
