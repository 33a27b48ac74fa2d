/**
 * Signals to durable functions (src/workflow/function-signal.ts, function-wait-statements.ts) on real
 * PostgreSQL: a signal sent before the wait is kept for it, one sent to a waiting function wakes it at once
 * (not at its timeout, with the worker's poll far away), a wait times out, waits take signals in order, an
 * idempotent send is delivered once, a send in a rolled-back host transaction is not delivered, scope and
 * finished runs are refused with codes, bad input writes nothing, and a wait's outcome replays.
 */
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  cancelWorkflowRun,
  defineFunction,
  defineJob,
  enqueueWorkflowRun,
  getWorkflowRun,
  isRunledgerError,
  listWorkflowSteps,
  noOrganizationScope,
  organizationScope,
  purgeFinished,
  signal,
  verifyIntegrity,
  workflow,
  type WorkflowRun,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';
import { latch, type Latch } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
let host: HostPrismaClient;

beforeAll(async () => {
  const pool = db.newPool({ max: 1 });
  await pool.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
  host = new HostPrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 4 }) });
});
afterAll(async () => {
  await host.$disconnect();
});

const scope = noOrganizationScope();
const input = z.object({ n: z.number() });
/** A timeout no test reaches: a wake before it is the signal's doing. */
const FAR = 600_000;

