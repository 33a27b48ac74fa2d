/**
 * Tenant isolation matrix: every scoped operation, library and CLI, run
 * against organization A's rows from organization B's scope and from the
 * global scope (rows without an organization), must answer not-found (or its
 * documented outcome) and change nothing (a snapshot of every runledger table
 * before and after); adminScope sees A's rows. One row of OPERATIONS per
 * operation: a new scoped operation is one more row.
 *
 * Not in the matrix, by design: lease-fenced calls (heartbeat, complete,
 * fail, release, markRunning) are fenced by the lease a claim returned, not
 * by a scope; claimJobs, reapExpiredLeases, releaseQuiescedActiveKeys,
 * purgeFinished, the schedule functions, the definitions catalog and intent
 * promotion act for the whole database (the
 * CLI refuses --org for reap, purge and schedules: rows below).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  adminScope,
  appendWorkflowSteps,
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  compareAndReplaySucceededJob,
  compareAndRequeueJob,
  countDeadLetteredJobs,
  requeueDeadLetteredJobs,
  completeExternalWorkflowStep,
  countWorkflowRuns,
  enqueueJob,
  enqueueOrGetActiveWorkflowRun,
  enqueueWorkflowRun,
  signal,
  findJob,
  findWorkflowRun,
  getEnqueueIntentStats,
  listConcurrencyLimits,
  listRateLimits,
  getJob,
  getQueueMetrics,
  getWorkflowRun,
  listJobAttempts,
  listJobEvents,
  listJobs,
  listWorkflowRecoveries,
  listWorkflowRuns,
  listWorkflowStepDependencies,
  listWorkflowSteps,
  noOrganizationScope,
  organizationScope,
  recordJobEnqueueIntent,
  recoverWorkflowRun,
  verifyIntegrity,
  workflow,
  workflowRunHandle,
  jobHandle,
  type QueueMetrics,
  type Scope,
} from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { FUZZ_CASES, FUZZ_FUNCTION, type FuzzFixtures } from '../harness/fuzz-cases.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const ORG_A = 'org-a';
const ORG_B = 'org-b';

/** Organization A's rows, each kind an operation can target. */
interface TenantA {
  pendingJobId: string;
  succeededJobId: string;
  deadJobId: string;
  /** A run waiting on its external step 'approve' (also its append window), holding active key 'sync:1'. */
  runId: string;
  /** A canceled run of A's, recovered once (its recovery is A's too). */
  finishedRunId: string;
  /** A durable function run of A's, started and never run: it takes signals. */
  functionRunId: string;
  allJobIds: string[];
}
let a: TenantA;

