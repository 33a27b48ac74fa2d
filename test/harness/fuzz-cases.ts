/**
 * The public-API fuzz table: one row per runtime export of `runledger` that
 * takes input (a row key is the export's name, or `name#variant` for another
 * call form of it), each with the valid arguments the fuzzer mutates and how
 * to call it; and the exports deliberately left out, each with its reason.
 * test/integration/fuzz-public-api.test.ts fails when a function export is in
 * neither, so a new public function is one row here.
 *
 * `args` gets the fixtures (rows the engine wrote through the public API, so
 * a mutated call reaches past validation into the real paths) and must build
 * a fresh argument list each time: the fuzzer mutates it in place.
 */
import pg from 'pg';
import { z } from 'zod';
import * as runledger from '../../src/index.js';
import type { ClaimedJob, Db, JobDefinition, PrismaClientLike } from '../../src/index.js';

/** The durable function whose `run` the fuzzer calls (its runs are started, never run). */
export const FUZZ_FUNCTION = runledger.defineFunction('fuzz.function_run', z.object({ n: z.number() }), async (input) => input.n);

export interface FuzzFixtures {
  /** The root client (for calls that need one, e.g. handles and workers). */
  root: PrismaClientLike;
  /** The test database's URL (migrate and the run listener open their own connections). */
  url: string;
  pendingJobId: string;
  /** A lease still held: its fields are what the lease-fenced calls take. */
  lease: ClaimedJob;
  succeededJobId: string;
  deadJobId: string;
  /** A global run with a job step 'work' and an open external window 'gate'. */
  openRunId: string;
  /** A global run that is over (canceled): what recovery takes, and whose recoveries are listed. */
  finishedRunId: string;
  /** A global run of FUZZ_FUNCTION, started and never run: it takes signals. */
  functionRunId: string;
  scheduleKey: string;
  definition: JobDefinition<{ n: number }, unknown, { n: number }>;
}

export interface FuzzCase {
  args(f: FuzzFixtures): unknown[];
  /** Calls the export with `db` (the root client or the host's transaction). */
  call(db: Db, args: unknown[], f: FuzzFixtures): unknown;
  /** No database involved: no row counts, no host transaction. */
  pure?: true;
}

/** A fresh copy: the scope constants are frozen, and the fuzzer edits what it is given. */
const scope = () => ({ ...runledger.noOrganizationScope() });
const leaseOf = (f: FuzzFixtures) => ({ jobId: f.lease.jobId, runNumber: f.lease.runNumber, attempt: f.lease.attempt, workerId: f.lease.workerId });
/** A created or started worker in the result is stopped, so nothing outlives the run. */
async function settle(result: unknown): Promise<unknown> {
  const value = await result;
  if (value && typeof value === 'object' && typeof (value as { stop?: unknown }).stop === 'function') await (value as { stop(): Promise<void> }).stop();
  return value;
}
const any = (fn: unknown) => fn as (...args: unknown[]) => unknown;
const dbCall =
  (name: keyof typeof runledger): FuzzCase['call'] =>
  (db, args) =>
    // biome-ignore lint/performance/noDynamicNamespaceImportAccess: the fuzzer calls every public operation by name
    settle(any(runledger[name])(db, ...args));

