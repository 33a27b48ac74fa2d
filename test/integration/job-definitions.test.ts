import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  defineJob,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  appendWorkflowSteps,
  getJob,
  isRunledgerError,
  noOrganizationScope,
  listJobDefinitions,
  listWorkflowSteps,
  setJobDefinitionEnabled,
  syncJobDefinitions,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { raceInTransactions } from '../harness/workflow-helpers.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

async function rowCount(jobType: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_definitions WHERE job_type = ${jobType}`;
  return row!.n;
}

async function jobCount(jobType: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = ${jobType}`;
  return row!.n;
}

const noop = async () => undefined;

describe('job definitions catalog', () => {
  it("writes a definition's settings and payload JSON Schema, then reports a second sync as unchanged", async () => {
    const capture = defineJob('cat.capture', z.object({ invoiceId: z.string() }), noop, {
      retry: { maxAttempts: 8, backoff: { baseDelayMs: 5_000 } },
      timeoutSeconds: 60,
      priority: 7,
    });
    expect(await syncJobDefinitions(db.prisma, [capture])).toEqual({ inserted: ['cat.capture'], updated: [], unchanged: [] });
    expect(await syncJobDefinitions(db.prisma, [capture])).toEqual({ inserted: [], updated: [], unchanged: ['cat.capture'] });
    const { items } = await listJobDefinitions(db.prisma, { limit: 500 });
    const row = items.find((item) => item.jobType === 'cat.capture')!;
    expect(row).toMatchObject({
      enabled: true,
      defaultPriority: 7,
      defaultMaxAttempts: 8,
      defaultTimeoutSeconds: 60,
      backoff: { baseDelayMs: 5_000, maxDelayMs: 3_600_000 },
    });
    expect(row.payloadSchema).toMatchObject({ type: 'object', properties: { invoiceId: { type: 'string' } } });
    expect(row.payloadSchemaHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("updates changed settings but never the operator's enabled switch", async () => {
    await syncJobDefinitions(db.prisma, [defineJob('cat.switch', z.object({}), noop, { timeoutSeconds: 10 })]);
    await setJobDefinitionEnabled(db.prisma, { jobType: 'cat.switch', enabled: false });
    const result = await syncJobDefinitions(db.prisma, [defineJob('cat.switch', z.object({}), noop, { timeoutSeconds: 20 })]);
    expect(result.updated).toEqual(['cat.switch']);
    const { items } = await listJobDefinitions(db.prisma, { limit: 500 });
    expect(items.find((item) => item.jobType === 'cat.switch')).toMatchObject({ enabled: false, defaultTimeoutSeconds: 20 });
  });

  it('survives ten concurrent syncs of the same set with one row per type', async () => {
    const definitions = ['cat.c', 'cat.a', 'cat.b'].map((type) => defineJob(type, z.object({}), noop));
    const results = await raceInTransactions(db, 10, (tx) => syncJobDefinitions(tx, definitions));
    expect(results.flatMap((r) => r.inserted).sort()).toEqual(['cat.a', 'cat.b', 'cat.c']);
    for (const type of ['cat.a', 'cat.b', 'cat.c']) expect(await rowCount(type)).toBe(1);
  });

  it('pages the catalog in job-type order', async () => {
    await syncJobDefinitions(
      db.prisma,
      ['page.b', 'page.a', 'page.c'].map((type) => defineJob(type, z.object({}), noop)),
    );
    const first = await listJobDefinitions(db.prisma, { limit: 2, cursor: 'page.' });
    expect(first.items.map((item) => item.jobType)).toEqual(['page.a', 'page.b']);
    const second = await listJobDefinitions(db.prisma, { limit: 2, cursor: first.nextCursor! });
    expect(second.items.map((item) => item.jobType)[0]).toBe('page.c');
  });

  it('refuses a duplicate or foreign definition in a sync, naming the field', async () => {
    const one = defineJob('cat.dup', z.object({}), noop);
    await expect(syncJobDefinitions(db.prisma, [one, one])).rejects.toMatchObject({ code: 'job.invalid_input', field: 'definitions.1' });
    await expect(syncJobDefinitions(db.prisma, [{ jobType: 'x' } as never])).rejects.toMatchObject({ code: 'job.invalid_input', field: 'definitions.0' });
    expect(await rowCount('cat.dup')).toBe(0);
  });

  it.each([
    ['definitions.1.priority', { priority: 1e12 }],
    ['definitions.1.maxAttempts', { maxAttempts: 0 }],
    ['definitions.1.timeoutSeconds', { timeoutSeconds: 'soon' }],
    ['definitions.1.jobType', { jobType: '' }],
    ['definitions.1.backoff.maxDelayMs', { backoff: { baseDelayMs: 10, maxDelayMs: 5 } }],
    ['definitions.1.backoff', { backoff: undefined }],
    ['definitions.1.schema', { schema: {} }],
  ])('refuses a forged definition (a spread of a real one) by its bad field, %s, before any write', async (field, forged) => {
    const good = defineJob('cat.forged_good', z.object({}), noop);
    const real = defineJob('cat.forged', z.object({}), noop);
    const error = await syncJobDefinitions(db.prisma, [good, { ...real, ...forged } as never]).catch((caught: unknown) => caught);
    expect(isRunledgerError(error, 'job.invalid_input'), String(error)).toBe(true);
    expect(error).toMatchObject({ category: 'validation', field });
    expect(await rowCount('cat.forged_good')).toBe(0);
  });

  it('reports enabling an unknown type as job.definition_not_found', async () => {
    await expect(setJobDefinitionEnabled(db.prisma, { jobType: 'cat.unknown', enabled: true })).rejects.toMatchObject({
      code: 'job.definition_not_found',
      category: 'not_found',
    });
  });

  it('is synced by a worker at start, unless syncDefinitions is false', async () => {
    await startWorker({ handlers: [defineJob('cat.worker', z.object({}), noop)], intents: false });
    expect(await rowCount('cat.worker')).toBe(1);
    await startWorker({ handlers: [defineJob('cat.worker.nosync', z.object({}), noop)], intents: false, syncDefinitions: false });
    expect(await rowCount('cat.worker.nosync')).toBe(0);
  });
});

describe('enqueue against the catalog', () => {
  it('enqueues a type without a definition by default (a host may enqueue before any worker started)', async () => {
    await enqueueJob(db.prisma, { jobType: 'gate.unknown', payload: {} });
    expect(await jobCount('gate.unknown')).toBe(1);
  });

  it('refuses a type without a definition when requireDefinition is set, writing nothing', async () => {
    const error = await enqueueJob(db.prisma, { jobType: 'gate.strict', payload: {} }, { requireDefinition: true }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'job.definition_not_found_or_disabled')).toBe(true);
    expect((error as { details: unknown }).details).toEqual({ jobTypes: ['gate.strict'] });
    expect(await jobCount('gate.strict')).toBe(0);
    await syncJobDefinitions(db.prisma, [defineJob('gate.strict', z.object({}), noop)]);
    await enqueueJob(db.prisma, { jobType: 'gate.strict', payload: {} }, { requireDefinition: true });
    expect(await jobCount('gate.strict')).toBe(1);
  });

  it('refuses a disabled type in every mode, the whole batch, and accepts it again once enabled', async () => {
    const typed = defineJob('gate.disabled', z.object({ n: z.number() }), noop);
    await syncJobDefinitions(db.prisma, [typed]);
    await setJobDefinitionEnabled(db.prisma, { jobType: 'gate.disabled', enabled: false });
    await expect(enqueueJob(db.prisma, typed, { n: 1 })).rejects.toMatchObject({ code: 'job.definition_not_found_or_disabled' });
    await expect(
      enqueueJobs(db.prisma, [
        { jobType: 'gate.other', payload: {} },
        { jobType: 'gate.disabled', payload: {}, idempotencyKey: 'k1' },
      ]),
    ).rejects.toMatchObject({ code: 'job.definition_not_found_or_disabled' });
    expect(await jobCount('gate.other')).toBe(0);
    expect(await jobCount('gate.disabled')).toBe(0);
    await setJobDefinitionEnabled(db.prisma, { jobType: 'gate.disabled', enabled: true });
    await enqueueJob(db.prisma, typed, { n: 1 });
    expect(await jobCount('gate.disabled')).toBe(1);
  });

  it('leaves a joined transaction usable after a refusal', async () => {
    await syncJobDefinitions(db.prisma, [defineJob('gate.tx', z.object({}), noop)]);
    await setJobDefinitionEnabled(db.prisma, { jobType: 'gate.tx', enabled: false });
    const jobId = await db.prisma.$transaction(async (tx) => {
      await expect(enqueueJob(tx, { jobType: 'gate.tx', payload: {} })).rejects.toMatchObject({ code: 'job.definition_not_found_or_disabled' });
      return (await enqueueJob(tx, { jobType: 'gate.tx.ok', payload: {} })).jobId;
    });
    expect((await getJob(db.prisma, { scope: adminScope(), jobId })).jobType).toBe('gate.tx.ok');
  });
});

describe('workflow steps and the catalog', () => {
  it('resolves step settings > catalog defaults > built-in defaults', async () => {
    await syncJobDefinitions(db.prisma, [defineJob('wf.cat', z.object({}), noop, { retry: { maxAttempts: 9 }, timeoutSeconds: 45, priority: 3 })]);
    const run = workflow('wf.catalog')
      .job('inherits', 'wf.cat', {})
      .job('own', 'wf.cat', {}, { priority: 11, maxAttempts: 2 })
      .job('builtin', 'wf.nocat', {})
      .build();
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, run);
    const { items } = await listWorkflowSteps(db.prisma, { scope: adminScope(), workflowRunId });
    const settings = Object.fromEntries(items.map((s) => [s.stepKey, [s.priority, s.maxAttempts, s.timeoutSeconds]]));
    expect(settings).toEqual({ inherits: [3, 9, 45], own: [11, 2, 45], builtin: [0, 5, 300] });
    const job = await getJob(db.prisma, { scope: adminScope(), jobId: items.find((s) => s.stepKey === 'inherits')!.jobId! });
    expect([job.priority, job.maxAttempts, job.timeoutSeconds]).toEqual([3, 9, 45]);
  });

  it('gives appended steps the catalog defaults too', async () => {
    await syncJobDefinitions(db.prisma, [defineJob('wf.cat.append', z.object({}), noop, { retry: { maxAttempts: 4 }, timeoutSeconds: 15, priority: 2 })]);
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('wf.catalog.append').external('gate').build());
    await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'add',
      steps: [
        { kind: 'job', key: 'later', jobType: 'wf.cat.append', payload: {} },
        { kind: 'job', key: 'now', jobType: 'wf.cat.append', payload: {}, timeoutSeconds: 99 },
      ],
      edges: [{ prerequisite: 'gate', dependent: 'later' }],
    });
    const { items } = await listWorkflowSteps(db.prisma, { scope: adminScope(), workflowRunId });
    const settings = Object.fromEntries(items.map((s) => [s.stepKey, [s.priority, s.maxAttempts, s.timeoutSeconds]]));
    expect(settings).toMatchObject({ later: [2, 4, 15], now: [2, 4, 99] });
    const job = await getJob(db.prisma, { scope: adminScope(), jobId: items.find((s) => s.stepKey === 'now')!.jobId! });
    expect([job.priority, job.maxAttempts, job.timeoutSeconds]).toEqual([2, 4, 99]);
  });

  it('keeps an idempotent workflow retry equal when the catalog changed in between', async () => {
    await syncJobDefinitions(db.prisma, [defineJob('wf.idem', z.object({}), noop, { timeoutSeconds: 30 })]);
    const run = { ...workflow('wf.idem').job('a', 'wf.idem', {}).build(), idempotencyKey: 'wf-idem-1' };
    const first = await enqueueWorkflowRun(db.prisma, run);
    await syncJobDefinitions(db.prisma, [defineJob('wf.idem', z.object({}), noop, { timeoutSeconds: 90 })]);
    const second = await enqueueWorkflowRun(db.prisma, run);
    expect(second).toMatchObject({ workflowRunId: first.workflowRunId, disposition: 'existing' });
  });
});
