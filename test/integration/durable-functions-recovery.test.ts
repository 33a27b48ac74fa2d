/**
 * Recovery of a durable function run (src/recovery/function-fork.ts) on real PostgreSQL: a failed-only
 * recovery forks the run, so the new run's body replays the steps the source recorded and runs only from
 * the failed call on; `fromCallIndex` reuses only the calls before it; a full recovery runs the body from
 * the start; lineage and the refusal rules are those of any recovery; the ledger stays consistent.
 */
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineFunction,
  enqueueWorkflowRun,
  getWorkflowRun,
  isRunledgerError,
  noOrganizationScope,
  recoverWorkflowRun,
  signal,
  TerminalError,
  verifyIntegrity,
  workflow,
  type WorkflowRun,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
const scope = noOrganizationScope();
const input = z.object({ n: z.number() });
let host: HostPrismaClient;

beforeAll(async () => {
  const pool = db.newPool({ max: 1 });
  await pool.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
  host = new HostPrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 4 }) });
});
afterAll(async () => {
  await host.$disconnect();
});

/** Polls the run until it is terminal (the wait, not a timing assertion). */
async function finished(workflowRunId: string): Promise<WorkflowRun> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = await getWorkflowRun(db.prisma, { scope, workflowRunId });
    if (run.status === 'SUCCEEDED' || run.status === 'COMPLETED_WITH_ERRORS' || run.status === 'CANCELED') return run;
    if (Date.now() > deadline) throw new Error(`run ${workflowRunId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function functionRows(workflowRunId: string) {
  return db.prisma.$queryRaw<{ step_key: string; call_index: number; output: unknown; status_reason: string | null }[]>`
    SELECT step_key, call_index, output, status_reason FROM runledger.workflow_steps
     WHERE workflow_run_id = ${workflowRunId}::uuid AND execution_kind = 'FUNCTION' ORDER BY call_index`;
}

async function countRows(table: 'workflow_runs' | 'workflow_steps' | 'workflow_recoveries'): Promise<number> {
  const [row] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM runledger.${table}`);
  return row!.n;
}

/** a -> b -> c, c failing while `state.failC`; counts the calls of each step's fn. */
function threeSteps(name: string) {
  const state = { failC: true, calls: { a: 0, b: 0, c: 0 } };
  const fn = defineFunction(
    name,
    input,
    async (payload, ctx) => {
      const a = await ctx.step('a', () => {
        state.calls.a += 1;
        return payload.n + 1;
      });
      const b = await ctx.step('b', () => {
        state.calls.b += 1;
        return a * 2;
      });
      const c = await ctx.step('c', () => {
        state.calls.c += 1;
        if (state.failC) throw new TerminalError('c failed', { code: 'test.c_failed' });
        return b + 1;
      });
      return { a, b, c };
    },
    { retry: { maxAttempts: 1 } },
  );
  return { fn, state };
}

