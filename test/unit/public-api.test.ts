/**
 * The public surface is deliberate: this list is every runtime export of
 * `runledger`. Adding one is an API decision (and a README line); internals
 * (database error normalisation, transaction helpers, lock keys, validation,
 * defaults the README documents) stay reachable only inside the package.
 */
import { describe, expect, it } from 'vitest';
import * as runledger from '../../src/index.js';

const PUBLIC_RUNTIME_EXPORTS = [
  // Errors and codes.
  'RunledgerError',
  'ValidationError',
  'NotFoundError',
  'ConflictError',
  'UnavailableError',
  'InternalError',
  'isRunledgerError',
  'ERROR_CODES',
  'JOB_OUTCOME_CODES',
  // Set-up: migrations, the adapter's statement names, channels a host may LISTEN on.
  'migrate',
  'preparedStatementName',
  'poolDb',
  'WORKFLOW_RUN_TERMINAL_CHANNEL',
  'WORKFLOW_STEP_CHANGED_CHANNEL',
  'JOB_AVAILABLE_CHANNEL',
  // Scopes.
  'noOrganizationScope',
  'organizationScope',
  'adminScope',
  // Queue.
  'enqueueJob',
  'enqueueJobs',
  'claimJobs',
  'setConcurrencyLimit',
  'listConcurrencyLimits',
  'setRateLimit',
  'listRateLimits',
  'markJobRunning',
  'heartbeatJob',
  'completeJob',
  'completeJobs',
  'failJob',
  'releaseJob',
  'setJobStage',
  'recordJobProgress',
  'continueJob',
  'cancelJob',
  'reapExpiredLeases',
  'getJob',
  'jobHandle',
  'findJob',
  'listJobs',
  'listJobEvents',
  'listJobAttempts',
  'DEFAULT_BACKOFF',
  // Job definitions catalog and enqueue intents.
  'syncJobDefinitions',
  'listJobDefinitions',
  'setJobDefinitionEnabled',
  'recordJobEnqueueIntent',
  'promoteEnqueueIntents',
  'getEnqueueIntentStats',
  // Workflows.
  'workflow',
  'enqueueWorkflowRun',
  'enqueueWorkflowRuns',
  'completeExternalWorkflowStep',
  'cancelWorkflowRun',
  'getWorkflowRun',
  'findWorkflowRun',
  'listWorkflowRuns',
  'countWorkflowRuns',
  'listWorkflowSteps',
  'listWorkflowStepDependencies',
  'workflowRunHandle',
  'enqueueWorkflowRunHandle',
  'createWorkflowRunListener',
  'enqueueOrGetActiveWorkflowRun',
  'releaseQuiescedActiveKeys',
  'appendWorkflowSteps',
  // Integrity.
  'verifyIntegrity',
  // Cron schedules and retention.
  'upsertSchedule',
  'deleteSchedule',
  'getSchedule',
  'findSchedule',
  'listSchedules',
  'pauseSchedule',
  'resumeSchedule',
  'runScheduleNow',
  'runDueSchedules',
  'slotIdempotencyKey',
  'declareSchedules',
  'defineSchedule',
  'purgeFinished',
  'PURGEABLE_JOB_STATUSES',
  'PURGEABLE_RUN_STATUSES',
  // Queue metrics.
  'getQueueMetrics',
  // Replay and recovery.
  'compareAndReplaySucceededJob',
  'compareAndRequeueJob',
  'recoverWorkflowRun',
  'listWorkflowRecoveries',
  'requeueDeadLetteredJobs',
  'countDeadLetteredJobs',
  // Worker runtime.
  'createWorker',
  'runWorker',
  'defineJob',
  // Durable functions (src/workflow/function-define.ts): a definition the worker runs as a workflow run's body.
  'defineFunction',
  // A signal to a durable function run (src/workflow/function-signal.ts): what ctx.waitForSignal takes.
  'signal',
  'continueNow',
  'continueAfter',
  'RetryableError',
  'TerminalError',
  'JobAbortedError',
  'createConsoleLogger',
  'silentLogger',
  // Web dashboard: a Node handler and a Fetch API handler.
  'createDashboard',
  'createDashboardFetchHandler',
  // Deprecated aliases of renamed names (src/deprecated.ts, CHANGELOG.md), kept one release.
  'completeJobSuccess',
  'completeJobsSuccess',
  'enqueueOrGetActiveWorkflow',
];

describe('public API', () => {
  it('exports exactly the documented runtime names', () => {
    expect(Object.keys(runledger).sort()).toEqual([...PUBLIC_RUNTIME_EXPORTS].sort());
  });

  it('keeps each deprecated alias the very function of its new name, marked @deprecated', async () => {
    expect(runledger.completeJobSuccess).toBe(runledger.completeJob);
    expect(runledger.completeJobsSuccess).toBe(runledger.completeJobs);
    expect(runledger.enqueueOrGetActiveWorkflow).toBe(runledger.enqueueOrGetActiveWorkflowRun);
    const { readFile } = await import('node:fs/promises');
    const lines = (await readFile(new URL('../../src/deprecated.ts', import.meta.url), 'utf8')).split('\n');
    for (const name of ['completeJobSuccess', 'completeJobsSuccess', 'enqueueOrGetActiveWorkflow']) {
      const line = lines.findIndex((l) => l.startsWith(`export const ${name}:`));
      expect(lines[line - 1], name).toMatch(/^\/\*\* @deprecated Renamed `\w+`/);
    }
  });

  it('keeps renamed and internal names out', () => {
    for (const name of [
      'globalScope',
      'normalizeDatabaseError',
      'RETRYABLE_SQLSTATES',
      'setLocalLockTimeout',
      'PRISMA_MIGRATE_ADVISORY_LOCK_KEY',
      'validateWorkflowRun',
      'withTransaction',
    ]) {
      expect(runledger, name).not.toHaveProperty(name);
    }
  });

  it('takes (db, input) for every operation on the database', () => {
    // The documented exceptions: enqueueJob/enqueueJobs/enqueueWorkflowRun(s)/enqueueWorkflowRunHandle take per-call options after the
    // request, workflowRunHandle(db, scope, id, options?) and jobHandle(db, definition?, ref, options?) build handles (docs/guide/typed-api.md, "API conventions").
    const operations = [
      'claimJobs',
      'markJobRunning',
      'heartbeatJob',
      'completeJob',
      'completeJobs',
      'failJob',
      'releaseJob',
      'cancelJob',
      'reapExpiredLeases',
      'getJob',
      'findJob',
      'listJobs',
      'listJobEvents',
      'listJobAttempts',
      'completeExternalWorkflowStep',
      'cancelWorkflowRun',
      'getWorkflowRun',
      'findWorkflowRun',
      'listWorkflowRuns',
      'countWorkflowRuns',
      'listWorkflowSteps',
      'listWorkflowStepDependencies',
      'compareAndReplaySucceededJob',
      'compareAndRequeueJob',
      'recoverWorkflowRun',
      'listWorkflowRecoveries',
      'syncJobDefinitions',
      'listJobDefinitions',
      'setJobDefinitionEnabled',
      'recordJobEnqueueIntent',
      'promoteEnqueueIntents',
      'getEnqueueIntentStats',
    ] as const;
    // biome-ignore lint/performance/noDynamicNamespaceImportAccess: the test enumerates the public exports by name
    const arity = Object.fromEntries(operations.map((name) => [name, (runledger[name] as (...args: never[]) => unknown).length]));
    expect(arity).toEqual(Object.fromEntries(operations.map((name) => [name, 2])));
  });
});
