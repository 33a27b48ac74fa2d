/**
 * A durable function run on the rest of the ledger (real PostgreSQL): cancellation stops a running
 * body at its next step and a sleeping one for good; the body's job is refused by job replay and
 * requeue like any workflow job (a run is run again by recovery); retention purges finished function
 * runs and their recorded steps, recovery lineage whole, and keeps a sleeping one; `runs show` and the
 * dashboard's run detail list the recorded steps in call order.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  cancelWorkflowRun,
  compareAndReplaySucceededJob,
  compareAndRequeueJob,
  defineFunction,
  defineJob,
  enqueueJob,
  enqueueWorkflowRun,
  getJob,
  getWorkflowRun,
  listWorkflowSteps,
  noOrganizationScope,
  purgeFinished,
  recoverWorkflowRun,
  TerminalError,
  verifyIntegrity,
  type WorkflowRun,
} from '../../src/index.js';
import { runDetail } from '../../src/dashboard/api.js';
import { callDashboard, dashboardSession, serveDashboard } from '../harness/dashboard.js';
import { latch } from '../fixtures/worker-support/latches.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const scope = noOrganizationScope();
const input = z.object({ n: z.number() });

async function finished(workflowRunId: string): Promise<WorkflowRun> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = await getWorkflowRun(db.prisma, { scope, workflowRunId });
    if (run.status === 'SUCCEEDED' || run.status === 'COMPLETED_WITH_ERRORS' || run.status === 'CANCELED') return run;
    if (Date.now() > deadline) throw new Error(`run ${workflowRunId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function bodyJobId(workflowRunId: string): Promise<string> {
  const [row] = await db.prisma.$queryRaw<{ job_id: string }[]>`
    SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$function'`;
  return row!.job_id;
}

async function functionKeys(workflowRunId: string): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ step_key: string }[]>`
    SELECT step_key FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND execution_kind = 'FUNCTION' ORDER BY call_index`;
  return rows.map((row) => row.step_key);
}

/** Until the body's job is PENDING again after its first slice: the function sleeps. */
async function asleep(workflowRunId: string): Promise<void> {
  const jobId = await bodyJobId(workflowRunId);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const job = await getJob(db.prisma, { scope, jobId });
    if (job.status === 'PENDING' && job.runNumber === 2) return;
    if (Date.now() > deadline) throw new Error(`function ${workflowRunId} never slept`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('cancellation of a function run', () => {
  it('stops a running body: the step in flight is not recorded and no later step runs', async () => {
    const started = latch();
    const release = latch();
    const exited = latch<unknown>();
    const calls = { a: 0, b: 0 };
    const fn = defineFunction('fnl.running', input, async (_payload, ctx) => {
      try {
        await ctx.step('a', async () => {
          calls.a += 1;
          started.open();
          await release.promise;
          return 1;
        });
        await ctx.step('b', () => {
          calls.b += 1;
          return 2;
        });
        exited.open('returned');
      } catch (error) {
        exited.open(error);
        throw error;
      }
    });
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    await started.promise;
    expect(await cancelWorkflowRun(db.prisma, { scope, workflowRunId })).toMatchObject({ status: 'CANCELED' });
    release.open();
    // The finished step's record is fenced by the canceled lease, and that error ends the body.
    expect(await exited.promise).toMatchObject({ code: 'job.lease_owner_mismatch' });
    expect(calls).toEqual({ a: 1, b: 0 });
    expect(await functionKeys(workflowRunId)).toEqual([]);
    expect(await getJob(db.prisma, { scope, jobId: await bodyJobId(workflowRunId) })).toMatchObject({ status: 'CANCELED' });
    expect((await getWorkflowRun(db.prisma, { scope, workflowRunId })).status).toBe('CANCELED');
    expect(await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).toMatchObject({ clean: true });
  });

  it('stops a sleeping body for good: it never wakes, while the worker goes on claiming', async () => {
    let woke = 0;
    const fn = defineFunction('fnl.sleeping', input, async (_payload, ctx) => {
      await ctx.step('before', () => 1);
      await ctx.sleep(400);
      woke += 1;
      return ctx.step('after', () => 2);
    });
    const later = latch();
    const plain = defineJob('fnl.later', z.object({}), () => later.open());
    await startWorker({ handlers: [fn, plain], concurrency: 1 });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    await asleep(workflowRunId);
    await cancelWorkflowRun(db.prisma, { scope, workflowRunId });
    // Past the wake time, the worker claims a job enqueued after it: the canceled body was not claimed.
    const [wake] = await db.prisma.$queryRaw<{ ms: number }[]>`
      SELECT greatest(0, extract(epoch FROM ((output->>'wakeAt')::timestamptz - clock_timestamp())) * 1000)::float8 AS ms
        FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$sleep'`;
    await new Promise((resolve) => setTimeout(resolve, wake!.ms + 50));
    await enqueueJob(db.prisma, plain, {});
    await later.promise;
    expect(woke).toBe(0);
    expect(await functionKeys(workflowRunId)).toEqual(['before', '$sleep']);
    const job = await getJob(db.prisma, { scope, jobId: await bodyJobId(workflowRunId) });
    expect(job).toMatchObject({ status: 'CANCELED', runNumber: 2, attempt: 0 });
    expect(await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).toMatchObject({ clean: true });
  });
});

describe('replay of a function run', () => {
  it("refuses to replay or requeue the body's job, writing nothing: a run is run again by recovery", async () => {
    const ok = defineFunction('fnl.replayed', input, async (payload, ctx) => ctx.step('double', () => payload.n * 2));
    const failing = defineFunction(
      'fnl.requeued',
      input,
      async () => {
        throw new TerminalError('no', { code: 'test.no' });
      },
      { retry: { maxAttempts: 1 } },
    );
    await startWorker({ handlers: [ok, failing] });
    const succeeded = (await enqueueWorkflowRun(db.prisma, ok.run({ n: 2 }))).workflowRunId;
    const deadLettered = (await enqueueWorkflowRun(db.prisma, failing.run({ n: 0 }))).workflowRunId;
    await finished(succeeded);
    await finished(deadLettered);
    const [before] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;

    const replay = await compareAndReplaySucceededJob(db.prisma, {
      scope,
      sourceJobId: await bodyJobId(succeeded),
      expectedRunNumber: 1,
      replayRequestKey: 'r1',
      reason: 'again',
    }).catch((error: unknown) => error);
    expect(replay).toMatchObject({ code: 'job.workflow_requeue_not_supported', category: 'conflict' });
    const requeue = await compareAndRequeueJob(db.prisma, {
      scope,
      jobId: await bodyJobId(deadLettered),
      expectedStatus: 'DEAD_LETTERED',
      expectedRunNumber: 1,
      statePolicy: 'reset_progress_and_checkpoint',
    }).catch((error: unknown) => error);
    expect(requeue).toMatchObject({ code: 'job.workflow_requeue_not_supported', category: 'conflict' });
    const [after] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue`;
    expect(after!.n).toBe(before!.n);
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: succeeded })).toMatchObject({ status: 'SUCCEEDED', result: 4 });
  });
});

describe('retention of function runs', () => {
  it('purges finished function runs with their recorded steps and recovery lineage, and keeps a sleeping one', async () => {
    let fail = true;
    const fn = defineFunction(
      'fnl.purged',
      input,
      async (payload, ctx) => {
        const a = await ctx.step('a', () => payload.n);
        if (payload.n < 0) await ctx.sleepUntil(new Date(Date.now() + 3_600_000));
        return ctx.step('b', () => {
          if (fail) throw new TerminalError('b failed', { code: 'test.b' });
          return a + 1;
        });
      },
      { retry: { maxAttempts: 1 } },
    );
    await startWorker({ handlers: [fn] });
    const source = (await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }))).workflowRunId;
    const sleeping = (await enqueueWorkflowRun(db.prisma, fn.run({ n: -1 }))).workflowRunId;
    await finished(source);
    await asleep(sleeping);
    fail = false;
    const recovery = (await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'k', reason: 'r', mode: 'failed_only' })).recoveryRunId;
    expect(await finished(recovery)).toMatchObject({ status: 'SUCCEEDED', result: 2 });
    const succeeded = (await enqueueWorkflowRun(db.prisma, fn.run({ n: 5 }))).workflowRunId;
    expect(await finished(succeeded)).toMatchObject({ status: 'SUCCEEDED', result: 6 });

    const mine = [source, recovery, succeeded, sleeping];
    const result = await purgeFinished(db.prisma, { olderThan: new Date(Date.now() + 60_000) });
    // This file's earlier tests left finished runs too; at least these three go.
    expect(result.workflowRuns).toBeGreaterThanOrEqual(3);
    const runsLeft = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id FROM runledger.workflow_runs WHERE id = ANY(${mine}::uuid[])`;
    expect(runsLeft.map((row) => row.id)).toEqual([sleeping]);
    const left = await db.prisma.$queryRaw<{ workflow_run_id: string; n: number }[]>`
      SELECT workflow_run_id, count(*)::int AS n FROM runledger.workflow_steps WHERE workflow_run_id = ANY(${mine}::uuid[]) GROUP BY workflow_run_id`;
    // The sleeping run keeps its body and its two recorded steps (a, $sleep); the others' steps are gone.
    expect(left).toEqual([{ workflow_run_id: sleeping, n: 3 }]);
    const [lineage] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_recoveries`;
    expect(lineage!.n).toBe(0);
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
  });
});

describe('function steps in call order', () => {
  it('lists them in call order in runs show and the run detail, even when a failed call was recorded after its sibling', async () => {
    let attempt = 0;
    const fn = defineFunction(
      'fnl.order',
      input,
      async (_payload, ctx) => {
        attempt += 1;
        const [x, y] = await Promise.all([
          ctx.step('x', () => {
            if (attempt === 1) throw new Error('x fails once');
            return 'x';
          }),
          ctx.step('y', () => 'y'),
        ]);
        return `${x}${y}`;
      },
      { retry: { maxAttempts: 2, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: 'xy' });

    // By id, y (recorded by the first attempt) comes before x (recorded by the second).
    const listed = (await listWorkflowSteps(db.prisma, { scope, workflowRunId })).items;
    expect(listed.map((s) => [s.stepKey, s.callIndex])).toEqual([
      ['$function', null],
      ['y', 1],
      ['x', 0],
    ]);
    const detail = await runDetail(db.prisma, scope, workflowRunId);
    expect(detail.steps.map((s) => s.stepKey)).toEqual(['$function', 'x', 'y']);

    const shown = await runCli(db.url, 'runs', 'show', workflowRunId);
    expect(shown.code).toBe(0);
    const lines = shown.stdout.split('\n');
    const x = lines.findIndex((line) => /\bx\s+SUCCEEDED\s+function call 0\b/.test(line));
    const y = lines.findIndex((line) => /\by\s+SUCCEEDED\s+function call 1\b/.test(line));
    expect(x).toBeGreaterThan(0);
    expect(y).toBe(x + 1);
  });
});

describe('forking a function run from the CLI and the dashboard', () => {
  it('takes --from-call-index and fromCallIndex with failed-only, and refuses them otherwise, naming the field', async () => {
    const fn = defineFunction(
      'fnl.forked',
      input,
      async (_payload, ctx) => {
        await ctx.step('a', () => 1);
        await ctx.step('b', () => 2);
        return ctx.step('c', () => {
          throw new TerminalError('c failed', { code: 'test.c' });
        });
      },
      { retry: { maxAttempts: 1 } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });

    const base = ['runs', 'recover', workflowRunId, '--reason', 'r', '--json'];
    const full = await runCli(db.url, ...base, '--request-key', 'c0', '--from-call-index', '1');
    expect(full.code).not.toBe(0);
    expect(JSON.parse(full.stderr)).toMatchObject({ code: 'workflow.invalid_input', details: { field: 'fromCallIndex' } });
    const forked = await runCli(db.url, ...base, '--request-key', 'c1', '--failed-only', '--from-call-index', '1');
    expect(forked.code).toBe(0);
    const cliRecovery = JSON.parse(forked.stdout) as { recoveryRunId: string; carriedStepKeys: string[] };
    expect(cliRecovery.carriedStepKeys).toEqual(['a']);
    const shown = await runCli(db.url, 'runs', 'show', cliRecovery.recoveryRunId);
    expect(shown.stdout).toMatch(/\ba\s+SUCCEEDED\s+function call 0 \(carried\)/);

    const served = await serveDashboard(db.prisma);
    try {
      const session = await dashboardSession(served.url);
      const body = { mode: 'failed_only', reason: 'r', requestKey: 'd1', again: true };
      const bad = await callDashboard(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, { body: { ...body, fromCallIndex: 'two' }, session });
      expect([bad.status, bad.body.error.code, bad.body.error.details.field]).toEqual([400, 'workflow.invalid_input', 'fromCallIndex']);
      const ok = await callDashboard(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, { body: { ...body, fromCallIndex: 2 }, session });
      expect(ok.status).toBe(200);
      expect(ok.body.recovery).toMatchObject({ outcome: 'inserted', mode: 'failed_only', carriedStepKeys: ['a', 'b'] });
    } finally {
      await served.close();
    }
  });
});