beforeAll(async () => {
  const prisma = db.prisma;
  const succeeded = await enqueueJob(prisma, { jobType: 'tenant.done', payload: {}, organizationId: ORG_A });
  const dead = await enqueueJob(prisma, { jobType: 'tenant.dead', payload: {}, organizationId: ORG_A, maxAttempts: 1 });
  await runRunnableJobs(prisma, (job) => (job.jobType === 'tenant.dead' ? { ok: false } : { ok: true, output: 'ok' }));
  const run = await enqueueOrGetActiveWorkflowRun(prisma, {
    ...workflow('tenant.flow').organization(ORG_A).job('prep', 'tenant.prep', {}).external('approve').afterSuccess('approve', ['prep']).build(),
    activeKey: 'sync:1',
  });
  await runRunnableJobs(prisma);
  const pending = await enqueueJob(prisma, {
    jobType: 'tenant.pending',
    payload: {},
    organizationId: ORG_A,
    idempotencyKey: 'tenant-key',
    concurrency: { key: 'tenant-a-slots', limit: 2 },
    rateLimit: { key: 'tenant-a-rate', limit: 2, periodMs: 60_000 },
  });
  // Organization B's and global rows live beside them: the other scopes are not empty.
  await enqueueJob(prisma, { jobType: 'tenant.pending', payload: {}, organizationId: ORG_B });
  await enqueueJob(prisma, { jobType: 'tenant.pending', payload: {} });
  await enqueueWorkflowRun(prisma, workflow('tenant.other').organization(ORG_B).external('x').build());
  await enqueueWorkflowRun(prisma, workflow('tenant.other').external('x').build());
  // A finished run of A's with one recovery, and an enqueue intent of A's that stays pending (its type has no definition).
  const finished = await enqueueWorkflowRun(prisma, workflow('tenant.finished').organization(ORG_A).external('x').build());
  await cancelWorkflowRun(prisma, { scope: organizationScope(ORG_A), workflowRunId: finished.workflowRunId });
  await recoverWorkflowRun(prisma, { scope: organizationScope(ORG_A), sourceRunId: finished.workflowRunId, requestKey: 'tenant-recover', reason: 'setup' });
  await recordJobEnqueueIntent(prisma, { jobType: 'tenant.intent', payload: {}, idempotencyKey: 'tenant-intent', organizationId: ORG_A });
  // A debounce window of A's, open for an hour: another scope's request for the same key must not join it.
  await enqueueJob(prisma, { jobType: 'tenant.window', payload: { from: 'a' }, organizationId: ORG_A, debounce: { key: 'w', windowMs: 3_600_000 } });
  const jobs = await listJobs(prisma, { scope: organizationScope(ORG_A), limit: 500 });
  const functionRun = await enqueueWorkflowRun(prisma, FUZZ_FUNCTION.run({ n: 1 }, { organizationId: ORG_A }));
  a = {
    pendingJobId: pending.jobId,
    succeededJobId: succeeded.jobId,
    deadJobId: dead.jobId,
    runId: run.workflowRunId,
    finishedRunId: finished.workflowRunId,
    functionRunId: functionRun.workflowRunId,
    allJobIds: jobs.items.map((j) => j.id),
  };
  expect(a.allJobIds).toHaveLength(5);
  expect((await getWorkflowRun(prisma, { scope: organizationScope(ORG_A), workflowRunId: a.runId })).status).toBe('WAITING_FOR_EXTERNAL');
});

/** Every row of every runledger table, hashed per table: any insert, update or delete shows. */
async function snapshot(): Promise<Record<string, string>> {
  const tables = await db.prisma.$queryRaw<{ name: string }[]>`
    SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = 'runledger' AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations' ORDER BY table_name`;
  const selects = tables.map(({ name }) => `(SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM runledger."${name}" t) AS "${name}"`);
  const [row] = await db.prisma.$queryRawUnsafe<Record<string, string>[]>(`SELECT ${selects.join(', ')}`);
  return row!;
}

type Outcome = { code: string } | { check: (value: unknown) => void };
interface ScopedOperation {
  name: string;
  call: (scope: Scope) => Promise<unknown>;
  /** What a scope that does not own A's rows gets. */
  outside: Outcome;
  /** Reads only: what adminScope gets (it must see A's rows). */
  admin?: (value: unknown) => void;
  /** The documented outcome writes rows of its own (in the other scope): undone after, so the snapshot still compares. */
  cleanup?: (value: unknown) => Promise<void>;
}

const typesOf = (metrics: unknown) => (metrics as QueueMetrics).byType.map((t) => t.jobType);
const ids = (page: unknown) => (page as { items: { id: string }[] }).items.map((item) => item.id);
const noneOfA = (value: unknown) => expect(ids(value).filter((id) => a.allJobIds.includes(id))).toEqual([]);