export const FUZZ_CASES: Record<string, FuzzCase> = {
  // Errors and scopes: pure.
  isRunledgerError: {
    pure: true,
    args: () => [new runledger.ValidationError('job.invalid_input', 'payload', 'bad'), 'job.invalid_input'],
    call: (_db, args) => {
      const r = runledger.isRunledgerError(args[0], args[1] as never);
      if (typeof r !== 'boolean') throw new Error('not a boolean');
      return r;
    },
  },
  organizationScope: {
    args: () => ['org-fuzz'],
    call: (db, args) => runledger.listJobs(db, { scope: any(runledger.organizationScope)(...args) as runledger.Scope, limit: 1 }),
  },

  // Queue.
  enqueueJob: {
    args: () => [
      {
        jobType: 'fuzz.job',
        payload: { n: 1 },
        priority: 1,
        maxAttempts: 2,
        timeoutSeconds: 30,
        idempotencyKey: 'fuzz-key',
        resource: 'fuzz-res',
        concurrency: { key: 'fuzz-slots', limit: 2 },
        backoff: { baseDelayMs: 10, maxDelayMs: 100 },
        runAt: new Date(Date.now() + 60_000),
      },
      { notify: false },
    ],
    call: dbCall('enqueueJob'),
  },
  'enqueueJob#debounce': {
    args: () => [
      {
        jobType: 'fuzz.debounced',
        payload: { n: 1 },
        organizationId: 'org-fuzz',
        resource: 'fuzz-res',
        debounce: { key: 'fuzz-key', windowMs: 1_000, maxWaitMs: 5_000 },
      },
      { notify: false },
    ],
    call: dbCall('enqueueJob'),
  },
  'enqueueJobs#throttle': {
    args: () => [
      [
        { jobType: 'fuzz.throttled', payload: ['x'], throttle: { key: 'fuzz-key', windowMs: 60_000 }, delayMs: 10 },
        { jobType: 'fuzz.throttled', payload: ['y'], throttle: { key: 'fuzz-key', windowMs: 60_000 } },
        { jobType: 'fuzz.debounced', payload: null, debounce: { key: 'fuzz-key', windowMs: 60_000 } },
      ],
    ],
    call: dbCall('enqueueJobs'),
  },
  'enqueueJob#definition': {
    args: () => [{ n: 1 }, { organizationId: 'org-fuzz', delayMs: 10 }],
    call: (db, args, f) => settle(any(runledger.enqueueJob)(db, f.definition, ...args)),
  },
  'enqueueJobs#definition': {
    args: () => [
      [
        { payload: { n: 1 }, priority: 2 },
        { payload: { n: 2 }, idempotencyKey: 'fuzz-typed-many' },
      ],
      { notify: false },
    ],
    call: (db, args, f) => settle(any(runledger.enqueueJobs)(db, f.definition, ...args)),
  },
  enqueueJobs: {
    args: () => [
      [
        { jobType: 'fuzz.a', payload: ['x'] },
        { jobType: 'fuzz.b', payload: null, organizationId: 'org-fuzz' },
      ],
      { notify: true },
    ],
    call: dbCall('enqueueJobs'),
  },
  claimJobs: {
    args: () => [{ workerId: 'fuzz-worker', jobTypes: ['fuzz.never-enqueued'], limit: 2, leaseSeconds: 30, markRunning: true }],
    call: dbCall('claimJobs'),
  },
  markJobRunning: { args: (f) => [leaseOf(f)], call: dbCall('markJobRunning') },
  heartbeatJob: { args: (f) => [{ ...leaseOf(f), leaseSeconds: 60, save: { progress: { done: 1 }, checkpoint: { at: 'x' } } }], call: dbCall('heartbeatJob') },
  completeJob: { args: (f) => [{ ...leaseOf(f), runNumber: f.lease.runNumber + 1000, output: { ok: true } }], call: dbCall('completeJob') },
  completeJobs: { args: (f) => [[{ ...leaseOf(f), runNumber: f.lease.runNumber + 1000, output: [1] }]], call: dbCall('completeJobs') },
  failJob: {
    args: (f) => [
      {
        ...leaseOf(f),
        runNumber: f.lease.runNumber + 1000,
        error: { code: 'fuzz.failed', message: 'no' },
        retryable: true,
        retryNotBefore: new Date(Date.now() + 1_000),
      },
    ],
    call: dbCall('failJob'),
  },
  releaseJob: { args: (f) => [{ ...leaseOf(f), runNumber: f.lease.runNumber + 1000, reason: 'fuzz.release' }], call: dbCall('releaseJob') },
  cancelJob: { args: (f) => [{ jobId: f.succeededJobId, scope: scope(), reason: 'fuzz' }], call: dbCall('cancelJob') },
  setJobStage: { args: (f) => [{ ...leaseOf(f), stage: 'fuzz stage' }], call: dbCall('setJobStage') },
  recordJobProgress: { args: (f) => [{ ...leaseOf(f), processed: 1, total: 2 }], call: dbCall('recordJobProgress') },
  continueJob: {
    args: (f) => [{ ...leaseOf(f), runNumber: f.lease.runNumber + 1000, delayMs: 1_000, save: { checkpoint: { at: 'x' }, progress: null } }],
    call: dbCall('continueJob'),
  },
  reapExpiredLeases: { args: () => [{ limit: 1 }], call: dbCall('reapExpiredLeases') },
  getJob: { args: (f) => [{ scope: scope(), jobId: f.pendingJobId }], call: dbCall('getJob') },
  findJob: { args: (f) => [{ scope: scope(), jobId: f.pendingJobId }], call: dbCall('findJob') },
  listJobs: {
    args: () => [{ scope: scope(), status: ['PENDING', 'LEASED'], jobType: 'fuzz.job', limit: 2, cursor: '00000000-0000-0000-0000-000000000000' }],
    call: dbCall('listJobs'),
  },
  listJobEvents: { args: (f) => [{ scope: scope(), jobId: f.pendingJobId, limit: 2, cursor: '1' }], call: dbCall('listJobEvents') },
  listJobAttempts: { args: (f) => [{ scope: scope(), jobId: f.succeededJobId, limit: 2, cursor: '0' }], call: dbCall('listJobAttempts') },

  // Definitions catalog and enqueue intents (the fixture's definition is synced and enabled; an intent of its type is pending).
  syncJobDefinitions: {
    args: (f) => [[f.definition, runledger.defineJob('fuzz.synced', z.object({ n: z.number() }), async () => null)]],
    call: dbCall('syncJobDefinitions'),
  },
  listJobDefinitions: { args: () => [{ limit: 2, cursor: 'a' }], call: dbCall('listJobDefinitions') },
  // `enabled: true` only: a mutation can refuse it, never turn the fixture's type off for the rows after it.
  setJobDefinitionEnabled: { args: (f) => [{ jobType: f.definition.jobType, enabled: true }], call: dbCall('setJobDefinitionEnabled') },
  recordJobEnqueueIntent: {
    args: () => [
      {
        jobType: 'fuzz.intent',
        payload: { n: 1 },
        idempotencyKey: 'fuzz-intent',
        organizationId: 'org-fuzz',
        priority: 1,
        maxAttempts: 2,
        timeoutSeconds: 30,
        runAt: new Date('2026-01-01T00:00:00Z'),
        resource: 'r',
        backoff: { baseDelayMs: 10, maxDelayMs: 100 },
      },
    ],
    call: dbCall('recordJobEnqueueIntent'),
  },
  'recordJobEnqueueIntent#definition': {
    args: () => [{ n: 1 }, { idempotencyKey: 'fuzz-typed-intent', organizationId: 'org-fuzz' }],
    call: (db, args, f) => settle(any(runledger.recordJobEnqueueIntent)(db, f.definition, ...args)),
  },
  promoteEnqueueIntents: { args: (f) => [{ jobTypes: [f.definition.jobType, 'fuzz.intent'], limit: 2 }], call: dbCall('promoteEnqueueIntents') },
  getEnqueueIntentStats: { args: () => [{ scope: scope() }], call: dbCall('getEnqueueIntentStats') },
  listConcurrencyLimits: { args: () => [{ scope: scope(), after: 'fuzz-key', limit: 5 }], call: dbCall('listConcurrencyLimits') },
  setConcurrencyLimit: { args: () => [{ key: 'fuzz-key', limit: 3 }], call: dbCall('setConcurrencyLimit') },
  listRateLimits: { args: () => [{ scope: scope(), after: 'fuzz-key', limit: 5 }], call: dbCall('listRateLimits') },
  setRateLimit: { args: () => [{ key: 'fuzz-key', limit: { limit: 3, periodMs: 1000 } }], call: dbCall('setRateLimit') },
  getQueueMetrics: { args: () => [{ scope: scope(), now: new Date('2026-01-01T00:00:00Z') }], call: dbCall('getQueueMetrics') },

  // Workflows.
  workflow: {
    // The builder's arguments; `after` may name b itself or an unknown step (self-dependency, unknown prerequisite).
    args: () => ['fuzz.flow', { meta: 'data' }, 'a', 'fuzz.step', { n: 1 }, 'b', ['a']],
    call: (db, [type, metadata, keyA, jobType, payload, keyB, after]) => {
      const builder = any(runledger.workflow)(type, metadata) as runledger.WorkflowBuilder;
      const run = builder
        .job(keyA as string, jobType as string, payload as never)
        .job(keyB as string, jobType as string, payload as never)
        .afterSuccess(keyB as string, after as string[])
        .build();
      return runledger.enqueueWorkflowRun(db, run);
    },
  },
  enqueueWorkflowRun: {
    args: () => [
      {
        workflowType: 'fuzz.run',
        metadata: { a: 1 },
        organizationId: 'org-fuzz',
        idempotencyKey: 'fuzz-run',
        resultStepKey: 'b',
        steps: [
          { key: 'a', kind: 'job', jobType: 'fuzz.s', payload: {} },
          { key: 'b', kind: 'external', dependsOn: [{ step: 'a', mode: 'ON_TERMINAL' }] },
        ],
      },
    ],
    call: dbCall('enqueueWorkflowRun'),
  },
  'enqueueWorkflowRun#cycle': {
    // Edges in a cycle (a -> b -> c -> a): refused whatever else the fuzzer does to it.
    args: () => [
      {
        workflowType: 'fuzz.cycle',
        steps: [
          { key: 'a', kind: 'job', jobType: 'fuzz.s', payload: {}, dependsOn: [{ step: 'c' }] },
          { key: 'b', kind: 'job', jobType: 'fuzz.s', payload: {}, dependsOn: [{ step: 'a' }] },
          { key: 'c', kind: 'external', dependsOn: [{ step: 'b' }] },
        ],
      },
    ],
    call: dbCall('enqueueWorkflowRun'),
  },
  enqueueWorkflowRuns: {
    args: () => [[runledger.workflow('fuzz.runs').job('a', 'fuzz.s', {}).build(), runledger.workflow('fuzz.runs').external('e').build()]],
    call: dbCall('enqueueWorkflowRuns'),
  },
  completeExternalWorkflowStep: {
    args: (f) => [
      {
        workflowRunId: f.openRunId,
        stepKey: 'gate-missing',
        scope: scope(),
        outcome: { status: 'succeeded', output: { by: 'fuzz' } },
        statusReason: 'r',
        errorCode: null,
        errorMessage: null,
      },
    ],
    call: dbCall('completeExternalWorkflowStep'),
  },
  signal: {
    args: (f) => [f.functionRunId, 'fuzz.signal', { by: 'fuzz' }, { scope: scope(), idempotencyKey: 'fuzz-signal' }],
    call: dbCall('signal'),
  },
  cancelWorkflowRun: {
    args: () => [{ workflowRunId: '01234567-89ab-7def-8123-456789abcdef', scope: scope(), reason: 'fuzz' }],
    call: dbCall('cancelWorkflowRun'),
  },
  getWorkflowRun: { args: (f) => [{ scope: scope(), workflowRunId: f.openRunId }], call: dbCall('getWorkflowRun') },
  findWorkflowRun: { args: (f) => [{ scope: scope(), workflowRunId: f.openRunId }], call: dbCall('findWorkflowRun') },
  listWorkflowRuns: {
    args: () => [{ scope: scope(), workflowType: 'fuzz.run', status: ['RUNNING'], waitingForExternal: true, limit: 2 }],
    call: dbCall('listWorkflowRuns'),
  },
  countWorkflowRuns: {
    args: () => [{ scope: scope(), workflowType: 'fuzz.run', status: 'RUNNING', waitingForExternal: false }],
    call: dbCall('countWorkflowRuns'),
  },
  listWorkflowSteps: { args: (f) => [{ scope: scope(), workflowRunId: f.openRunId, limit: 1 }], call: dbCall('listWorkflowSteps') },
  listWorkflowStepDependencies: { args: (f) => [{ scope: scope(), workflowRunId: f.openRunId, limit: 1 }], call: dbCall('listWorkflowStepDependencies') },
  workflowRunHandle: {
    args: (f) => [scope(), f.openRunId, { pollIntervalMs: 10 }],
    // Creating a handle reads nothing; its first read validates the scope and id.
    call: async (_db, args, f) => (any(runledger.workflowRunHandle)(f.root, ...args) as runledger.WorkflowRunHandle).getRun(),
  },
  // getResult of a run that is over answers at once (a coded conflict): its options and the handle's are what is fuzzed.
  'workflowRunHandle#getResult': {
    args: (f) => [scope(), f.finishedRunId, { pollIntervalMs: 10 }, { timeoutMs: 100 }],
    call: async (_db, [s, id, options, resultOptions], f) =>
      (any(runledger.workflowRunHandle)(f.root, s, id, options) as runledger.WorkflowRunHandle).getResult(resultOptions as runledger.GetResultOptions),
  },
  // A finished job answers at once (its output, or a coded error for a dead letter): the handle's input and options are fuzzed.
  jobHandle: {
    args: (f) => [{ scope: scope(), jobId: f.succeededJobId }, { timeoutMs: 100 }],
    call: async (_db, [ref, resultOptions], f) =>
      (any(runledger.jobHandle)(f.root, ref) as runledger.JobHandle).getResult(resultOptions as runledger.GetJobResultOptions),
  },
  'jobHandle#definition': {
    args: (f) => [f.definition, { scope: scope(), jobId: f.deadJobId }, { timeoutMs: 100 }],
    call: async (_db, [definition, ref, resultOptions], f) =>
      (any(runledger.jobHandle)(f.root, definition, ref) as runledger.JobHandle).getResult(resultOptions as runledger.GetJobResultOptions),
  },
  enqueueWorkflowRunHandle: {
    args: () => [runledger.workflow('fuzz.handle').external('e').build(), { pollIntervalMs: 10 }],
    call: (db, args, f) => settle(any(runledger.enqueueWorkflowRunHandle)(db, args[0], db === f.root ? args[1] : { ...(args[1] as object), readWith: f.root })),
  },
  enqueueOrGetActiveWorkflowRun: {
    args: () => [{ ...runledger.workflow('fuzz.active').organization('org-fuzz').job('a', 'fuzz.s', {}).build(), activeKey: 'fuzz:key' }],
    call: dbCall('enqueueOrGetActiveWorkflowRun'),
  },
  releaseQuiescedActiveKeys: { args: () => [{ limit: 1 }], call: dbCall('releaseQuiescedActiveKeys') },
  appendWorkflowSteps: {
    args: (f) => [
      {
        workflowRunId: f.openRunId,
        scope: scope(),
        mutationKey: 'fuzz-append',
        window: 'gate',
        steps: [
          { key: 'new-a', kind: 'job', jobType: 'fuzz.s', payload: { x: 1 }, resource: 'r', backoff: { baseDelayMs: 5 } },
          { key: 'new-b', kind: 'external' },
        ],
        edges: [
          { prerequisite: 'work', dependent: 'new-a' },
          { prerequisite: 'new-a', dependent: 'new-b', mode: 'on_terminal' },
          { prerequisite: 'new-b', dependent: 'new-a' },
        ],
      },
    ],
    call: dbCall('appendWorkflowSteps'),
  },

  // Recovery of a finished run: the first valid call inserts a recovery, later ones return it (same request) or conflict.
  recoverWorkflowRun: {
    args: (f) => [{ sourceRunId: f.finishedRunId, scope: scope(), requestKey: 'fuzz-recover', reason: 'fuzz', mode: 'full' }],
    call: dbCall('recoverWorkflowRun'),
  },
  listWorkflowRecoveries: {
    args: (f) => [{ runId: f.finishedRunId, scope: scope(), limit: 2, cursor: '1:01234567-89ab-7def-8123-456789abcdef' }],
    call: dbCall('listWorkflowRecoveries'),
  },

  // Integrity.
  verifyIntegrity: { args: () => [{ scope: scope(), pageSize: 2, maxViolations: 5 }], call: dbCall('verifyIntegrity') },

  // Schedules and retention.
  upsertSchedule: {
    args: (f) => [
      {
        key: f.scheduleKey,
        cron: '*/5 * * * *',
        timezone: 'Europe/Paris',
        jobType: 'fuzz.sched',
        payload: { a: 1 },
        organizationId: null,
        enabled: false,
        priority: 1,
        maxAttempts: 1,
        timeoutSeconds: 5,
        resource: 'r',
        catchUp: { maxSlots: 2 },
        now: new Date('2026-01-01T00:00:00Z'),
      },
    ],
    call: dbCall('upsertSchedule'),
  },
  deleteSchedule: { args: () => [{ key: 'fuzz.schedule-missing' }], call: dbCall('deleteSchedule') },
  getSchedule: { args: (f) => [{ key: f.scheduleKey }], call: dbCall('getSchedule') },
  findSchedule: { args: (f) => [{ key: f.scheduleKey }], call: dbCall('findSchedule') },
  listSchedules: { args: () => [{ enabled: false, jobType: 'fuzz.sched', limit: 2, cursor: 'a' }], call: dbCall('listSchedules') },
  pauseSchedule: { args: (f) => [{ key: f.scheduleKey, now: new Date('2026-01-01T00:00:00Z') }], call: dbCall('pauseSchedule') },
  resumeSchedule: { args: () => [{ key: 'fuzz.schedule-missing', now: new Date('2026-01-01T00:00:00Z') }], call: dbCall('resumeSchedule') },
  runScheduleNow: { args: () => [{ key: 'fuzz.schedule-missing' }], call: dbCall('runScheduleNow') },
  runDueSchedules: { args: () => [{ now: new Date('2000-01-01T00:00:00Z'), limit: 1 }], call: dbCall('runDueSchedules') },
  declareSchedules: {
    args: () => [
      {
        owner: 'fuzz-owner',
        prune: true,
        schedules: [
          {
            key: 'fuzz.declared',
            cron: '0 0 * * *',
            timezone: 'UTC',
            jobType: 'fuzz.sched',
            payload: { a: 1 },
            enabled: false,
            now: new Date('2026-01-01T00:00:00Z'),
          },
        ],
      },
    ],
    call: dbCall('declareSchedules'),
  },
  // defineSchedule only shapes its input; the row stores what it built, so what it lets through is validated where it is used.
  defineSchedule: {
    args: (f) => [{ key: 'fuzz.defined-schedule', cron: '0 0 * * *', job: f.definition, payload: { n: 1 }, enabled: false, maxAttempts: 2 }],
    call: (db, args) => runledger.upsertSchedule(db, any(runledger.defineSchedule)(...args) as runledger.UpsertScheduleInput),
  },
  slotIdempotencyKey: {
    pure: true,
    args: () => ['fuzz.schedule', new Date('2026-01-01T00:00:00Z')],
    call: (_db, args) => any(runledger.slotIdempotencyKey)(...args),
  },
  purgeFinished: {
    args: () => [{ olderThan: new Date('2000-01-01T00:00:00Z'), statuses: ['SUCCEEDED'], workflowRunStatuses: ['CANCELED'], batchSize: 10, dryRun: true }],
    call: dbCall('purgeFinished'),
  },

  // Replay and recovery.
  compareAndReplaySucceededJob: {
    args: (f) => [{ scope: scope(), sourceJobId: f.succeededJobId, expectedRunNumber: 2, replayRequestKey: 'fuzz-replay', reason: 'fuzz' }],
    call: dbCall('compareAndReplaySucceededJob'),
  },
  compareAndRequeueJob: {
    args: (f) => [
      { scope: scope(), jobId: f.deadJobId, expectedStatus: 'DEAD_LETTERED', expectedRunNumber: 2, statePolicy: 'preserve_progress_and_checkpoint' },
    ],
    call: dbCall('compareAndRequeueJob'),
  },
  // Two guards in the filter (no such type, and dead-lettered before 2000): a mutation of one still matches nothing.
  requeueDeadLetteredJobs: {
    args: () => [
      {
        scope: scope(),
        filter: { jobType: 'fuzz.no-such-type', finishedBefore: new Date('2000-01-01T00:00:00Z') },
        limit: 10,
        reason: 'fuzz',
        statePolicy: 'preserve_progress_and_checkpoint',
      },
    ],
    call: dbCall('requeueDeadLetteredJobs'),
  },
  countDeadLetteredJobs: {
    args: () => [{ scope: scope(), filter: { jobType: 'fuzz.no-such-type', errorCode: 'fuzz.code' }, max: 100 }],
    call: dbCall('countDeadLetteredJobs'),
  },

  // Worker runtime: validated options; a worker that starts is stopped at once.
  createWorker: {
    args: (f) => [
      {
        db: f.root,
        handlers: [f.definition],
        concurrency: 1,
        batchSize: 1,
        leaseSeconds: 30,
        pollIntervalMs: 60_000,
        reaper: false,
        schedules: false,
        logger: runledger.silentLogger,
      },
    ],
    call: (_db, args) => settle(any(runledger.createWorker)(...args)),
  },
  runWorker: {
    args: (f) => [
      { db: f.root, handlers: [f.definition], concurrency: 1, pollIntervalMs: 60_000, reaper: false, schedules: false, logger: runledger.silentLogger },
    ],
    call: (_db, args) => settle(any(runledger.runWorker)(...args)),
  },
  defineJob: {
    pure: true,
    args: () => [
      'fuzz.defined',
      z.object({ n: z.number() }),
      async () => 'ok',
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 10, maxDelayMs: 20 } }, timeoutSeconds: 5 },
    ],
    call: (_db, args) => any(runledger.defineJob)(...args),
  },
  defineFunction: {
    pure: true,
    args: () => [
      'fuzz.function',
      z.object({ n: z.number() }),
      async () => 'ok',
      { version: 2, retry: { maxAttempts: 3, backoff: { baseDelayMs: 10, maxDelayMs: 20 } }, timeoutSeconds: 5, priority: 1 },
    ],
    call: (_db, args) => any(runledger.defineFunction)(...args),
  },
  // A function run's start: what `run(input, options)` builds, enqueued like any run (in the host's transaction too).
  'defineFunction#run': {
    args: () => [{ n: 1 }, { organizationId: null, idempotencyKey: 'fuzz-function-run', metadata: { source: 'fuzz' } }],
    call: (db, args) => runledger.enqueueWorkflowRun(db, any(FUZZ_FUNCTION.run)(...args) as runledger.WorkflowRunInput),
  },
  // A handler's return values: the delay and the options' shape are checked here; checkpoint and progress when the worker stores them (worker-storable.test.ts).
  continueNow: { pure: true, args: () => [{ checkpoint: { page: 2 }, progress: { done: 1 } }], call: (_db, args) => any(runledger.continueNow)(...args) },
  continueAfter: { pure: true, args: () => [1_000, { checkpoint: { page: 2 }, progress: null }], call: (_db, args) => any(runledger.continueAfter)(...args) },
  // The handler is created and closed at once: its options are what is validated (requests: dashboard-*.test.ts).
  createDashboard: {
    pure: true,
    args: (f) => [
      {
        db: f.root,
        authorize: () => runledger.adminScope(),
        basePath: '/admin/jobs',
        readOnly: true,
        attention: { saturationWaitMs: 60_000, failureWindowMs: 900_000, failureRate: 0.2, failureMinCount: 2 },
      },
    ],
    call: async (_db, args) => (any(runledger.createDashboard)(...args) as runledger.DashboardHandler).close(),
  },
  // The same options, for the Fetch API handler (its requests: dashboard-fetch.test.ts, dashboard-mounts.test.ts).
  createDashboardFetchHandler: {
    pure: true,
    args: (f) => [
      {
        db: f.root,
        authorize: () => runledger.adminScope(),
        basePath: '/admin/runledger',
        readOnly: false,
        listenConnectionString: 'postgresql://fuzz.invalid/db',
      },
    ],
    call: async (_db, args) => (any(runledger.createDashboardFetchHandler)(...args) as runledger.DashboardFetchHandler).close(),
  },
  // Wraps a pool that never connects (nothing to end): a hostile pool or option is client.invalid (a working client: pool-db-public.test.ts).
  poolDb: {
    pure: true,
    args: (f) => [new pg.Pool({ connectionString: f.url, max: 1 }), { preparedStatements: false }],
    call: (_db, args) => any(runledger.poolDb)(...args),
  },
  // Migrates the test database (already migrated: nothing is applied); a hostile option is migrate.invalid_options, an unreachable server migrate.connection_failed.
  migrate: { args: (f) => [{ connectionString: f.url, log: () => undefined }], call: (_db, args) => any(runledger.migrate)(...args) },
  // Opens (and closes at once) a LISTEN connection to the test database: a hostile option is listen.invalid_options, an unreachable server listen.connection_failed.
  createWorkflowRunListener: {
    pure: true,
    args: (f) => [{ connectionString: f.url, onError: () => undefined }],
    call: async (_db, args) => (await (any(runledger.createWorkflowRunListener)(...args) as Promise<runledger.WorkflowRunListener>)).close(),
  },
  createConsoleLogger: { pure: true, args: () => [{ level: 'error' }], call: (_db, args) => any(runledger.createConsoleLogger)(...args) },
};

