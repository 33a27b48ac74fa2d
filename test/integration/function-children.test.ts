/**
 * A durable function's child runs (`ctx.invoke`, src/workflow/function-child.ts) on real PostgreSQL: a
 * child job, DAG run and function are started once and awaited holding no worker slot (one slot runs the
 * child while the parent waits), the child's end wakes the parent at once (the fallback poll is minutes
 * away), a failed or canceled child is a coded error the body can catch, and a re-execution replays the
 * recorded child instead of starting a second one.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  cancelWorkflowRun,
  defineFunction,
  defineJob,
  enqueueWorkflowRun,
  getWorkflowRun,
  isRunledgerError,
  listWorkflowSteps,
  noOrganizationScope,
  organizationScope,
  TerminalError,
  verifyIntegrity,
  workflow,
  type WorkflowRun,
} from '../../src/index.js';
import { latch } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const scope = noOrganizationScope();
const input = z.object({ n: z.number() });

async function finished(workflowRunId: string, runScope = scope): Promise<WorkflowRun> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = await getWorkflowRun(db.prisma, { scope: runScope, workflowRunId });
    if (run.status === 'SUCCEEDED' || run.status === 'COMPLETED_WITH_ERRORS' || run.status === 'CANCELED') return run;
    if (Date.now() > deadline) throw new Error(`run ${workflowRunId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function children(parentRunId: string) {
  return db.prisma.$queryRaw<{ id: string; workflow_type: string; organization_id: string | null; status: string }[]>`
    SELECT r.id, r.workflow_type, r.organization_id, r.status::text FROM runledger.workflow_runs r
     WHERE r.parent_job_id = (SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${parentRunId}::uuid AND step_key = '$function')
     ORDER BY r.id`;
}

/** A one-slot worker that wakes on notifications and polls once a minute: a prompt wake is the child's doing. */
const quietWorker = { concurrency: 1, listen: true, listenConnectionString: '', pollIntervalMs: 60_000 };

describe('a durable function invoking a child', () => {
  it('awaits a child job, a DAG run and a function, holding no slot while they run', async () => {
    const double = defineJob('child.double', z.object({ n: z.number() }), (payload) => ({ doubled: payload.n * 2 }));
    const add = defineJob('child.add', z.object({ n: z.number() }), (payload) => ({ sum: payload.n + 1 }));
    const inner = defineFunction('child.inner', input, async (payload, ctx) => {
      const a = await ctx.step('a', () => payload.n + 100);
      return { inner: a };
    });
    let executions = 0;
    const parent = defineFunction('child.parent', input, async (payload, ctx) => {
      executions += 1;
      const job = await ctx.invoke('job', { job: double, payload: { n: payload.n } });
      const dag = await ctx.invoke(
        'dag',
        workflow('child.dag').job('first', add, { n: 1 }).job('second', double, { n: 2 }).afterSuccess('second', ['first']).resultStep('second').build(),
      );
      const fn = await ctx.invoke('fn', inner.run({ n: payload.n }));
      return { job, dag, fn };
    });
    await startWorker({ handlers: [parent, inner, double, add], ...quietWorker, listenConnectionString: db.url });
    const startedAt = Date.now();
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, parent.run({ n: 5 }, { organizationId: 'acme' }));
    const run = await finished(workflowRunId, organizationScope('acme'));
    expect(run).toMatchObject({ status: 'SUCCEEDED', result: { job: { doubled: 10 }, dag: { doubled: 4 }, fn: { inner: 105 } } });
    // One slot: each child ran while its parent was suspended. Each wake came from the child's end, not the poll.
    expect(Date.now() - startedAt).toBeLessThan(30_000);
    expect(executions).toBe(4);
    const kids = await children(workflowRunId);
    expect(kids.map((k) => [k.workflow_type, k.organization_id, k.status])).toEqual([
      ['child.double', 'acme', 'SUCCEEDED'],
      ['child.dag', 'acme', 'SUCCEEDED'],
      ['child.inner', 'acme', 'SUCCEEDED'],
    ]);
    const steps = (await listWorkflowSteps(db.prisma, { scope: organizationScope('acme'), workflowRunId })).items;
    expect(steps.map((s) => s.stepKey)).toEqual(['$function', '$child:job', '$child:dag', '$child:fn']);
    expect(steps[1]!.output).toMatchObject({ childRunId: kids[0]!.id, outcome: 'succeeded', result: { doubled: 10 } });
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
  });

  it('surfaces a failed child as a coded error the body catches, and replays it without a second child', async () => {
    const broken = defineJob('child.broken', z.object({}), () => {
      throw new TerminalError('no', { code: 'child.broke' });
    });
    let executions = 0;
    const parent = defineFunction(
      'child.catching',
      input,
      async (_payload, ctx) => {
        executions += 1;
        try {
          await ctx.invoke('broken', { job: broken, payload: {} });
          return 'unreachable';
        } catch (error) {
          // The first execution that sees the failure is cut: the re-execution replays the recorded failure.
          if (executions === 2) throw new Error('cut after the failure');
          return isRunledgerError(error) ? { code: error.code, details: error.details } : 'not coded';
        }
      },
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [parent, broken], ...quietWorker, listenConnectionString: db.url });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, parent.run({ n: 1 }));
    const run = await finished(workflowRunId);
    const kids = await children(workflowRunId);
    expect(kids).toHaveLength(1);
    expect(run).toMatchObject({
      status: 'SUCCEEDED',
      result: { code: 'workflow.child_failed', details: { stepKey: '$child:broken', childRunId: kids[0]!.id, status: 'COMPLETED_WITH_ERRORS' } },
    });
    expect(executions).toBe(3);
  });

  it('wakes the parent when its child is canceled, with workflow.child_canceled', async () => {
    const started = latch();
    const stuck = defineJob('child.stuck', z.object({}), async (_payload, ctx) => {
      started.open();
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
    });
    const parent = defineFunction('child.canceled', input, async (_payload, ctx) => {
      try {
        return await ctx.invoke('stuck', { job: stuck, payload: {} });
      } catch (error) {
        return isRunledgerError(error) ? error.code : 'not coded';
      }
    });
    await startWorker({ handlers: [parent, stuck], ...quietWorker, concurrency: 2, listenConnectionString: db.url });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, parent.run({ n: 1 }));
    await started.promise;
    const [child] = await children(workflowRunId);
    const canceledAt = Date.now();
    await cancelWorkflowRun(db.prisma, { scope, workflowRunId: child!.id });
    const run = await finished(workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', result: 'workflow.child_canceled' });
    expect(run.finishedAt!.getTime() - canceledAt).toBeLessThan(15_000);
  });

  it('refuses a child that is no run, naming the field', async () => {
    const parent = defineFunction('child.bad', input, async (_payload, ctx) => ctx.invoke('x', { nope: true } as never));
    await startWorker({ handlers: [parent] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, parent.run({ n: 1 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    const [body] = await db.prisma.$queryRaw<{ last_error_code: string }[]>`
      SELECT jq.last_error_code FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${workflowRunId}::uuid AND ws.step_key = '$function'`;
    expect(body).toEqual({ last_error_code: 'workflow.invalid_function_step' });
    expect(await children(workflowRunId)).toEqual([]);
  });
});