const OPERATIONS: ScopedOperation[] = [
  // Job reads.
  {
    name: 'getJob',
    call: (scope) => getJob(db.prisma, { scope, jobId: a.pendingJobId }),
    outside: { code: 'job.not_found' },
    admin: (job) => expect(job).toMatchObject({ id: a.pendingJobId }),
  },
  {
    name: 'findJob',
    call: (scope) => findJob(db.prisma, { scope, jobId: a.pendingJobId }),
    outside: { check: (job) => expect(job).toBeNull() },
    admin: (job) => expect(job).not.toBeNull(),
  },
  {
    name: 'listJobs',
    call: (scope) => listJobs(db.prisma, { scope, limit: 500 }),
    outside: { check: noneOfA },
    admin: (page) => expect(ids(page)).toEqual(expect.arrayContaining(a.allJobIds)),
  },
  {
    name: 'listJobEvents',
    call: (scope) => listJobEvents(db.prisma, { scope, jobId: a.pendingJobId }),
    outside: { code: 'job.not_found' },
    admin: (page) => expect(ids(page).length).toBeGreaterThan(0),
  },
  {
    name: 'listJobAttempts',
    call: (scope) => listJobAttempts(db.prisma, { scope, jobId: a.succeededJobId }),
    outside: { code: 'job.not_found' },
    admin: (page) => expect((page as { items: { outcome: string }[] }).items.map((i) => i.outcome)).toEqual(['SUCCEEDED']),
  },
  // Counts: only the scope's own rows (A's types are its own: tenant.done and tenant.dead run nowhere else).
  {
    name: 'getQueueMetrics',
    call: (scope) => getQueueMetrics(db.prisma, { scope }),
    outside: {
      check: (m) => expect([typesOf(m).filter((t) => t === 'tenant.done' || t === 'tenant.dead'), (m as QueueMetrics).deadLetteredLast24h]).toEqual([[], 0]),
    },
    admin: (m) => expect([typesOf(m), (m as QueueMetrics).deadLetteredLast24h]).toEqual([expect.arrayContaining(['tenant.done', 'tenant.dead']), 1]),
  },
  // A's concurrency key: listed only in A's scope (and the admin's), its counts A's own.
  {
    name: 'listConcurrencyLimits',
    call: (scope) => listConcurrencyLimits(db.prisma, { scope, limit: 500 }),
    outside: { check: (page) => expect((page as { items: { key: string }[] }).items.map((i) => i.key)).not.toContain('tenant-a-slots') },
    admin: (page) =>
      expect((page as { items: { key: string; waiting: number }[] }).items).toContainEqual(expect.objectContaining({ key: 'tenant-a-slots', waiting: 1 })),
  },
  // A's rate key, the same way.
  {
    name: 'listRateLimits',
    call: (scope) => listRateLimits(db.prisma, { scope, limit: 500 }),
    outside: { check: (page) => expect((page as { items: { key: string }[] }).items.map((i) => i.key)).not.toContain('tenant-a-rate') },
    admin: (page) =>
      expect((page as { items: { key: string; waiting: number }[] }).items).toContainEqual(expect.objectContaining({ key: 'tenant-a-rate', waiting: 1 })),
  },
  {
    name: 'getEnqueueIntentStats',
    call: (scope) => getEnqueueIntentStats(db.prisma, { scope }),
    outside: { check: (stats) => expect(stats).toMatchObject({ pending: 0, conflicts: 0 }) },
    admin: (stats) => expect(stats).toMatchObject({ pending: 1 }),
  },
  // Run reads.
  {
    name: 'getWorkflowRun',
    call: (scope) => getWorkflowRun(db.prisma, { scope, workflowRunId: a.runId }),
    outside: { code: 'workflow.run_not_found' },
    admin: (run) => expect(run).toMatchObject({ id: a.runId }),
  },
  {
    name: 'findWorkflowRun',
    call: (scope) => findWorkflowRun(db.prisma, { scope, workflowRunId: a.runId }),
    outside: { check: (run) => expect(run).toBeNull() },
    admin: (run) => expect(run).not.toBeNull(),
  },
  {
    name: 'listWorkflowRuns',
    call: (scope) => listWorkflowRuns(db.prisma, { scope, limit: 500 }),
    outside: { check: (page) => expect(ids(page)).not.toContain(a.runId) },
    admin: (page) => expect(ids(page)).toContain(a.runId),
  },
  {
    // Runs waiting on a person: every scope has some (B's and the global 'tenant.other'), none of them A's.
    name: 'listWorkflowRuns#waitingForExternal',
    call: (scope) => listWorkflowRuns(db.prisma, { scope, waitingForExternal: true, limit: 500 }),
    outside: { check: (page) => expect(ids(page)).not.toContain(a.runId) },
    admin: (page) => expect(ids(page)).toContain(a.runId),
  },
  {
    name: 'countWorkflowRuns',
    call: (scope) => countWorkflowRuns(db.prisma, { scope, workflowType: 'tenant.flow' }),
    outside: { check: (n) => expect(n).toBe(0) },
    admin: (n) => expect(n).toBe(1),
  },
  {
    name: 'listWorkflowSteps',
    call: (scope) => listWorkflowSteps(db.prisma, { scope, workflowRunId: a.runId }),
    outside: { code: 'workflow.run_not_found' },
    admin: (page) => expect(ids(page)).toHaveLength(2),
  },
  {
    name: 'listWorkflowStepDependencies',
    call: (scope) => listWorkflowStepDependencies(db.prisma, { scope, workflowRunId: a.runId }),
    outside: { code: 'workflow.run_not_found' },
    admin: (page) => expect((page as { items: unknown[] }).items).toHaveLength(1),
  },
  {
    name: 'listWorkflowRecoveries',
    call: (scope) => listWorkflowRecoveries(db.prisma, { scope, runId: a.finishedRunId }),
    outside: { code: 'workflow.run_not_found' },
    admin: (page) => expect((page as { items: { sourceRunId: string }[] }).items.map((r) => r.sourceRunId)).toEqual([a.finishedRunId]),
  },
  {
    name: 'workflowRunHandle',
    call: (scope) => workflowRunHandle(db.prisma, scope, a.runId).getStatus(),
    outside: { code: 'workflow.run_not_found' },
    admin: (status) => expect(status).toBe('WAITING_FOR_EXTERNAL'),
  },
  {
    name: 'jobHandle',
    // The handle checks its input when it is made (a throw), not at its first read.
    call: async (scope) => jobHandle(db.prisma, { scope, jobId: a.succeededJobId }).getResult({ timeoutMs: 1_000 }),
    outside: { code: 'job.not_found' },
    admin: (output) => expect(output).toBe('ok'),
  },
  {
    name: 'verifyIntegrity',
    call: (scope) => verifyIntegrity(db.prisma, { scope, workflowRunIds: [a.runId] }),
    outside: { check: (report) => expect(report).toMatchObject({ clean: true, checked: { runs: 0, jobs: 0 } }) },
    admin: (report) => expect(report).toMatchObject({ clean: true, checked: { runs: 1 } }),
  },
  // Writes: refused as not found, nothing written.
  { name: 'cancelJob', call: (scope) => cancelJob(db.prisma, { scope, jobId: a.pendingJobId }), outside: { code: 'job.not_found' } },
  { name: 'cancelWorkflowRun', call: (scope) => cancelWorkflowRun(db.prisma, { scope, workflowRunId: a.runId }), outside: { code: 'workflow.run_not_found' } },
  {
    name: 'completeExternalWorkflowStep',
    call: (scope) => completeExternalWorkflowStep(db.prisma, { scope, workflowRunId: a.runId, stepKey: 'approve', outcome: { status: 'succeeded' } }),
    outside: { code: 'workflow.external_step_not_found' },
  },
  {
    name: 'signal',
    call: (scope) => signal(db.prisma, a.functionRunId, 'approve', { by: 'outsider' }, { scope }),
    outside: { code: 'workflow.run_not_found' },
  },
  {
    name: 'appendWorkflowSteps',
    call: (scope) =>
      appendWorkflowSteps(db.prisma, { scope, workflowRunId: a.runId, mutationKey: 'm', window: 'approve', steps: [{ key: 'late', kind: 'external' }] }),
    outside: { code: 'workflow.run_not_found' },
  },
  {
    name: 'recoverWorkflowRun',
    call: (scope) => recoverWorkflowRun(db.prisma, { scope, sourceRunId: a.finishedRunId, requestKey: 'outside-recover', reason: 'r' }),
    outside: { code: 'workflow.run_not_found' },
  },
  {
    name: 'compareAndReplaySucceededJob',
    call: (scope) =>
      compareAndReplaySucceededJob(db.prisma, { scope, sourceJobId: a.succeededJobId, expectedRunNumber: 1, replayRequestKey: 'k', reason: 'r' }),
    outside: { check: (result) => expect(result).toEqual({ kind: 'not_found' }) },
  },
  {
    name: 'compareAndRequeueJob',
    call: (scope) =>
      compareAndRequeueJob(db.prisma, {
        scope,
        jobId: a.deadJobId,
        expectedStatus: 'DEAD_LETTERED',
        expectedRunNumber: 1,
        statePolicy: 'reset_progress_and_checkpoint',
      }),
    outside: { check: (result) => expect(result).toEqual({ kind: 'not_found' }) },
  },
  {
    name: 'countDeadLetteredJobs',
    call: (scope) => countDeadLetteredJobs(db.prisma, { scope, filter: { jobType: 'tenant.dead' } }),
    outside: { check: (count) => expect(count).toEqual({ count: 0, more: false }) },
    admin: (count) => expect(count).toEqual({ count: 1, more: false }),
  },
  {
    name: 'requeueDeadLetteredJobs',
    call: (scope) => requeueDeadLetteredJobs(db.prisma, { scope, filter: { jobType: 'tenant.dead' }, limit: 10, reason: 'tenant probe' }),
    outside: { check: (result) => expect(result).toMatchObject({ jobIds: [], more: false }) },
  },
  // Debounce and throttle keys are per organization: another scope's request opens its own window.
  {
    name: 'enqueueJob#debounce',
    call: (scope) =>
      enqueueJob(db.prisma, {
        jobType: 'tenant.window',
        payload: { from: 'elsewhere' },
        organizationId: scope.kind === 'organization' ? scope.organizationId : null,
        debounce: { key: 'w', windowMs: 3_600_000 },
      }),
    outside: { check: (result) => expect(result).toMatchObject({ disposition: 'inserted' }) },
    cleanup: async (result) => {
      const jobId = (result as { jobId: string }).jobId;
      expect(a.allJobIds).not.toContain(jobId);
      // Its window goes with it (the job_queue_delete_windows trigger).
      await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
    },
  },
  // Keys are claimed per scope: A's claim of 'sync:1' neither blocks nor is seen by another scope's enqueue.
  {
    name: 'enqueueOrGetActiveWorkflowRun',
    call: (scope) =>
      enqueueOrGetActiveWorkflowRun(db.prisma, {
        ...workflow('tenant.flow-elsewhere')
          .organization(scope.kind === 'organization' ? scope.organizationId : null)
          .external('x')
          .build(),
        activeKey: 'sync:1',
      }),
    outside: { check: (outcome) => expect(outcome).toMatchObject({ outcome: 'inserted' }) },
    cleanup: async (outcome) => {
      const runId = (outcome as { workflowRunId: string }).workflowRunId;
      expect(runId).not.toBe(a.runId);
      await db.prisma.$executeRaw`DELETE FROM runledger.workflow_runs WHERE id = ${runId}::uuid`;
    },
  },
];