describe('recovery of a durable function run', () => {
  it('forks a failed run: the recovery replays the recorded steps and runs only from the failed one', async () => {
    const { fn, state } = threeSteps('fnrec.fork');
    await startWorker({ handlers: [fn] });
    const { workflowRunId: source } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 4 }));
    expect(await finished(source)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    expect(state.calls).toEqual({ a: 1, b: 1, c: 1 });
    expect((await functionRows(source)).map((r) => r.step_key)).toEqual(['a', 'b']);

    state.failC = false;
    const request = { sourceRunId: source, scope, requestKey: 'fork-1', reason: 'c fixed', mode: 'failed_only' as const };
    const recovery = await recoverWorkflowRun(db.prisma, request);
    expect(recovery).toMatchObject({ outcome: 'inserted', mode: 'failed_only', status: 'RUNNING', carriedStepKeys: ['a', 'b'] });
    // The same request again is the same recovery, with the same carried steps.
    expect(await recoverWorkflowRun(db.prisma, request)).toEqual({ ...recovery, outcome: 'existing' });

    const run = await finished(recovery.recoveryRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', result: { a: 5, b: 10, c: 11 } });
    // a and b were not called again: only the failed step ran.
    expect(state.calls).toEqual({ a: 1, b: 1, c: 2 });
    expect(await functionRows(recovery.recoveryRunId)).toEqual([
      { step_key: 'a', call_index: 0, output: 5, status_reason: 'workflow.recovery_carried' },
      { step_key: 'b', call_index: 1, output: 10, status_reason: 'workflow.recovery_carried' },
      { step_key: 'c', call_index: 2, output: 11, status_reason: null },
    ]);
    expect((await getWorkflowRun(db.prisma, { scope, workflowRunId: recovery.recoveryRunId })).recoveredFrom).toMatchObject({
      sourceRunId: source,
      mode: 'failed_only',
    });
    // The source is untouched.
    expect((await functionRows(source)).map((r) => r.step_key)).toEqual(['a', 'b']);

    // A recovery is forked in turn: its carried steps are carried again, with their outputs.
    const fork2 = await recoverWorkflowRun(db.prisma, { ...request, sourceRunId: recovery.recoveryRunId, requestKey: 'fork-2', fromCallIndex: 2 });
    expect(fork2.carriedStepKeys).toEqual(['a', 'b']);
    expect(await finished(fork2.recoveryRunId)).toMatchObject({ status: 'SUCCEEDED', result: { a: 5, b: 10, c: 11 } });
    expect(state.calls).toEqual({ a: 1, b: 1, c: 3 });
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true, violations: [] });
  });

  it('forks from a call index only when asked again, reusing the calls before it', async () => {
    const { fn, state } = threeSteps('fnrec.from');
    await startWorker({ handlers: [fn] });
    const { workflowRunId: source } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    await finished(source);
    state.failC = false;
    const first = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'r1', reason: 'retry', mode: 'failed_only' });
    await finished(first.recoveryRunId);

    const runsBefore = await countRows('workflow_runs');
    const second = { sourceRunId: source, scope, requestKey: 'r2', reason: 'b was wrong', mode: 'failed_only' as const, fromCallIndex: 1 };
    const refused = await recoverWorkflowRun(db.prisma, second).catch((error: unknown) => error);
    expect(isRunledgerError(refused) && refused.code).toBe('workflow.recovery_already_recovered');
    expect(await countRows('workflow_runs')).toBe(runsBefore);

    const again = await recoverWorkflowRun(db.prisma, { ...second, again: true });
    expect(again).toMatchObject({ outcome: 'inserted', carriedStepKeys: ['a'] });
    expect(await finished(again.recoveryRunId)).toMatchObject({ status: 'SUCCEEDED', result: { a: 2, b: 4, c: 5 } });
    // Source: a, b, c (failed). First recovery: c. This one: b and c.
    expect(state.calls).toEqual({ a: 1, b: 2, c: 3 });
    expect((await functionRows(again.recoveryRunId)).map((r) => [r.step_key, r.status_reason])).toEqual([
      ['a', 'workflow.recovery_carried'],
      ['b', null],
      ['c', null],
    ]);
    // Another cut point under the same key is another request.
    const conflict = await recoverWorkflowRun(db.prisma, { ...second, again: true, fromCallIndex: 0 }).catch((error: unknown) => error);
    expect(isRunledgerError(conflict) && conflict.code).toBe('workflow.recovery_request_conflict');
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true, violations: [] });
  });

  it('re-runs the body from the start in a full recovery, and forks a succeeded run only from a call index', async () => {
    const { fn, state } = threeSteps('fnrec.full');
    state.failC = false;
    await startWorker({ handlers: [fn] });
    const { workflowRunId: source } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(source)).toMatchObject({ status: 'SUCCEEDED' });

    // Every step succeeded: a failed-only fork without a cut point would run nothing.
    const nothing = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'n', reason: 'r', mode: 'failed_only' }).catch(
      (error: unknown) => error,
    );
    expect(isRunledgerError(nothing) && nothing.code).toBe('workflow.recovery_nothing_to_rerun');

    const full = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'f', reason: 'r' });
    expect(full).toMatchObject({ mode: 'full', carriedStepKeys: [] });
    expect(await finished(full.recoveryRunId)).toMatchObject({ status: 'SUCCEEDED', result: { a: 1, b: 2, c: 3 } });
    expect(state.calls).toEqual({ a: 2, b: 2, c: 2 });

    const fork = await recoverWorkflowRun(db.prisma, {
      sourceRunId: source,
      scope,
      requestKey: 'k',
      reason: 'r',
      mode: 'failed_only',
      fromCallIndex: 2,
      again: true,
    });
    expect(fork.carriedStepKeys).toEqual(['a', 'b']);
    await finished(fork.recoveryRunId);
    expect(state.calls).toEqual({ a: 2, b: 2, c: 3 });
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true, violations: [] });
  });

  it('reuses a parallel step that succeeded beside the failed one, and runs the failed one again', async () => {
    const state = { failX: true, calls: { x: 0, y: 0 } };
    const fn = defineFunction(
      'fnrec.parallel',
      input,
      async (_payload, ctx) => {
        const [x, y] = await Promise.all([
          ctx.step('x', () => {
            state.calls.x += 1;
            if (state.failX) throw new TerminalError('x failed', { code: 'test.x_failed' });
            return 'x';
          }),
          ctx.step('y', () => {
            state.calls.y += 1;
            return 'y';
          }),
        ]);
        return `${x}${y}`;
      },
      { retry: { maxAttempts: 1 } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId: source } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(source)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    // The failed call (0) is not recorded; its sibling (1) is.
    expect((await functionRows(source)).map((r) => [r.step_key, r.call_index])).toEqual([['y', 1]]);
    state.failX = false;
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 'p', reason: 'r', mode: 'failed_only' });
    expect(await finished(recovery.recoveryRunId)).toMatchObject({ status: 'SUCCEEDED', result: 'xy' });
    expect(state.calls).toEqual({ x: 2, y: 1 });
    expect((await functionRows(recovery.recoveryRunId)).map((r) => [r.step_key, r.call_index])).toEqual([
      ['x', 0],
      ['y', 1],
    ]);
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true, violations: [] });
  });

  it('reuses a transactional step in the fork: its host write stays exactly once', async () => {
    const orderId = newId();
    let fail = true;
    let writes = 0;
    const fn = defineFunction(
      'fnrec.transactional',
      z.object({ orderId: z.string() }),
      async (payload, ctx) => {
        await ctx.transactionalStep('create-order', async (tx) => {
          writes += 1;
          await tx.order.create({ data: { id: payload.orderId, customer: 'ada', total: 42 } });
        });
        return ctx.step('notify', () => {
          if (fail) throw new TerminalError('notify failed', { code: 'test.notify' });
          return 'sent';
        });
      },
      { transaction: host, retry: { maxAttempts: 1 } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId: source } = await enqueueWorkflowRun(db.prisma, fn.run({ orderId }));
    expect(await finished(source)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    fail = false;
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 't', reason: 'r', mode: 'failed_only' });
    expect(await finished(recovery.recoveryRunId)).toMatchObject({ status: 'SUCCEEDED', result: 'sent' });
    expect(writes).toBe(1);
    expect(await host.order.count({ where: { id: orderId } })).toBe(1);
  });

  it('reuses a signal wait with the signal it took: the fork needs no new send', async () => {
    let fail = true;
    let aCalls = 0;
    const fn = defineFunction(
      'fnrec.signal',
      input,
      async (_payload, ctx) => {
        await ctx.step('a', () => {
          aCalls += 1;
          return 1;
        });
        const got = await ctx.waitForSignal('approve', { timeoutMs: 600_000 });
        return ctx.step('b', () => {
          if (fail) throw new TerminalError('b failed', { code: 'test.b' });
          return got.status === 'received' ? JSON.stringify(got.payload) : 'timed out';
        });
      },
      { retry: { maxAttempts: 1 } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId: source } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    await signal(db.prisma, source, 'approve', { by: 'ana' });
    expect(await finished(source)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    fail = false;
    const recovery = await recoverWorkflowRun(db.prisma, { sourceRunId: source, scope, requestKey: 's', reason: 'r', mode: 'failed_only' });
    const run = await finished(recovery.recoveryRunId);
    expect(run.status).toBe('SUCCEEDED');
    expect(run.result).toBe('{"by":"ana"}');
    // The wait replayed from its copied record: no signal was sent to the recovery run.
    const [sent] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.workflow_signals WHERE workflow_run_id = ${recovery.recoveryRunId}::uuid`;
    expect(sent!.n).toBe(0);
    expect(aCalls).toBe(1);
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true, violations: [] });
  });

  it('refuses a cut point for a DAG run and without failed_only, writing nothing', async () => {
    const { workflowRunId: dag } = await enqueueWorkflowRun(db.prisma, workflow('fnrec.dag').job('a', 'fnrec.dag.a', {}).build());
    await runRunnableJobs(db.prisma, () => ({ ok: false }));
    expect(await finished(dag)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    const before = [await countRows('workflow_runs'), await countRows('workflow_steps'), await countRows('workflow_recoveries')];

    const notFunction = await recoverWorkflowRun(db.prisma, {
      sourceRunId: dag,
      scope,
      requestKey: 'd',
      reason: 'r',
      mode: 'failed_only',
      fromCallIndex: 0,
    }).catch((error: unknown) => error);
    expect(notFunction).toMatchObject({ code: 'workflow.recovery_not_a_function', category: 'conflict', details: { field: 'fromCallIndex' } });

    const fullWithCut = await recoverWorkflowRun(db.prisma, { sourceRunId: dag, scope, requestKey: 'd', reason: 'r', fromCallIndex: 1 }).catch(
      (error: unknown) => error,
    );
    expect(fullWithCut).toMatchObject({ code: 'workflow.invalid_input', field: 'fromCallIndex' });
    const negative = await recoverWorkflowRun(db.prisma, {
      sourceRunId: dag,
      scope,
      requestKey: 'd',
      reason: 'r',
      mode: 'failed_only',
      fromCallIndex: -1,
    }).catch((error: unknown) => error);
    expect(negative).toMatchObject({ code: 'workflow.invalid_input', field: 'fromCallIndex' });
    expect([await countRows('workflow_runs'), await countRows('workflow_steps'), await countRows('workflow_recoveries')]).toEqual(before);
  });
});
