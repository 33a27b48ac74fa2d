/**
 * Durable functions (src/workflow/function-*.ts, docs/concepts/durable-functions.md) on real PostgreSQL:
 * replay returns recorded outputs without calling `fn`, a re-execution after a failed or stopped attempt
 * resumes after the recorded steps, a transactional step's host write happens once, a divergence from the
 * record dead-letters with a coded error, parallel steps are recorded in call order, a sleep holds no
 * worker slot and wakes no earlier than its time, and the ledger stays consistent throughout.
 */
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  cancelWorkflowRun,
  defineFunction,
  defineJob,
  enqueueJob,
  enqueueWorkflowRun,
  enqueueWorkflowRunHandle,
  getJob,
  getWorkflowRun,
  isRunledgerError,
  listWorkflowRuns,
  listWorkflowSteps,
  noOrganizationScope,
  organizationScope,
  purgeFinished,
  verifyIntegrity,
  type FunctionContext,
  type TransactionalFunctionContext,
  type WorkflowRun,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { PrismaClient as HostPrismaClient } from '../fixtures/host-app/generated/client.js';
import { latch } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
let host: HostPrismaClient;

beforeAll(async () => {
  const pool = db.newPool({ max: 1 });
  await pool.query(await readFile(new URL('../fixtures/host-app/migration.sql', import.meta.url), 'utf8'));
  host = new HostPrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 8 }) });
});
afterAll(async () => {
  await host.$disconnect();
});

const scope = noOrganizationScope();
const input = z.object({ n: z.number() });

/** Polls the run until it is terminal (the wait, not a timing assertion). */
async function finished(workflowRunId: string, runScope = scope): Promise<WorkflowRun> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = await getWorkflowRun(db.prisma, { scope: runScope, workflowRunId });
    if (run.status === 'SUCCEEDED' || run.status === 'COMPLETED_WITH_ERRORS' || run.status === 'CANCELED') return run;
    if (Date.now() > deadline) throw new Error(`run ${workflowRunId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function functionSteps(workflowRunId: string, runScope = scope) {
  const rows = await db.prisma.$queryRaw<{ step_key: string; call_index: number; output: unknown; status: string }[]>`
    SELECT step_key, call_index, output, status::text FROM runledger.workflow_steps
     WHERE workflow_run_id = ${workflowRunId}::uuid AND execution_kind = 'FUNCTION' ORDER BY call_index`;
  const listed = (await listWorkflowSteps(db.prisma, { scope: runScope, workflowRunId })).items;
  return { rows, listed };
}

async function bodyJob(workflowRunId: string) {
  const [row] = await db.prisma.$queryRaw<{ job_id: string }[]>`
    SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$function'`;
  return getJob(db.prisma, { scope, jobId: row!.job_id });
}