/** The CLI's scoped commands: `--org org-b` and `--without-org` stand for the two outside scopes. */
interface CliOperation {
  name: string;
  args: () => string[];
  outside: (result: { code: number; stdout: string; stderr: string }) => void;
}
const notFound = (r: { code: number }) => expect(r.code).toBe(3);
const CLI_OPERATIONS: CliOperation[] = [
  { name: 'runs show', args: () => ['runs', 'show', a.runId], outside: notFound },
  { name: 'runs cancel', args: () => ['runs', 'cancel', a.runId], outside: notFound },
  {
    name: 'runs list',
    args: () => ['--json', 'runs', 'list', '--limit', '500'],
    outside: (r) => expect(r.code === 0 && !r.stdout.includes(a.runId)).toBe(true),
  },
  {
    name: 'runs list --waiting',
    args: () => ['--json', 'runs', 'list', '--waiting', '--limit', '500'],
    outside: (r) => expect(r.code === 0 && !r.stdout.includes(a.runId) && r.stdout.includes('"waitingForExternal": true')).toBe(true),
  },
  { name: 'runs recover', args: () => ['runs', 'recover', a.finishedRunId, '--request-key', 'k', '--reason', 'r'], outside: notFound },
  {
    name: 'stats',
    args: () => ['--json', 'stats'],
    outside: (r) =>
      expect([r.code, (JSON.parse(r.stdout) as QueueMetrics).byType.map((t) => t.jobType).filter((t) => t === 'tenant.done' || t === 'tenant.dead')]).toEqual([
        0,
        [],
      ]),
  },
  { name: 'steps complete', args: () => ['steps', 'complete', a.runId, 'approve'], outside: notFound },
  { name: 'jobs show', args: () => ['jobs', 'show', a.pendingJobId], outside: notFound },
  { name: 'jobs cancel', args: () => ['jobs', 'cancel', a.pendingJobId], outside: notFound },
  { name: 'jobs replay', args: () => ['jobs', 'replay', a.succeededJobId, '--key', 'k', '--reason', 'r'], outside: notFound },
  { name: 'jobs requeue', args: () => ['jobs', 'requeue', a.deadJobId], outside: notFound },
  {
    name: 'jobs list',
    args: () => ['--json', 'jobs', 'list', '--limit', '500'],
    outside: (r) => expect(r.code === 0 && a.allJobIds.every((id) => !r.stdout.includes(id))).toBe(true),
  },
  {
    name: 'doctor',
    args: () => ['--json', 'doctor', '--run', a.runId],
    outside: (r) => expect([r.code, JSON.parse(r.stdout).checked]).toEqual([0, { runs: 0, jobs: 0 }]),
  },
  // Whole-database commands refuse a scope rather than pretend to honour it.
  {
    name: 'schedules list',
    args: () => ['--json', 'schedules', 'list'],
    outside: (r) => expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('cli.scope_not_supported')]),
  },
  {
    name: 'purge',
    args: () => ['--json', 'purge', '--older-than', '1d', '--dry-run'],
    outside: (r) => expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('cli.scope_not_supported')]),
  },
  {
    name: 'definitions list',
    args: () => ['--json', 'definitions', 'list'],
    outside: (r) => expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('cli.scope_not_supported')]),
  },
  { name: 'reap', args: () => ['--json', 'reap'], outside: (r) => expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('cli.scope_not_supported')]) },
  // A's concurrency key is listed only in A's scope; a key's limit binds every organization, so set refuses a scope.
  {
    name: 'limits list',
    args: () => ['--json', 'limits', 'list', '--limit', '500'],
    outside: (r) => expect([r.code, r.stdout.includes('tenant-a-slots')]).toEqual([0, false]),
  },
  {
    name: 'limits set',
    args: () => ['--json', 'limits', 'set', '--key', 'tenant-a-slots', '--limit', '9'],
    outside: (r) => expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('cli.scope_not_supported')]),
  },
  {
    name: 'limits rate list',
    args: () => ['--json', 'limits', 'rate', 'list', '--limit', '500'],
    outside: (r) => expect([r.code, r.stdout.includes('tenant-a-rate')]).toEqual([0, false]),
  },
  {
    name: 'limits rate set',
    args: () => ['--json', 'limits', 'rate', 'set', '--key', 'tenant-a-rate', '--limit', '9', '--period-ms', '1000'],
    outside: (r) => expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('cli.scope_not_supported')]),
  },
];

