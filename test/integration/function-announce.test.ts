/**
 * A durable function's recorded steps reach the step-changed channel without a NOTIFY per step
 * (src/workflow/function-context.ts, announcements): steps recorded close together share one
 * notification, sent while the attempt goes on; an attempt that ends any other way than by completing
 * (a retry here) announces what it recorded at once; a completion's own notification covers the rest.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineFunction, enqueueWorkflowRun, enqueueWorkflowRunHandle, getJob, noOrganizationScope, WORKFLOW_STEP_CHANGED_CHANNEL } from '../../src/index.js';
import { latch } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);
let listener: pg.Client;
const received: string[] = [];
let heard: ((runId: string) => void) | undefined;

beforeAll(async () => {
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (message) => {
    if (message.channel !== WORKFLOW_STEP_CHANGED_CHANNEL) return;
    received.push(message.payload ?? '');
    heard?.(message.payload ?? '');
  });
  await listener.query(`LISTEN ${WORKFLOW_STEP_CHANGED_CHANNEL}`);
});
afterAll(() => listener.end());

/** Resolves at the first notification naming `runId` from now on. */
function nextNotification(runId: string): Promise<void> {
  return new Promise((resolve) => {
    heard = (id) => {
      if (id !== runId) return;
      heard = undefined;
      resolve();
    };
  });
}

async function recordedKeys(workflowRunId: string): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ step_key: string }[]>`
    SELECT step_key FROM runledger.workflow_steps
     WHERE workflow_run_id = ${workflowRunId}::uuid AND execution_kind = 'FUNCTION' ORDER BY call_index`;
  return rows.map((row) => row.step_key);
}

const STEPS = 30;

describe('step-changed notifications of a durable function', () => {
  it('announces steps recorded close together once, while the attempt goes on', async () => {
    const hold = latch();
    const reached = latch();
    const fn = defineFunction('fn.announce', z.object({}), async (_input, ctx) => {
      for (let i = 0; i < STEPS; i++) await ctx.step(`s${i}`, () => i);
      return ctx.step('held', async () => {
        reached.open();
        await hold.promise;
        return 'done';
      });
    });
    await startWorker({ handlers: [fn] });
    const handle = await enqueueWorkflowRunHandle(db.prisma, fn.run({}), { pollIntervalMs: 20 });
    const runId = handle.workflowRunId;
    const announced = nextNotification(runId);
    await reached.promise;
    // The last step is still running: only an announcement of the recorded ones can name the run now.
    await announced;
    expect(await recordedKeys(runId)).toHaveLength(STEPS);
    const whileHeld = received.filter((id) => id === runId).length;
    // One NOTIFY per recorded step would be STEPS of them; the window folds steps recorded within it.
    expect(whileHeld).toBeGreaterThanOrEqual(1);
    expect(whileHeld).toBeLessThan(STEPS);

    const completed = nextNotification(runId);
    hold.open();
    expect(await handle.getResult({ timeoutMs: 20_000 })).toBe('done');
    // The completion names the run itself (the run-status statement), with the last step recorded.
    await completed;
    expect(await recordedKeys(runId)).toEqual([...Array.from({ length: STEPS }, (_, i) => `s${i}`), 'held']);
  });

  it('announces the steps of an attempt that ends in a retry when it ends', async () => {
    const fn = defineFunction(
      'fn.announce_retry',
      z.object({}),
      async (_input, ctx) => {
        await ctx.step('a', () => 1);
        await ctx.step('b', () => 2);
        throw new Error('cut after b');
      },
      // The retry waits a minute: the run is left PENDING with its two steps recorded.
      { retry: { maxAttempts: 2, backoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 } } },
    );
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({}));
    let announced = nextNotification(workflowRunId);
    await startWorker({ handlers: [fn] });
    // Until a notification finds both steps recorded (a slow machine may announce `a` alone first).
    for (let heardOnce = 0; heardOnce < 5; heardOnce++) {
      await announced;
      announced = nextNotification(workflowRunId);
      if ((await recordedKeys(workflowRunId)).length === 2) break;
    }
    expect(await recordedKeys(workflowRunId)).toEqual(['a', 'b']);
    const [body] = await db.prisma.$queryRaw<{ job_id: string }[]>`
      SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$function'`;
    const deadline = Date.now() + 20_000;
    let job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: body!.job_id });
    // The announcement is sent before the worker fails the attempt: wait for that (polling, not a timing assertion).
    while (job.status === 'LEASED' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: body!.job_id });
    }
    expect(job.status).toBe('PENDING');
    expect(job.attempt).toBe(1);
  });
});
