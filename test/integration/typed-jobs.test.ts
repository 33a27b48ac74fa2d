/**
 * Definitions as typed handles, run for real: a job defined with a zod 3
 * schema and one defined with valibot are enqueued through their definitions,
 * claimed by a worker and their payloads parsed by their own libraries; a
 * definition's retry policy and timeout reach the job row and the failure
 * path; an enqueue's own settings win over the definition's.
 */
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z as z3 } from 'zod3';
import { z } from 'zod';
import { claimJobs, enqueueJob, enqueueJobs, failJob, getJob, noOrganizationScope, workflow, enqueueWorkflowRun, listWorkflowSteps } from '../../src/index.js';
import { defineJob } from '../../src/worker/index.js';
import { latch, nextEvent } from '../fixtures/worker-support/latches.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

describe('typed job definitions', () => {
  it('runs a job defined with a zod 3 schema: enqueued by definition, claimed, its payload parsed by zod 3', async () => {
    const seen = latch<unknown>();
    const def = defineJob('typed.zod3', z3.object({ id: z3.string(), count: z3.string().transform(Number) }), (payload) => {
      seen.open(payload);
      return { doubled: payload.count * 2 };
    });
    const worker = await startWorker({ handlers: [def] });
    const done = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, def, { id: 'a', count: '21' });
    await done;
    expect(await seen.promise).toEqual({ id: 'a', count: 21 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', output: { doubled: 42 } });
  });

  it('runs a job defined with a valibot schema and dead-letters a payload valibot refuses, naming the field', async () => {
    const seen = latch<unknown>();
    const def = defineJob(
      'typed.valibot',
      v.object({
        name: v.pipe(
          v.string(),
          v.transform((s) => s.toUpperCase()),
        ),
      }),
      (payload) => {
        seen.open(payload);
        return payload.name;
      },
    );
    const worker = await startWorker({ handlers: [def] });
    const done = nextEvent(worker, 'job:success');
    const { jobId } = await enqueueJob(db.prisma, def, { name: 'ada' });
    await done;
    expect(await seen.promise).toEqual({ name: 'ADA' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).output).toBe('ADA');

    const failed = nextEvent(worker, 'job:failure');
    // By name, so the compiler lets the wrong payload through; valibot refuses it when claimed.
    const bad = await enqueueJob(db.prisma, { jobType: 'typed.valibot', payload: { name: 7 } });
    expect(await failed).toMatchObject({ code: 'job.payload_invalid', status: 'DEAD_LETTERED' });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: bad.jobId })).lastErrorMessage).toMatch(/^Invalid payload\.name: /);
  });

  it("writes the definition's maxAttempts and timeout on the job row, and the enqueue's own settings win", async () => {
    const def = defineJob('typed.settings', z.object({ n: z.number() }), () => null, { retry: { maxAttempts: 2 }, timeoutSeconds: 30 });
    const byDefinition = await enqueueJob(db.prisma, def, { n: 1 });
    const overridden = await enqueueJob(db.prisma, def, { n: 2 }, { maxAttempts: 7 });
    const byName = await enqueueJob(db.prisma, { jobType: 'typed.settings', payload: { n: 3 } });
    const [batched] = await enqueueJobs(db.prisma, def, [{ payload: { n: 4 }, timeoutSeconds: 5 }]);
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: byDefinition.jobId })).toMatchObject({ maxAttempts: 2, timeoutSeconds: 30 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: overridden.jobId })).toMatchObject({ maxAttempts: 7, timeoutSeconds: 30 });
    // By name the definition is not known: the defaults apply.
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: byName.jobId })).toMatchObject({ maxAttempts: 5, timeoutSeconds: 300 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: batched!.jobId })).toMatchObject({ maxAttempts: 2, timeoutSeconds: 5 });
  });

  it("gives a workflow step given by definition the definition's settings", async () => {
    const def = defineJob('typed.step', z.object({ n: z.number() }), () => null, { retry: { maxAttempts: 3 }, timeoutSeconds: 9 });
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('typed.wf').job('a', def, { n: 1 }).job('b', def, { n: 2 }, { maxAttempts: 1 }).build(),
    );
    const { items: steps } = await listWorkflowSteps(db.prisma, { scope: noOrganizationScope(), workflowRunId });
    expect(steps.map((s) => [s.stepKey, s.maxAttempts, s.timeoutSeconds])).toEqual([
      ['a', 3, 9],
      ['b', 1, 9],
    ]);
  });

  it("schedules a retry after the definition's backoff, not the default one", async () => {
    const def = defineJob(
      'typed.backoff',
      z.object({}),
      () => {
        throw new Error('downstream unavailable');
      },
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 120_000, maxDelayMs: 120_000 } } },
    );
    const worker = await startWorker({ handlers: [def] });
    const failed = nextEvent(worker, 'job:failure');
    const before = Date.now();
    const { jobId } = await enqueueJob(db.prisma, def, {});
    expect(await failed).toMatchObject({ status: 'PENDING', retryable: true });
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId });
    // Equal jitter: between half the ceiling and the ceiling (the default's first delay is at most 1 s).
    const delay = job.nextRunAt.getTime() - before;
    expect(delay).toBeGreaterThanOrEqual(60_000 - 5_000);
    expect(delay).toBeLessThanOrEqual(120_000 + 5_000);
  });

  it('refuses a definition whose schema is not a Standard Schema, and a bad retry policy, naming the field', () => {
    expect(() => defineJob('typed.bad', { parse: () => 1 } as never, () => null)).toThrow(
      expect.objectContaining({ code: 'worker.invalid_job_definition', field: 'schema' }),
    );
    expect(() => defineJob('typed.bad', z.object({}), () => null, { retry: { backoff: { baseDelayMs: 10, maxDelayMs: 5 } } })).toThrow(
      expect.objectContaining({ code: 'worker.invalid_job_definition', field: 'settings.retry.backoff.maxDelayMs' }),
    );
  });

  it('uses the backoff failJob is given for a job claimed without a worker', async () => {
    await enqueueJob(db.prisma, { jobType: 'typed.manual', payload: {} });
    const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['typed.manual'], limit: 1, leaseSeconds: 60 });
    const before = Date.now();
    const result = await failJob(db.prisma, {
      ...job!,
      error: { code: 'x', message: 'x' },
      retryable: true,
      backoff: { baseDelayMs: 600_000, maxDelayMs: 600_000 },
    });
    expect(result.nextRunAt!.getTime() - before).toBeGreaterThanOrEqual(300_000 - 5_000);
  });
});