const OUTSIDE_SCOPES: [string, () => Scope, string[]][] = [
  ['organization B', () => organizationScope(ORG_B), ['--org', ORG_B]],
  ['the global scope', () => noOrganizationScope(), ['--without-org']],
];

async function expectOutcome(promise: Promise<unknown>, outcome: Outcome): Promise<unknown> {
  if ('code' in outcome) {
    await expect(promise).rejects.toMatchObject({ code: outcome.code });
    return undefined;
  }
  const value = await promise;
  outcome.check(value);
  return value;
}

describe('tenant isolation matrix', () => {
  for (const [scopeName, scope, cliFlags] of OUTSIDE_SCOPES) {
    for (const op of OPERATIONS) {
      it(`${op.name} from ${scopeName} does not reach organization A's rows and changes nothing of them`, async () => {
        const before = await snapshot();
        const value = await expectOutcome(op.call(scope()), op.outside);
        if (op.cleanup) await op.cleanup(value);
        expect(await snapshot()).toEqual(before);
      });
    }
    for (const op of CLI_OPERATIONS) {
      it(`runledger ${op.name} ${cliFlags.join(' ')} does not reach organization A's rows and changes nothing`, async () => {
        const before = await snapshot();
        op.outside(await runCli(db.url, ...cliFlags, ...op.args()));
        expect(await snapshot()).toEqual(before);
      });
    }
  }

  for (const op of OPERATIONS.filter((o) => o.admin)) {
    it(`${op.name} with adminScope sees organization A's rows (and organization A's own scope does too)`, async () => {
      op.admin!(await op.call(adminScope()));
      op.admin!(await op.call(organizationScope(ORG_A)));
    });
  }

  it('has a row for every public function that takes a scope (found from the fuzz table, which covers every export)', () => {
    const placeholder = new Proxy(
      {},
      { get: (_t, key) => (key === 'lease' ? { jobId: 'j', runNumber: 1, attempt: 1, workerId: 'w' } : 'placeholder') },
    ) as FuzzFixtures;
    const takesScope = (value: unknown, depth = 0): boolean =>
      depth < 4 &&
      value !== null &&
      typeof value === 'object' &&
      (['admin', 'organization', 'no_organization'].includes((value as { kind?: unknown }).kind as string) ||
        Object.values(value).some((child) => takesScope(child, depth + 1)));
    const scoped = Object.entries(FUZZ_CASES)
      .filter(([, fuzzCase]) => takesScope(fuzzCase.args(placeholder)))
      .map(([name]) => name.split('#')[0]!);
    expect(scoped.length).toBeGreaterThan(10);
    const rows = OPERATIONS.map((op) => op.name);
    expect(
      [...new Set(scoped)].filter((name) => !rows.includes(name)),
      'scoped functions without a row in OPERATIONS',
    ).toEqual([]);
  });
});