/** Function exports the fuzzer does not call, and why. */
export const NOT_FUZZED: Record<string, string> = {
  RunledgerError: 'error class: the caller constructs it with its own arguments; nothing is validated or stored',
  ValidationError: 'error class (see RunledgerError)',
  NotFoundError: 'error class (see RunledgerError)',
  ConflictError: 'error class (see RunledgerError)',
  UnavailableError: 'error class (see RunledgerError)',
  InternalError: 'error class (see RunledgerError)',
  RetryableError: "a handler's error class: what it carries is checked when the worker records it (worker-storable.test.ts)",
  TerminalError: "a handler's error class (see RetryableError)",
  JobAbortedError: 'thrown by runledger into a handler, never constructed from input',
  noOrganizationScope: 'takes no input',
  adminScope: 'takes no input',
  preparedStatementName: "the Prisma adapter's statement-name hook, called by the adapter with its own query objects, never with application input",
  completeJobSuccess: 'a deprecated alias: the very function of completeJob, fuzzed under that name (public-api.test.ts checks the identity)',
  completeJobsSuccess: 'a deprecated alias: the very function of completeJobs, fuzzed under that name (public-api.test.ts checks the identity)',
  enqueueOrGetActiveWorkflow:
    'a deprecated alias: the very function of enqueueOrGetActiveWorkflowRun, fuzzed under that name (public-api.test.ts checks the identity)',
};