describe('a durable function', () => {
  it('records each step once and replays the recorded outputs after a failed attempt', async () => {
    const calls = { a: 0, b: 0, c: 0 };
    const counting = defineFunction(
      'fn.replay',
      input,
      async (payload, ctx) => {
        const a = await ctx.step('a', () => {
          calls.a += 1;
          return { value: payload.n + 1, at: new Date('2026-01-01T00:00:00Z') };
        });
        const b = await ctx.step('b', () => {
          calls.b += 1;
          return a.value * 2;
        });
        // The first attempt fails after step b: the re-execution must not run a or b again.
        if (ctx.attempt === 1) throw new Error('cut after step 2');
        const c = await ctx.step('c', () => {
          calls.c += 1;
          return b + 1;
        });
        return { a, b, c };
      },
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [counting] });
    const handle = await enqueueWorkflowRunHandle(db.prisma, counting.run({ n: 4 }), { pollIntervalMs: 20 });
    const result = await handle.getResult({ timeoutMs: 20_000 });
    // Typed from the body: a's Date came back as JSON, on the first run and on the replay alike.
    const typed: { a: { value: number; at: string }; b: number; c: number } = result;
    expect(typed).toEqual({ a: { value: 5, at: '2026-01-01T00:00:00.000Z' }, b: 10, c: 11 });
    expect(calls).toEqual({ a: 1, b: 1, c: 1 });
    expect((await bodyJob(handle.workflowRunId)).attempt).toBe(2);

    const { rows, listed } = await functionSteps(handle.workflowRunId);
    expect(rows.map((r) => [r.step_key, r.call_index, r.status])).toEqual([
      ['a', 0, 'SUCCEEDED'],
      ['b', 1, 'SUCCEEDED'],
      ['c', 2, 'SUCCEEDED'],
    ]);
    expect(listed.map((s) => [s.stepKey, s.executionKind, s.status])).toEqual([
      ['$function', 'JOB', 'SUCCEEDED'],
      ['a', 'FUNCTION', 'SUCCEEDED'],
      ['b', 'FUNCTION', 'SUCCEEDED'],
      ['c', 'FUNCTION', 'SUCCEEDED'],
    ]);
    const runs = await listWorkflowRuns(db.prisma, { scope, workflowType: 'fn.replay' });
    expect(runs.items.map((r) => [r.id, r.status])).toEqual([[handle.workflowRunId, 'SUCCEEDED']]);
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true, violations: [] });
  });

  it('resumes after the recorded steps when its worker stops mid-step', async () => {
    const calls = { a: 0, b: 0, c: 0 };
    const inC = latch();
    const releaseC = latch();
    const fn = defineFunction('fn.stopped', input, async (payload, ctx) => {
      const a = await ctx.step('a', () => ++calls.a + payload.n);
      const b = await ctx.step('b', () => ++calls.b + a);
      const c = await ctx.step('c', async ({ signal }) => {
        calls.c += 1;
        if (calls.c === 1) {
          inC.open();
          // The first worker stops while this try runs: its signal aborts it.
          await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
        }
        await releaseC.promise;
        return b + 100;
      });
      return c;
    });
    const first = await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    await inC.promise;
    await first.stop({ drainMs: 0 });
    releaseC.open();
    await startWorker({ handlers: [fn] });
    const run = await finished(workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', result: 103 });
    expect(calls).toEqual({ a: 1, b: 1, c: 2 });
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
  });

  it("commits a transactional step's host write with its record, exactly once", async () => {
    const orderId = newId();
    let tries = 0;
    let executions = 0;
    const fn = defineFunction(
      'fn.transactional',
      z.object({ orderId: z.string() }),
      async (payload, ctx) => {
        executions += 1;
        const order = await ctx.transactionalStep(
          'create-order',
          async (tx) => {
            tries += 1;
            await tx.order.create({ data: { id: payload.orderId, customer: 'ada', total: 42 } });
            // The first try fails after its write: rolled back with it, then retried by the step.
            if (tries === 1) throw new Error('fails after the write');
            return { id: payload.orderId };
          },
          { retry: { maxAttempts: 2, baseDelayMs: 1 } },
        );
        // The attempt is cut after the step committed: the re-execution must not write again.
        if (ctx.attempt === 1) throw new Error('cut after commit');
        return order;
      },
      { transaction: host, retry: { maxAttempts: 3, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ orderId }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: { id: orderId } });
    expect({ tries, executions }).toEqual({ tries: 2, executions: 2 });
    expect(await host.order.count({ where: { id: orderId } })).toBe(1);
    // One commit wrote the order and the step's record.
    const [writers] = await db.prisma.$queryRaw<{ same: boolean }[]>`
      SELECT (SELECT xmin::text FROM public.host_orders WHERE id = ${orderId}::uuid)
           = (SELECT xmin::text FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = 'create-order') AS same`;
    expect(writers!.same).toBe(true);
  });

  it('stops a re-execution whose steps differ from the record, naming the first mismatch', async () => {
    let version = 1;
    const fn = defineFunction(
      'fn.diverges',
      input,
      async (_payload, ctx) => {
        await ctx.step('reserve', () => 'r');
        await ctx.step(version === 1 ? 'charge' : 'refund', () => 'c');
        if (ctx.attempt === 1) {
          version = 2; // the code "changes" before the re-execution
          throw new Error('cut');
        }
        return 'done';
      },
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    const job = await bodyJob(workflowRunId);
    expect(job).toMatchObject({ status: 'DEAD_LETTERED', attempt: 2, lastErrorCode: 'workflow.function_nondeterministic' });
    expect(job.lastErrorMessage).toContain('Call 1 was recorded as step charge but is now step refund');
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
  });

  it('dead-letters a body that returns before reaching a recorded step', async () => {
    let shortened = false;
    const fn = defineFunction(
      'fn.shortened',
      input,
      async (_payload, ctx) => {
        await ctx.step('a', () => 1);
        if (shortened) return 'early';
        await ctx.step('b', () => 2);
        shortened = true;
        throw new Error('cut');
      },
      { retry: { maxAttempts: 2, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    const job = await bodyJob(workflowRunId);
    expect(job.lastErrorCode).toBe('workflow.function_nondeterministic');
    expect(job.lastErrorMessage).toContain('recorded step b (call 1)');
  });

  it('records parallel steps in call order whatever order they finish in, and replays them', async () => {
    const calls: string[] = [];
    const gates = { a: latch(), b: latch(), c: latch() };
    const fn = defineFunction(
      'fn.parallel',
      input,
      async (_payload, ctx) => {
        const results = await Promise.all(
          (['a', 'b', 'c'] as const).map((name) =>
            ctx.step(name, async () => {
              calls.push(name);
              await gates[name].promise;
              return name.toUpperCase();
            }),
          ),
        );
        // A repeated name in a loop gets its occurrence number.
        for (let i = 0; i < 2; i += 1) await ctx.step('poll', () => i);
        if (ctx.attempt === 1) throw new Error('cut after the fan-out');
        return results.join('');
      },
      { retry: { maxAttempts: 2, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    // Finish in reverse call order: c, then b, then a, each recorded before the next is let go.
    const recorded = async (count: number) => {
      for (;;) {
        const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND execution_kind = 'FUNCTION'`;
        if (row!.n >= count) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    gates.c.open();
    await recorded(1);
    gates.b.open();
    await recorded(2);
    gates.a.open();
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: 'ABC' });
    expect(calls).toEqual(['a', 'b', 'c']);
    const { rows, listed } = await functionSteps(workflowRunId);
    expect(rows.map((r) => [r.step_key, r.call_index])).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
      ['poll', 3],
      ['poll#2', 4],
    ]);
    // Recorded in the order c, b, a; listed (id order) in call order.
    expect(listed.map((s) => s.stepKey)).toEqual(['$function', 'a', 'b', 'c', 'poll', 'poll#2']);
    const finishOrder = await db.prisma.$queryRaw<{ step_key: string }[]>`
      SELECT step_key FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key IN ('a', 'b', 'c') ORDER BY finished_at`;
    expect(finishOrder.map((r) => r.step_key)).toEqual(['c', 'b', 'a']);
  });

  it('runs thirty parallel steps, with and without timeouts, without a listener warning on the attempt signal', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const fn = defineFunction('fn.wide', input, async ({ n }, ctx) => {
        const values = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            ctx.step(
              `s${i}`,
              async ({ signal }) => {
                // Each step sees a live signal: the attempt's, or its own timeout's.
                expect(signal.aborted).toBe(false);
                return n + i;
              },
              i % 2 === 0 ? { timeoutMs: 10_000 } : undefined,
            ),
          ),
        );
        return values.length;
      });
      await startWorker({ handlers: [fn] });
      const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
      expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: 30 });
      // process warnings are emitted on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((name) => name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it('records parallel steps that finish together in a shared statement, in call order, and replays them', async () => {
    const WIDTH = 20;
    let runs = 0;
    const fn = defineFunction(
      'fn.fan_record',
      input,
      async ({ n }, ctx) => {
        const children = await Promise.all(
          Array.from({ length: WIDTH }, (_, i) =>
            ctx.step(`child_${i}`, () => {
              runs += 1;
              return n + i;
            }),
          ),
        );
        if (ctx.attempt === 1) throw new Error('cut after the fan-out');
        return children.reduce((sum, value) => sum + value, 0);
      },
      { retry: { maxAttempts: 2, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 1 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: WIDTH + (WIDTH * (WIDTH - 1)) / 2 });
    // The second attempt replayed all twenty: none ran twice.
    expect(runs).toBe(WIDTH);
    const { rows } = await functionSteps(workflowRunId);
    expect(rows.map((r) => [r.step_key, r.call_index, r.output])).toEqual(Array.from({ length: WIDTH }, (_, i) => [`child_${i}`, i, 1 + i]));
    // Synchronous steps all finish before any statement can return: the first is recorded at once, the other
    // nineteen wait for it and share the next statement (a record statement reads the clock once).
    const [clocks] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(DISTINCT finished_at)::int AS n FROM runledger.workflow_steps
       WHERE workflow_run_id = ${workflowRunId}::uuid AND execution_kind = 'FUNCTION'`;
    expect(clocks!.n).toBe(2);
  });

  it('sleeps without holding a worker slot and wakes no earlier than its time', async () => {
    const plainRan = latch<number>();
    const plain = defineJob('fn.plain', z.object({}), () => {
      plainRan.open(Date.now());
    });
    let sleepCalls = 0;
    const afterSleep = latch<number>();
    const fn = defineFunction('fn.sleeper', input, async (payload, ctx) => {
      const before = await ctx.step('before', () => payload.n);
      sleepCalls += 1;
      await ctx.sleep(1_500);
      afterSleep.open(Date.now());
      return ctx.step('after', () => before + 1);
    });
    await startWorker({ handlers: [fn, plain], concurrency: 1 });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 7 }));
    // Wait until the function is asleep: its job is PENDING again, due later, holding no lease.
    for (;;) {
      const [row] = await db.prisma.$queryRaw<{ sleeping: boolean }[]>`
        SELECT jq.status = 'PENDING' AND jq.run_number = 2 AND jq.next_run_at > now() AS sleeping
          FROM runledger.workflow_steps ws JOIN runledger.job_queue jq ON jq.id = ws.job_id
         WHERE ws.workflow_run_id = ${workflowRunId}::uuid AND ws.step_key = '$function'`;
      if (row!.sleeping) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const [wake] = await db.prisma.$queryRaw<{ wake_at: Date }[]>`
      SELECT (output->>'wakeAt')::timestamptz AS wake_at FROM runledger.workflow_steps
       WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$sleep'`;
    await enqueueJob(db.prisma, plain, {});
    // With one slot, the plain job runs while the function sleeps.
    const plainAt = await plainRan.promise;
    const woke = await afterSleep.promise;
    expect(plainAt).toBeLessThan(woke);
    const run = await finished(workflowRunId);
    expect(run).toMatchObject({ status: 'SUCCEEDED', result: 8 });
    expect(sleepCalls).toBe(2);
    const [after] = await db.prisma.$queryRaw<{ started_at: Date }[]>`
      SELECT started_at FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = 'after'`;
    expect(after!.started_at.getTime()).toBeGreaterThanOrEqual(wake!.wake_at.getTime());
    const steps = (await listWorkflowSteps(db.prisma, { scope, workflowRunId })).items.map((s) => s.stepKey);
    expect(steps).toEqual(['$function', 'before', '$sleep', 'after']);
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
  });

  it('is canceled while it sleeps, and purged by retention once finished', async () => {
    const fn = defineFunction('fn.canceled', input, async (_payload, ctx) => {
      await ctx.step('a', () => 1);
      await ctx.sleepUntil(new Date(Date.now() + 3_600_000));
      return 'never';
    });
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    for (;;) {
      const job = await bodyJob(workflowRunId);
      if (job.status === 'PENDING' && job.runNumber === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await cancelWorkflowRun(db.prisma, { scope, workflowRunId })).toMatchObject({ status: 'CANCELED' });
    expect(await bodyJob(workflowRunId)).toMatchObject({ status: 'CANCELED' });
    expect(await verifyIntegrity(db.prisma)).toMatchObject({ clean: true });
    await purgeFinished(db.prisma, { olderThan: new Date(Date.now() + 60_000) });
    const [left] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid`;
    expect(left!.n).toBe(0);
  });

  it("starts inside the host's transaction with an organization and an idempotency key", async () => {
    const fn = defineFunction('fn.hosted', input, async (payload, ctx) => ctx.step('double', () => payload.n * 2));
    await startWorker({ handlers: [fn] });
    const orgScope = organizationScope('org-a');
    const handle = await host.$transaction(async (tx) =>
      enqueueWorkflowRunHandle(tx, fn.run({ n: 21 }, { organizationId: 'org-a', idempotencyKey: 'k1' }), { readWith: db.prisma, pollIntervalMs: 20 }),
    );
    const again = await enqueueWorkflowRun(db.prisma, fn.run({ n: 21 }, { organizationId: 'org-a', idempotencyKey: 'k1' }));
    expect(again).toMatchObject({ workflowRunId: handle.workflowRunId, disposition: 'existing' });
    expect(await handle.getResult({ timeoutMs: 20_000 })).toBe(42);
    const { listed } = await functionSteps(handle.workflowRunId, orgScope);
    expect(listed.map((s) => [s.stepKey, s.organizationId])).toEqual([
      ['$function', 'org-a'],
      ['double', 'org-a'],
    ]);
    // Another tenant sees neither the run nor its steps.
    await expect(listWorkflowSteps(db.prisma, { scope: organizationScope('org-b'), workflowRunId: handle.workflowRunId })).rejects.toMatchObject({
      code: 'workflow.run_not_found',
    });
  });
});

describe('bad input', () => {
  it('refuses a bad definition, naming the field', () => {
    const refused = (call: () => unknown) => {
      try {
        call();
      } catch (error) {
        if (isRunledgerError(error)) return { code: error.code, field: error.details.field };
        throw error;
      }
      throw new Error('not refused');
    };
    expect(refused(() => defineFunction('  ', input, async () => 1))).toEqual({ code: 'workflow.invalid_function', field: 'name' });
    expect(refused(() => defineFunction('a@b', input, async () => 1))).toEqual({ code: 'workflow.invalid_function', field: 'name' });
    expect(refused(() => defineFunction('ok', input, async () => 1, { version: 0 }))).toEqual({
      code: 'workflow.invalid_function',
      field: 'settings.version',
    });
    expect(refused(() => defineFunction('ok', {} as typeof input, async () => 1))).toEqual({ code: 'workflow.invalid_function', field: 'schema' });
    const fn = defineFunction('ok', input, async () => 1);
    expect(refused(() => fn.run({ n: 'x' } as unknown as { n: number }))).toMatchObject({ code: 'workflow.invalid_input' });
    expect(fn.jobType).toBe('ok');
    expect(defineFunction('ok', input, async () => 1, { version: 3 }).jobType).toBe('ok@v3');
  });

  it.each([
    ['a blank step name', (ctx: Ctx) => ctx.step(' ', () => 1), 'name'],
    ['a reserved step name', (ctx: Ctx) => ctx.step('$x', () => 1), 'name'],
    ['a # in a step name', (ctx: Ctx) => ctx.step('a#2', () => 1), 'name'],
    ['an unknown step setting', (ctx: Ctx) => ctx.step('a', () => 1, { retries: 2 } as never), 'settings.retries'],
    ['a zero timeout', (ctx: Ctx) => ctx.step('a', () => 1, { timeoutMs: 0 }), 'settings.timeoutMs'],
    ['a negative sleep', (ctx: Ctx) => ctx.sleep(-1), 'ms'],
    ['a fractional sleep', (ctx: Ctx) => ctx.sleep(1.5), 'ms'],
    ['an invalid date', (ctx: Ctx) => ctx.sleepUntil(new Date(Number.NaN)), 'until'],
    [
      'a transactional step without a client',
      (ctx: Ctx) => (ctx as unknown as TransactionalFunctionContext<unknown>).transactionalStep('a', () => 1),
      'transaction',
    ],
  ])('dead-letters the body on %s with a coded error naming the field', async (label, call, field) => {
    const name = `fn.bad.${label.replaceAll(/[^a-z]+/g, '_')}`;
    let caught: unknown;
    const fn = defineFunction(name, input, async (_payload, ctx) => {
      try {
        await call(ctx as Ctx);
      } catch (error) {
        caught = error;
        throw error;
      }
    });
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'COMPLETED_WITH_ERRORS' });
    expect(caught).toMatchObject({ code: 'workflow.invalid_function_step', details: { field } });
    expect(await bodyJob(workflowRunId)).toMatchObject({ status: 'DEAD_LETTERED', attempt: 1, lastErrorCode: 'workflow.invalid_function_step' });
    const { rows } = await functionSteps(workflowRunId);
    expect(rows).toEqual([]);
  });

  it('times a step out with a coded error and retries it within the attempt', async () => {
    let tries = 0;
    const fn = defineFunction('fn.timeout', input, async (_payload, ctx) =>
      ctx.step(
        'slow',
        async ({ signal, attempt }) => {
          tries += 1;
          if (attempt === 1) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          return attempt;
        },
        { timeoutMs: 50, retry: { maxAttempts: 2, baseDelayMs: 1 } },
      ),
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({ n: 0 }));
    expect(await finished(workflowRunId)).toMatchObject({ status: 'SUCCEEDED', result: 2 });
    expect(tries).toBe(2);
    expect((await bodyJob(workflowRunId)).attempt).toBe(1);
  });
});

type Ctx = FunctionContext;