/**
 * An empty scope is no scope: a blank organization (what `--org "$ORG"` or
 * `organizationScope(user.orgId)` gives when the variable is unset) is refused
 * as invalid input by every scoped operation and CLI command, never read as
 * admin scope, and changes nothing.
 */
describe('a blank organization is refused, never admin scope', () => {
  const BLANKS: [string, string][] = [
    ['empty', ''],
    ['blank', '  '],
  ];

  it.each(BLANKS)('organizationScope refuses an %s organization id, naming the field', (_name, blank) => {
    expect(() => organizationScope(blank)).toThrow(expect.objectContaining({ code: 'scope.invalid_input', category: 'validation', field: 'organizationId' }));
  });

  for (const [blankName, blank] of BLANKS) {
    for (const op of OPERATIONS) {
      it(`${op.name} with an ${blankName} organization scope is refused as invalid input and changes nothing`, async () => {
        const before = await snapshot();
        // Built by hand, as a host's own code might: organizationScope() would throw before the call.
        const error = await op.call({ kind: 'organization', organizationId: blank }).then(
          (value) => ({ resolved: value }),
          (e: unknown) => e,
        );
        expect(error).toMatchObject({ category: 'validation', field: expect.stringMatching(/organizationId$/) });
        expect(await snapshot()).toEqual(before);
      });
    }
    const commands: [string, () => string[]][] = [
      ...CLI_OPERATIONS.map((op): [string, () => string[]] => [op.name, op.args]),
      // Commands that take no scope refuse it too, rather than ignore it.
      ['migrate', () => ['migrate']],
      ['worker', () => ['worker', '--handlers', 'nowhere.js']],
    ];
    it.each(commands)(`runledger --org <${blankName}> %s exits 2 naming --org, prints nothing, and changes nothing`, async (_name, argsOf) => {
      const args = argsOf();
      const before = await snapshot();
      const result = await runCli(db.url, '--json', '--org', blank, ...args);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(JSON.parse(result.stderr)).toMatchObject({ code: 'cli.blank_organization', category: 'validation', details: { field: '--org' } });
      expect(await snapshot()).toEqual(before);
      // And in human mode: one line on stderr, still nothing of anyone's on stdout.
      const human = await runCli(db.url, '--org', blank, ...args.filter((arg) => arg !== '--json'));
      expect([human.code, human.stdout, human.stderr]).toEqual([2, '', '--org must name an organization; it is empty or blank.\n']);
    });
  }
});

describe('scoped writes inside scope still work (the matrix is not vacuous)', () => {
  it("organization A's own scope cancels its pending job", async () => {
    await expect(cancelJob(db.prisma, { scope: organizationScope(ORG_A), jobId: a.pendingJobId })).resolves.toMatchObject({ status: 'CANCELED' });
    // claimJobs never hands out a canceled job, whatever the organization.
    expect((await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['tenant.pending'], limit: 10, leaseSeconds: 30 })).map((j) => j.jobId)).not.toContain(
      a.pendingJobId,
    );
  });
});
