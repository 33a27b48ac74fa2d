/**
 * verifyIntegrity on durable functions' recorded steps (src/integrity/function-checks.ts): runs the
 * engine wrote (a function with a sleep, a failed one and its forked recovery, a DAG) are clean; each
 * `function.*` invariant is then broken by hand in one place and the checker names it there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createWorker,
  defineFunction,
  enqueueWorkflowRun,
  getWorkflowRun,
  noOrganizationScope,
  recoverWorkflowRun,
  silentLogger,
  TerminalError,
  verifyIntegrity,
  workflow,
  type Worker,
} from '../../src/index.js';
import { corrupter, only } from '../harness/corruption.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const corrupt = corrupter(db);
const scope = noOrganizationScope();
let worker: Worker;
const runs = { fn: '', failed: '', recovery: '', dag: '' };

async function terminal(workflowRunId: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = await getWorkflowRun(db.prisma, { scope, workflowRunId });
    if (run.status !== 'RUNNING' && run.status !== 'WAITING_FOR_EXTERNAL') return;
    if (Date.now() > deadline) throw new Error(`run ${workflowRunId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  let failC = true;
  const ok = defineFunction('fni.ok', z.object({}), async (_input, ctx) => {
    const a = await ctx.step('a', () => 1);
    await ctx.sleep(0);
    return ctx.step('b', () => a + 1);
  });
  const failing = defineFunction(
    'fni.fail',
    z.object({}),
    async (_input, ctx) => {
      await ctx.step('a', () => 'a');
      await ctx.step('b', () => 'b');
      return ctx.step('c', () => {
        if (failC) throw new TerminalError('c failed', { code: 'test.c_failed' });
        return 'c';
      });
    },
    { retry: { maxAttempts: 1 } },
  );
  worker = createWorker({ db: db.prisma, handlers: [ok, failing], logger: silentLogger, reaper: false, listen: false, pollIntervalMs: 20 });
  await worker.start();
  runs.fn = (await enqueueWorkflowRun(db.prisma, ok.run({}))).workflowRunId;
  runs.failed = (await enqueueWorkflowRun(db.prisma, failing.run({}))).workflowRunId;
  await terminal(runs.fn);
  await terminal(runs.failed);
  failC = false;
  runs.recovery = (await recoverWorkflowRun(db.prisma, { sourceRunId: runs.failed, scope, requestKey: 'k', reason: 'r', mode: 'failed_only' })).recoveryRunId;
  await terminal(runs.recovery);
  runs.dag = (await enqueueWorkflowRun(db.prisma, workflow('fni.dag').job('x', 'fni.dag.x', {}).build())).workflowRunId;
  await runRunnableJobs(db.prisma, () => ({ ok: true, output: 1 }));
});
afterAll(async () => {
  await worker.stop({ drainMs: 0 });
});

describe('verifyIntegrity on durable functions', () => {
  it('finds nothing wrong in function runs, a forked recovery and a DAG the engine wrote', async () => {
    const steps = await stepsByKey(db.prisma, runs.recovery);
    expect(Object.keys(steps)).toEqual(['$function', 'a', 'b', 'c']);
    expect(steps.c!.status).toBe('SUCCEEDED');
    const report = await verifyIntegrity(db.prisma);
    expect(report.violations).toEqual([]);
    expect(report.checked.runs).toBe(4);
  });

  it('names a FUNCTION step without a call index, and another kind of step with one', async () => {
    const fn = await stepsByKey(db.prisma, runs.fn);
    const dag = await stepsByKey(db.prisma, runs.dag);
    await corrupt('UPDATE runledger.workflow_steps SET call_index = NULL WHERE id = $1', [fn.b!.id]);
    await corrupt('UPDATE runledger.workflow_steps SET call_index = 3 WHERE id = $1', [dag.x!.id]);
    const found = only((await verifyIntegrity(db.prisma)).violations, 'function.call_index');
    expect(found).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          workflowRunId: runs.fn,
          stepId: fn.b!.id,
          expected: { callIndex: 'set' },
          found: { executionKind: 'FUNCTION', callIndex: null },
        }),
        expect.objectContaining({ workflowRunId: runs.dag, stepId: dag.x!.id, expected: { callIndex: 'null' }, found: { executionKind: 'JOB', callIndex: 3 } }),
      ]),
    );
    expect(found).toHaveLength(2);
  });

  it('names two FUNCTION steps of a run at one call index', async () => {
    const steps = await stepsByKey(db.prisma, runs.recovery);
    await corrupt('UPDATE runledger.workflow_steps SET call_index = 1 WHERE id = $1', [steps.c!.id]);
    expect(only((await verifyIntegrity(db.prisma, { workflowRunIds: [runs.recovery] })).violations, 'function.call_index_duplicate')).toEqual([
      expect.objectContaining({ workflowRunId: runs.recovery, stepKey: 'b', found: { callIndex: 1, stepKeys: ['b', 'c'] } }),
    ]);
  });

  it('names a FUNCTION step in a run that is not a function run', async () => {
    const id = '0190a3e0-0000-7000-8000-0000000000f1';
    await corrupt(
      `INSERT INTO runledger.workflow_steps (id, workflow_run_id, step_key, execution_kind, status, released_at, finished_at, call_index)
       VALUES ($1, $2, 'planted', 'FUNCTION', 'SUCCEEDED', now(), now(), 0)`,
      [id, runs.dag],
    );
    expect(only((await verifyIntegrity(db.prisma)).violations, 'function.outside_function_run')).toEqual([
      expect.objectContaining({
        workflowRunId: runs.dag,
        stepId: id,
        expected: { resultStepKey: '$function', bodyKind: 'JOB' },
        found: { resultStepKey: null, bodyKind: null },
      }),
    ]);
  });

  it('names a FUNCTION step that is not terminal, and a sleep without its wake time', async () => {
    const fn = await stepsByKey(db.prisma, runs.fn);
    const failed = await stepsByKey(db.prisma, runs.failed);
    await corrupt(`UPDATE runledger.workflow_steps SET output = '{}' WHERE id = $1`, [fn.$sleep!.id]);
    await corrupt(`UPDATE runledger.workflow_steps SET status = 'BLOCKED', output = NULL, finished_at = NULL WHERE id = $1`, [failed.b!.id]);
    const found = only((await verifyIntegrity(db.prisma)).violations, 'function.step_state');
    expect(found.map((v) => [v.workflowRunId, v.stepKey])).toEqual(
      expect.arrayContaining([
        [runs.fn, '$sleep'],
        [runs.failed, 'b'],
      ]),
    );
    expect(found).toHaveLength(2);
    expect(found.find((v) => v.stepKey === '$sleep')).toMatchObject({ expected: { wakeAt: 'set' }, found: { wakeAt: null, status: 'SUCCEEDED' } });
    expect(found.find((v) => v.stepKey === 'b')).toMatchObject({ found: { status: 'BLOCKED' } });
  });

  it('names a FUNCTION step that finished after the body did', async () => {
    const fn = await stepsByKey(db.prisma, runs.fn);
    await corrupt(`UPDATE runledger.workflow_steps SET finished_at = finished_at + interval '1 hour' WHERE id = $1`, [fn.a!.id]);
    expect(only((await verifyIntegrity(db.prisma)).violations, 'function.step_after_body')).toEqual([
      expect.objectContaining({ workflowRunId: runs.fn, stepId: fn.a!.id, found: expect.objectContaining({ bodyStatus: 'SUCCEEDED' }) }),
    ]);
  });

  it("names a carried FUNCTION step moved off its source step's call index", async () => {
    const steps = await stepsByKey(db.prisma, runs.recovery);
    await corrupt('UPDATE runledger.workflow_steps SET call_index = 5 WHERE id = $1', [steps.a!.id]);
    expect(only((await verifyIntegrity(db.prisma)).violations, 'function.carried_call_index')).toEqual([
      expect.objectContaining({
        workflowRunId: runs.recovery,
        stepId: steps.a!.id,
        expected: { callIndex: 0 },
        found: { callIndex: 5, sourceRunId: runs.failed },
      }),
    ]);
  });
});