async function finished(workflowRunId: string, runScope = scope): Promise<WorkflowRun> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = await getWorkflowRun(db.prisma, { scope: runScope, workflowRunId });
    if (run.status === 'SUCCEEDED' || run.status === 'COMPLETED_WITH_ERRORS' || run.status === 'CANCELED') return run;
    if (Date.now() > deadline) throw new Error(`run ${workflowRunId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Polls until the run's wait `stepKey` is recorded and open (no outcome yet). */
async function waitOpen(workflowRunId: string, stepKey: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [row] = await db.prisma.$queryRaw<{ open: boolean }[]>`
      SELECT output->'outcome' IS NULL AS open FROM runledger.workflow_steps
       WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = ${stepKey}`;
    if (row?.open) return;
    if (Date.now() > deadline) throw new Error(`wait ${stepKey} never opened`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Polls until the run's body is suspended: PENDING again, due later. */
async function suspended(workflowRunId: string): Promise<Date> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [row] = await db.prisma.$queryRaw<{ status: string; next_run_at: Date; later: boolean }[]>`
      SELECT jq.status::text, jq.next_run_at, jq.next_run_at > now() + interval '60 seconds' AS later
        FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${workflowRunId}::uuid AND ws.step_key = '$function'`;
    if (row!.status === 'PENDING' && row!.later) return row!.next_run_at;
    if (Date.now() > deadline) throw new Error(`run ${workflowRunId} never suspended`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function signalRows(workflowRunId: string) {
  return db.prisma.$queryRaw<{ name: string; payload: unknown; consumed: boolean; idempotency_key: string | null }[]>`
    SELECT name, payload, consumed_by_step_id IS NOT NULL AS consumed, idempotency_key FROM runledger.workflow_signals
     WHERE workflow_run_id = ${workflowRunId}::uuid ORDER BY seq`;
}

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; field?: string }> {
  try {
    await promise;
  } catch (error) {
    if (isRunledgerError(error)) return { code: error.code, ...('field' in error ? { field: (error as { field: string }).field } : {}) };
    throw error;
  }
  throw new Error('expected a RunledgerError');
}

describe('signals to a durable function', () => {
  it('keeps a signal sent before the wait and hands it over when the function gets there', async () => {
    const fn = defineFunction('sig.early', input, async (payload, ctx) => {
      const got = await ctx.waitForSignal<{ by: string }>('approve', { timeoutMs: FAR });
      return got.status === 'received' ? { by: got.payload.by, n: payload.n } : null;
    });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 3 }));
    // No worker yet: the signal waits in the mailbox.
    const receipt = await signal(db.prisma, workflowRunId, 'approve', { by: 'ana' });
    expect(receipt).toMatchObject({ delivered: false, duplicate: false });
    expect(await signalRows(workflowRunId)).toEqual([{ name: 'approve', payload: { by: 'ana' }, consumed: false, idempotency_key: null }]);
    await startWorker({ handlers: [fn] });
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: { by: 'ana', n: 3 } });
    expect(await signalRows(workflowRunId)).toEqual([expect.objectContaining({ consumed: true })]);
    const steps = (await listWorkflowSteps(db.prisma, { scope, workflowRunId })).items;
    expect(steps.map((s) => [s.stepKey, s.status])).toEqual([
      ['$function', 'SUCCEEDED'],
      ['$signal:approve', 'SUCCEEDED'],
    ]);
    expect(steps[1]!.output).toMatchObject({ signal: 'approve', outcome: 'received', payload: { by: 'ana' }, signalId: receipt.signalId });
  });

  it('delivers a signal sent without a payload, or with null, as JSON null', async () => {
    const fn = defineFunction('sig.bare', input, async (_payload, ctx) => {
      const first = await ctx.waitForSignal<null>('ping', { timeoutMs: FAR });
      const second = await ctx.waitForSignal<null>('ping', { timeoutMs: FAR });
      return { first: first.status === 'received' ? first.payload : 'none', second: second.status === 'received' ? second.payload : 'none' };
    });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    await signal(db.prisma, workflowRunId, 'ping');
    await signal(db.prisma, workflowRunId, 'ping', null);
    expect((await signalRows(workflowRunId)).map((row) => row.payload)).toEqual([null, null]);
    await startWorker({ handlers: [fn] });
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: { first: null, second: null } });
  });

  it('wakes a waiting function at once, long before its timeout and its worker poll', async () => {
    let executions = 0;
    const fn = defineFunction('sig.wake', input, async (_payload, ctx) => {
      executions += 1;
      const got = await ctx.waitForSignal('go', { timeoutMs: FAR });
      return got;
    });
    // A poll a minute apart: only the wake's notification can bring the function back this soon.
    await startWorker({ handlers: [fn], listen: true, listenConnectionString: db.url, pollIntervalMs: 60_000 });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    const dueAt = await suspended(workflowRunId);
    expect(dueAt.getTime()).toBeGreaterThan(Date.now() + FAR / 2);
    const sentAt = Date.now();
    const receipt = await signal(db.prisma, workflowRunId, 'go', [1, 2]);
    expect(receipt).toMatchObject({ delivered: true, duplicate: false });
    const run = await finished(workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', result: { status: 'received', payload: [1, 2], signalId: receipt.signalId } });
    // Generous bound (a loaded 2-core machine); the timeout is 10 minutes away and the poll one minute.
    expect(run.finishedAt!.getTime() - sentAt).toBeLessThan(15_000);
    expect(executions).toBe(2);
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
  });

  it('wakes a function whose attempt was still running when the signal resolved its wait', async () => {
    // The wait opens, then a parallel step holds the attempt (its job LEASED) while the signal is sent:
    // the attempt's continuation must come due at once, not at the wait's timeout.
    const gate = latch();
    const fn = defineFunction('sig.leased', input, async (_payload, ctx) => {
      const [got] = await Promise.all([ctx.waitForSignal('late', { timeoutMs: FAR }), ctx.step('hold', () => gate.promise.then(() => 'held'))]);
      return got;
    });
    await startWorker({ handlers: [fn], listen: true, listenConnectionString: db.url, pollIntervalMs: 60_000 });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    await waitOpen(workflowRunId, '$signal:late');
    const [body] = await db.prisma.$queryRaw<{ status: string }[]>`
      SELECT jq.status::text FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${workflowRunId}::uuid AND ws.step_key = '$function'`;
    expect(body!.status).toBe('LEASED');
    const sentAt = Date.now();
    expect(await signal(db.prisma, workflowRunId, 'late', 'payload')).toMatchObject({ delivered: true });
    gate.open();
    const run = await finished(workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', result: { status: 'received', payload: 'payload' } });
    expect(run.finishedAt!.getTime() - sentAt).toBeLessThan(15_000);
  });

  it('never loses a signal racing a wait, whichever takes the body row first', async () => {
    // Barriers, not sleeps: a transaction holds the body's job row while the other side queues behind it.
    const lockWaiters = async (n: number) => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
        if (row!.n >= n) return;
        if (Date.now() > deadline) throw new Error(`never ${n} lock waiters`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const gates = new Map<number, Latch>([
      [1, latch()],
      [2, latch()],
    ]);
    const reached = new Map<number, Latch>([
      [1, latch()],
      [2, latch()],
    ]);
    let executions = 0;
    const fn = defineFunction('sig.race', input, async (payload, ctx) => {
      executions += 1;
      reached.get(payload.n)!.open();
      await gates.get(payload.n)!.promise;
      return ctx.waitForSignal('x', { timeoutMs: FAR });
    });
    await startWorker({ handlers: [fn], concurrency: 2, listen: true, listenConnectionString: db.url, pollIntervalMs: 60_000 });
    const bodyJob = async (workflowRunId: string) =>
      (
        await db.prisma.$queryRaw<{ job_id: string }[]>`
          SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$function'`
      )[0]!.job_id;

    // 1. The send holds the row (inside the host's open transaction); the wait queues behind it and, once
    //    the send commits, must find the signal in the mailbox (its read comes after the lock).
    const first = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    await reached.get(1)!.promise;
    const sendHolding = latch();
    const sent = host.$transaction(async (tx) => {
      await signal(tx, first.workflowRunId, 'x', 'mailbox');
      gates.get(1)!.open();
      await sendHolding.promise;
    });
    await lockWaiters(1);
    sendHolding.open();
    await sent;
    expect(await finished(first.workflowRunId)).toMatchObject({ result: { status: 'received', payload: 'mailbox' } });

    // 2. A third transaction holds the row; the wait queues first, the send second: the send must find the
    //    wait open (its read comes after the lock) and wake the body, not leave the signal in the mailbox.
    const second = await enqueueWorkflowRun(db.prisma, fn.run({ n: 2 }));
    await reached.get(2)!.promise;
    const jobId = await bodyJob(second.workflowRunId);
    const barrierHolding = latch();
    const barrier = db.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM runledger.job_queue WHERE id = ${jobId}::uuid FOR UPDATE`;
      gates.get(2)!.open();
      await barrierHolding.promise;
    });
    await lockWaiters(1);
    const sending = signal(db.prisma, second.workflowRunId, 'x', 'open wait');
    await lockWaiters(2);
    barrierHolding.open();
    await barrier;
    expect(await sending).toMatchObject({ delivered: true });
    expect(await finished(second.workflowRunId)).toMatchObject({ result: { status: 'received', payload: 'open wait' } });
    expect(executions).toBe(3);
  });

  it('times out, records the timeout and replays it; a finished run takes no more signals', async () => {
    let executions = 0;
    const fn = defineFunction(
      'sig.timeout',
      input,
      async (_payload, ctx) => {
        executions += 1;
        const got = await ctx.waitForSignal('never', { timeoutMs: 300 });
        // The first execution after the timeout fails: the re-execution replays the timeout.
        if (executions === 2) throw new Error('cut after the timeout');
        return got;
      },
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: { status: 'timed_out' } });
    expect(executions).toBe(3);
    const [wait] = await db.prisma.$queryRaw<{ output: { timeoutAt: string; outcome: string }; started_at: Date; finished_at: Date }[]>`
      SELECT output, started_at, finished_at FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$signal:never'`;
    expect(wait!.output.outcome).toBe('timeout');
    expect(wait!.finished_at.getTime()).toBeGreaterThanOrEqual(Date.parse(wait!.output.timeoutAt));
    expect(await codeOf(signal(db.prisma, workflowRunId, 'never', 1))).toEqual({ code: 'workflow.run_already_finished' });
    expect(await signalRows(workflowRunId)).toEqual([]);
  });

  it('refuses a canceled run, and retention purges a finished run with its mailbox', async () => {
    const fn = defineFunction('sig.purged', input, async (_payload, ctx) => ctx.waitForSignal('x', { timeoutMs: FAR }));
    const canceled = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    await cancelWorkflowRun(db.prisma, { scope, workflowRunId: canceled.workflowRunId });
    expect(await codeOf(signal(db.prisma, canceled.workflowRunId, 'x', 1))).toEqual({ code: 'workflow.run_already_finished' });
    const done = await enqueueWorkflowRun(db.prisma, fn.run({ n: 2 }));
    await signal(db.prisma, done.workflowRunId, 'x', 'taken');
    await signal(db.prisma, done.workflowRunId, 'x', 'left in the mailbox');
    await startWorker({ handlers: [fn] });
    expect(await finished(done.workflowRunId)).toMatchObject({ result: { status: 'received', payload: 'taken' } });
    expect(await signalRows(done.workflowRunId)).toHaveLength(2);
    await purgeFinished(db.prisma, { olderThan: new Date(Date.now() + 60_000) });
    expect(await signalRows(done.workflowRunId)).toEqual([]);
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
  });

  it('hands signals of one name to its waits in the order they were sent; a replay takes no second one', async () => {
    let executions = 0;
    const fn = defineFunction(
      'sig.order',
      input,
      async (_payload, ctx) => {
        executions += 1;
        const first = await ctx.waitForSignal<number>('item', { timeoutMs: FAR });
        // The first execution fails after taking a signal: the re-execution replays the same payload.
        if (executions === 1) throw new Error('cut after the first wait');
        const second = await ctx.waitForSignal<number>('item', { timeoutMs: FAR });
        const third = await ctx.waitForSignal<number>('item', { timeoutMs: 0 });
        return [first, second, third];
      },
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    await signal(db.prisma, workflowRunId, 'item', 1);
    await signal(db.prisma, workflowRunId, 'other', 'not mine');
    await signal(db.prisma, workflowRunId, 'item', 2);
    await startWorker({ handlers: [fn] });
    const run = await finished(workflowRunId);
    expect(run.result).toEqual([
      { status: 'received', payload: 1, signalId: expect.any(String) },
      { status: 'received', payload: 2, signalId: expect.any(String) },
      { status: 'timed_out' },
    ]);
    expect(executions).toBe(2);
    expect((await signalRows(workflowRunId)).map((s) => [s.name, s.consumed])).toEqual([
      ['item', true],
      ['other', false],
      ['item', true],
    ]);
    const keys = (await listWorkflowSteps(db.prisma, { scope, workflowRunId })).items.map((s) => s.stepKey);
    expect(keys).toEqual(['$function', '$signal:item', '$signal:item#2', '$signal:item#3']);
  });

  it('delivers a retried send with the same idempotency key once, and refuses the key for another signal', async () => {
    const fn = defineFunction('sig.idempotent', input, async (_payload, ctx) => {
      const a = await ctx.waitForSignal('pay', { timeoutMs: FAR });
      const b = await ctx.waitForSignal('pay', { timeoutMs: 0 });
      return [a.status, b.status];
    });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    const first = await signal(db.prisma, workflowRunId, 'pay', { amount: 5 }, { idempotencyKey: 'pay-1' });
    const again = await signal(db.prisma, workflowRunId, 'pay', { amount: 5 }, { idempotencyKey: 'pay-1' });
    expect(again).toEqual({ signalId: first.signalId, delivered: false, duplicate: true });
    expect(await codeOf(signal(db.prisma, workflowRunId, 'pay', { amount: 6 }, { idempotencyKey: 'pay-1' }))).toEqual({
      code: 'workflow.signal_idempotency_conflict',
    });
    expect(await signalRows(workflowRunId)).toHaveLength(1);
    await startWorker({ handlers: [fn] });
    expect(await finished(workflowRunId)).toMatchObject({ result: ['received', 'timed_out'] });
  });

  it("commits a signal with the host's transaction, and delivers none when it rolls back", async () => {
    const fn = defineFunction('sig.host-tx', input, async (_payload, ctx) => ctx.waitForSignal('approve', { timeoutMs: FAR }));
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    const rolledBackOrder = newId();
    await expect(
      host.$transaction(async (tx) => {
        await tx.order.create({ data: { id: rolledBackOrder, customer: 'ana', total: 1 } });
        await signal(tx, workflowRunId, 'approve', 'rolled back');
        throw new Error('host rolls back');
      }),
    ).rejects.toThrow('host rolls back');
    expect(await signalRows(workflowRunId)).toEqual([]);
    expect(await host.order.count({ where: { id: rolledBackOrder } })).toBe(0);
    const order = newId();
    await host.$transaction(async (tx) => {
      await tx.order.create({ data: { id: order, customer: 'ana', total: 1 } });
      await signal(tx, workflowRunId, 'approve', 'committed');
    });
    // One commit wrote the host's order and the signal.
    const [same] = await db.prisma.$queryRaw<{ same: boolean }[]>`
      SELECT (SELECT xmin::text FROM public.host_orders WHERE id = ${order}::uuid)
           = (SELECT xmin::text FROM runledger.workflow_signals WHERE workflow_run_id = ${workflowRunId}::uuid) AS same`;
    expect(same!.same).toBe(true);
    await startWorker({ handlers: [fn] });
    expect(await finished(workflowRunId)).toMatchObject({ result: { status: 'received', payload: 'committed' } });
  });

  it("refuses another tenant's run, a run that is no function, and an unknown run", async () => {
    const fn = defineFunction('sig.tenant', input, async (_payload, ctx) => ctx.waitForSignal('x', { timeoutMs: 0 }));
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }, { organizationId: 'acme' }));
    expect(await codeOf(signal(db.prisma, workflowRunId, 'x', 1, { scope: organizationScope('globex') }))).toEqual({ code: 'workflow.run_not_found' });
    expect(await codeOf(signal(db.prisma, workflowRunId, 'x', 1))).toEqual({ code: 'workflow.run_not_found' });
    expect(await signalRows(workflowRunId)).toEqual([]);
    expect(await signal(db.prisma, workflowRunId, 'x', 1, { scope: organizationScope('acme') })).toMatchObject({ duplicate: false });
    expect(await signal(db.prisma, workflowRunId, 'x', 2, { scope: adminScope() })).toMatchObject({ duplicate: false });
    const [row] = await db.prisma.$queryRaw<{ organization_id: string }[]>`
      SELECT DISTINCT organization_id FROM runledger.workflow_signals WHERE workflow_run_id = ${workflowRunId}::uuid`;
    expect(row!.organization_id).toBe('acme');

    const job = defineJob('sig.dag-step', z.object({}), () => undefined);
    const dag = await enqueueWorkflowRun(db.prisma, workflow('sig.dag').job('only', job, {}).build());
    expect(await codeOf(signal(db.prisma, dag.workflowRunId, 'x', 1))).toEqual({ code: 'workflow.signal_not_function' });
    expect(await codeOf(signal(db.prisma, newId(), 'x', 1))).toEqual({ code: 'workflow.run_not_found' });
  });

  it('refuses bad input with a code naming the field, writing nothing', async () => {
    const fn = defineFunction('sig.bad', input, async (_payload, ctx) => ctx.waitForSignal('x', { timeoutMs: 0 }));
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    const anySignal = signal as (...args: unknown[]) => Promise<unknown>;
    const cases: [unknown[], string][] = [
      [['not-a-uuid', 'x', 1], 'workflowRunId'],
      [[workflowRunId, '  ', 1], 'name'],
      [[workflowRunId, 'a#b', 1], 'name'],
      [[workflowRunId, '$x', 1], 'name'],
      [[workflowRunId, 'x'.repeat(201), 1], 'name'],
      [[workflowRunId, 'x', 'nul\u0000'], 'payload'],
      [[workflowRunId, 'x', 1, { idempotencyKey: '' }], 'options.idempotencyKey'],
      [[workflowRunId, 'x', 1, { scope: { kind: 'organization', organizationId: ' ' } }], 'options.scope'],
      [[workflowRunId, 'x', 1, { unknown: true }], 'options'],
    ];
    for (const [args, field] of cases) {
      const refused = await codeOf(anySignal(db.prisma, ...args));
      expect(refused.code, JSON.stringify(args)).toBe('workflow.invalid_signal');
      expect(refused.field, JSON.stringify(args)).toMatch(new RegExp(`^${field.replace('.', '\\.')}`));
    }
    expect(await signalRows(workflowRunId)).toEqual([]);
  });

  it('dead-letters a body whose wait has a bad timeout, naming the field', async () => {
    const fn = defineFunction('sig.bad-wait', input, async (_payload, ctx) => ctx.waitForSignal('x', { timeoutMs: -1 }));
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    const [body] = await db.prisma.$queryRaw<{ last_error_code: string; last_error_message: string }[]>`
      SELECT jq.last_error_code, jq.last_error_message FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${workflowRunId}::uuid AND ws.step_key = '$function'`;
    expect(body).toMatchObject({ last_error_code: 'workflow.invalid_function_step' });
    expect(body!.last_error_message).toContain('timeoutMs');
  });
});
