/**
 * Bugs the public-API fuzzer (fuzz-public-api.test.ts) found, each pinned by
 * the smallest input that showed it: a raw TypeError instead of a coded
 * validation error, or a refusal that came after a write.
 */
import { describe, expect, it } from 'vitest';
import {
  syncJobDefinitions,
  enqueueWorkflowRuns,
  claimJobs,
  continueAfter,
  continueNow,
  createConsoleLogger,
  createDashboard,
  declareSchedules,
  findSchedule,
  defineJob,
  defineSchedule,
  getQueueMetrics,
  getEnqueueIntentStats,
  listJobAttempts,
  listJobEvents,
  listWorkflowRecoveries,
  enqueueWorkflowRun,
  listJobDefinitions,
  recordJobEnqueueIntent,
  enqueueJob,
  failJob,
  getJob,
  listJobs,
  pauseSchedule,
  purgeFinished,
  RetryableError,
  runDueSchedules,
  upsertSchedule,
  enqueueWorkflowRunHandle,
  listWorkflowRuns,
  noOrganizationScope,
  slotIdempotencyKey,
  workflow,
  workflowRunHandle,
  releaseJob,
  countWorkflowRuns,
  verifyIntegrity,
  enqueueJobs,
  type StandardSchemaV1,
} from '../../src/index.js';
import { z } from 'zod';
import { describeFailure } from '../../src/job/errors.js';
import { createTestDatabase, startPostgresServer } from '../../src/testing/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

describe('found by fuzzing', () => {
  it('the builder refuses prerequisites that are not an array with workflow.invalid_input naming the step', () => {
    const builder = workflow('fuzz.builder').job('a', 'x', {}).job('b', 'x', {});
    expect(() => builder.afterSuccess('b', 7 as never)).toThrow(expect.objectContaining({ code: 'workflow.invalid_input', field: 'steps.b.dependsOn' }));
    expect(() => builder.afterTerminal('b', null as never)).toThrow(expect.objectContaining({ code: 'workflow.invalid_input' }));
  });

  it('slotIdempotencyKey refuses a non-Date or invalid slot and a non-string key with schedule.invalid_input', () => {
    expect(() => slotIdempotencyKey('nightly', {} as Date)).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'slot' }));
    expect(() => slotIdempotencyKey('nightly', new Date(Number.NaN))).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'slot' }));
    expect(() => slotIdempotencyKey(Symbol('k') as never, new Date(0))).toThrow(
      expect.objectContaining({ code: 'schedule.invalid_input', field: 'scheduleKey' }),
    );
    expect(slotIdempotencyKey('nightly', new Date(0))).toBe('schedule:nightly:1970-01-01T00:00:00.000Z');
  });

  it('enqueueWorkflowRunHandle checks its handle options before enqueueing: a bad one writes no run', async () => {
    const run = () => workflow('fuzz.handle-options').external('e').build();
    await expect(enqueueWorkflowRunHandle(db.prisma, run(), { pollIntervalMs: -5 })).rejects.toMatchObject({
      code: 'workflow.invalid_input',
      field: 'pollIntervalMs',
    });
    await expect(enqueueWorkflowRunHandle(db.prisma, run(), { scope: { kind: 'organization' } as never })).rejects.toMatchObject({
      code: 'workflow.invalid_input',
    });
    await expect(enqueueWorkflowRunHandle(db.prisma, run(), null as never)).rejects.toMatchObject({ code: 'workflow.invalid_input', field: 'options' });
    expect((await listWorkflowRuns(db.prisma, { scope: noOrganizationScope(), workflowType: 'fuzz.handle-options' })).items).toEqual([]);
  });

  it("enqueueWorkflowRuns refuses a sparse array by the hole's index, writing nothing (its holes reached the INSERT as nulls: database.error)", async () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the hostile input under test
    const holes = [, , ,] as never;
    await expect(enqueueWorkflowRuns(db.prisma, holes)).rejects.toMatchObject({ code: 'workflow.invalid_input', field: expect.stringMatching(/^0\b/) });
    // biome-ignore lint/suspicious/noSparseArray: the hole is the hostile input under test
    const oneHole = [workflow('fuzz.sparse').external('e').build(), , workflow('fuzz.sparse').external('e').build()] as never;
    await expect(enqueueWorkflowRuns(db.prisma, oneHole)).rejects.toMatchObject({ code: 'workflow.invalid_input', field: expect.stringMatching(/^1\b/) });
    expect((await listWorkflowRuns(db.prisma, { scope: noOrganizationScope(), workflowType: 'fuzz.sparse' })).items).toEqual([]);
    // The same hole in syncJobDefinitions was skipped silently; it is refused by its index now.
    // biome-ignore lint/suspicious/noSparseArray: the hole is the hostile input under test
    const sparseDefinitions = [defineJob('fuzz.sparse-def', z.object({}), async () => null), ,] as never;
    await expect(syncJobDefinitions(db.prisma, sparseDefinitions)).rejects.toMatchObject({ code: 'job.invalid_input', field: 'definitions.1' });
  });

  it('createConsoleLogger refuses null options or an unknown level with worker.invalid_options', () => {
    expect(() => createConsoleLogger(null as never)).toThrow(expect.objectContaining({ code: 'worker.invalid_options', field: 'level' }));
    expect(() => createConsoleLogger({ level: 'loud' as never })).toThrow(expect.objectContaining({ code: 'worker.invalid_options', field: 'level' }));
    expect(() => createConsoleLogger({ level: 'toString' as never })).toThrow(expect.objectContaining({ code: 'worker.invalid_options' }));
    expect(typeof createConsoleLogger().info).toBe('function');
  });

  it('dates outside years 1 to 9999 are refused as invalid input naming the field, not sent to PostgreSQL (database.error before)', async () => {
    const ancient = new Date(-8.64e15);
    const far = new Date(8.64e15);
    await expect(enqueueJob(db.prisma, { jobType: 'fuzz.dates', payload: {}, runAt: ancient })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'runAt',
    });
    await expect(enqueueJob(db.prisma, { jobType: 'fuzz.dates', payload: {}, runAt: far })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'runAt',
    });
    await expect(purgeFinished(db.prisma, { olderThan: ancient, dryRun: true })).rejects.toMatchObject({ code: 'retention.invalid_input', field: 'olderThan' });
    await expect(runDueSchedules(db.prisma, { now: ancient, limit: 1 })).rejects.toMatchObject({ code: 'schedule.invalid_input', field: 'now' });
    // The cron library threw a raw RangeError on such a `now` before its own issue was reported.
    await expect(
      upsertSchedule(db.prisma, {
        key: 'fuzz.dates',
        cron: '0 0 * * *',
        timezone: 'Europe/Paris',
        jobType: 'fuzz.dates',
        payload: {},
        enabled: true,
        now: ancient,
      }),
    ).rejects.toMatchObject({ code: 'schedule.invalid_input', field: 'now' });
    await upsertSchedule(db.prisma, { key: 'fuzz.dates', cron: '0 0 * * *', jobType: 'fuzz.dates', payload: {}, enabled: true });
    await expect(pauseSchedule(db.prisma, { key: 'fuzz.dates', now: new Date('-000100-01-01T00:00:00Z') })).rejects.toMatchObject({
      code: 'schedule.invalid_input',
      field: 'now',
    });
    expect((await listJobs(db.prisma, { scope: noOrganizationScope(), jobType: 'fuzz.dates' })).items).toEqual([]);

    // The bounds themselves are stored and read back exactly.
    for (const runAt of [new Date('0001-01-01T00:00:00.000Z'), new Date('9999-12-31T23:59:59.999Z')]) {
      const { jobId } = await enqueueJob(db.prisma, { jobType: 'fuzz.dates-bound', payload: {}, runAt });
      expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).nextRunAt).toEqual(runAt);
    }

    await enqueueJob(db.prisma, { jobType: 'fuzz.dates-fail', payload: {} });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['fuzz.dates-fail'], limit: 1, leaseSeconds: 60 });
    await expect(failJob(db.prisma, { ...lease!, error: { code: 'x.y', message: 'm' }, retryable: true, retryNotBefore: ancient })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'retryNotBefore',
    });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease!.jobId })).status).toBe('LEASED');
  });

  it("a handler's RetryableError with a retryNotBefore out of range is clamped into it, so the worker can record the failure", () => {
    expect(describeFailure(new RetryableError('later', { retryNotBefore: new Date(8.64e15) }))).toMatchObject({
      retryNotBefore: new Date('9999-12-31T23:59:59.999Z'),
    });
    expect(describeFailure(new RetryableError('sooner', { retryNotBefore: new Date(-8.64e15) }))).toMatchObject({
      retryNotBefore: new Date('0001-01-01T00:00:00.000Z'),
    });
  });

  it('defineSchedule refuses a non-object input or a job that is not a definition with schedule.invalid_input (a raw TypeError before)', () => {
    expect(() => defineSchedule("E'\\x00'" as never)).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'input' }));
    expect(() => defineSchedule(null as never)).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'input' }));
    expect(() => defineSchedule({ key: 'k', cron: '0 0 * * *', job: null, payload: {} } as never)).toThrow(
      expect.objectContaining({ code: 'schedule.invalid_input', field: 'job' }),
    );
    const job = defineJob('fuzz.define-schedule', z.object({ n: z.number() }), async () => null, { retry: { maxAttempts: 4 } });
    expect(defineSchedule({ key: 'k', cron: '0 0 * * *', job, payload: { n: 1 }, enabled: true })).toMatchObject({
      jobType: 'fuzz.define-schedule',
      maxAttempts: 4,
    });
  });

  it('continueNow and continueAfter refuse options that are not an object with worker.invalid_continuation (a raw TypeError before)', () => {
    expect(() => continueNow(null as never)).toThrow(expect.objectContaining({ code: 'worker.invalid_continuation', field: 'options' }));
    expect(() => continueAfter(5, 'x' as never)).toThrow(expect.objectContaining({ code: 'worker.invalid_continuation', field: 'options' }));
    expect(continueAfter(5, { checkpoint: { page: 2 } })).toMatchObject({ delayMs: 5, checkpoint: { page: 2 } });
  });

  it('createDashboard refuses a basePath that is not a string with dashboard.invalid_options (a raw TypeError before)', async () => {
    expect(() => createDashboard({ db: db.prisma, authorize: () => null, basePath: 5 as never })).toThrow(
      expect.objectContaining({ code: 'dashboard.invalid_options', field: 'basePath' }),
    );
    await createDashboard({ db: db.prisma, authorize: () => null, basePath: '/admin/' }).close();
  });

  it('listJobDefinitions refuses a cursor holding NUL as invalid input (database.error before)', async () => {
    await expect(listJobDefinitions(db.prisma, { cursor: 'a\u0000b' })).rejects.toMatchObject({ code: 'job.invalid_input', field: 'cursor' });
    await expect(listJobDefinitions(db.prisma, { cursor: 'a b' })).resolves.toMatchObject({ nextCursor: null });
  });

  it('an intent runAt and a metrics now outside years 1 to 9999 are refused naming the field (database.error before), and nothing is written', async () => {
    const far = new Date(8.64e15);
    await expect(recordJobEnqueueIntent(db.prisma, { jobType: 'fuzz.intent-dates', payload: {}, idempotencyKey: 'k', runAt: far })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'runAt',
    });
    await expect(
      recordJobEnqueueIntent(db.prisma, { jobType: 'fuzz.intent-dates', payload: {}, idempotencyKey: 'k', runAt: new Date(-8.64e15) }),
    ).rejects.toMatchObject({ code: 'job.invalid_input', field: 'runAt' });
    expect(await getEnqueueIntentStats(db.prisma, { scope: noOrganizationScope() })).toMatchObject({ pending: 0 });
    await expect(getQueueMetrics(db.prisma, { scope: noOrganizationScope(), now: new Date(-8.64e15) })).rejects.toMatchObject({
      code: 'metrics.invalid_input',
      field: 'now',
    });
    await expect(getQueueMetrics(db.prisma, { scope: noOrganizationScope(), now: far })).rejects.toMatchObject({ code: 'metrics.invalid_input', field: 'now' });
    await expect(getQueueMetrics(db.prisma, { scope: noOrganizationScope(), now: new Date('9999-12-31T23:59:59.999Z') })).resolves.toMatchObject({
      asOf: new Date('9999-12-31T23:59:59.999Z'),
    });
  });

  it('19-digit cursors beyond bigint are refused as invalid input (database.error before)', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'fuzz.attempts-cursor', payload: {} });
    const scope = noOrganizationScope();
    await expect(listJobAttempts(db.prisma, { scope, jobId, cursor: '9999999999999999999' })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'cursor',
    });
    await expect(listJobEvents(db.prisma, { scope, jobId, cursor: '9223372036854775808' })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'cursor',
    });
    const run = await enqueueWorkflowRun(db.prisma, workflow('fuzz.recoveries-cursor').external('e').build());
    await expect(
      listWorkflowRecoveries(db.prisma, { scope, runId: run.workflowRunId, cursor: '9999999999999999999:01234567-89ab-7def-8123-456789abcdef' }),
    ).rejects.toMatchObject({ code: 'workflow.invalid_input', field: 'cursor' });
    // The largest bigint still passes.
    await expect(listJobAttempts(db.prisma, { scope, jobId, cursor: '9223372036854775807' })).resolves.toEqual({ items: [], nextCursor: null });
  });

  it('workflowRunHandle refuses options that are not an object with workflow.invalid_input (a raw TypeError before)', () => {
    const runId = '01234567-89ab-7def-8123-456789abcdef';
    expect(() => workflowRunHandle(db.prisma, noOrganizationScope(), runId, null as never)).toThrow(
      expect.objectContaining({ code: 'workflow.invalid_input', field: 'options' }),
    );
    expect(() => workflowRunHandle(db.prisma, noOrganizationScope(), runId, 5 as never)).toThrow(
      expect.objectContaining({ code: 'workflow.invalid_input', field: 'options' }),
    );
    expect(typeof workflowRunHandle(db.prisma, noOrganizationScope(), runId).getRun).toBe('function');
  });

  it('a job schedule with a null payload is refused naming payload (database.error from the one-target check before), nothing written', async () => {
    const input = { key: 'fuzz.null-payload', cron: '0 0 * * *', jobType: 'fuzz.sched', payload: null, enabled: false };
    await expect(upsertSchedule(db.prisma, input)).rejects.toMatchObject({ code: 'schedule.invalid_input', field: 'payload' });
    await expect(declareSchedules(db.prisma, { schedules: [input] })).rejects.toMatchObject({ code: 'schedule.invalid_input' });
    expect(await findSchedule(db.prisma, { key: 'fuzz.null-payload' })).toBeNull();
  });
});

describe('found by fuzzing the installed package (issue 21)', () => {
  it('a missing input says once which argument is invalid (it read "Invalid input: Invalid input: expected object ...")', async () => {
    await expect(listJobs(db.prisma, undefined as never)).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'input',
      message: 'Invalid input: must be an object (received undefined)',
    });
    await expect(verifyIntegrity(db.prisma, 5 as never)).rejects.toMatchObject({ code: 'integrity.invalid_input', field: 'options' });
    await expect(listJobs(db.prisma, { scope: noOrganizationScope(), jobTyp: 'x' } as never)).rejects.toMatchObject({
      field: 'jobTyp',
      message: 'Invalid jobTyp: is not a known field',
    });
  });

  it('releaseJob refuses a blank reason naming it, and the lease stays held (a blank reason was recorded before)', async () => {
    await enqueueJob(db.prisma, { jobType: 'fuzz.release-blank', payload: {} });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['fuzz.release-blank'], limit: 1, leaseSeconds: 60 });
    for (const reason of ['', '   ', '\t']) {
      await expect(releaseJob(db.prisma, { ...lease!, reason })).rejects.toMatchObject({ code: 'job.invalid_input', field: 'reason' });
    }
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease!.jobId })).status).toBe('LEASED');
    await expect(releaseJob(db.prisma, { ...lease!, reason: 'fuzz.released' })).resolves.toMatchObject({ status: 'PENDING' });
  });

  it('a run read filter is bounded like the workflow type it matches (a 10 MB workflowType was accepted)', async () => {
    const scope = noOrganizationScope();
    const huge = 'w'.repeat(10 * 1024 * 1024);
    await expect(listWorkflowRuns(db.prisma, { scope, workflowType: huge })).rejects.toMatchObject({ code: 'workflow.invalid_input', field: 'workflowType' });
    await expect(countWorkflowRuns(db.prisma, { scope, workflowType: 'w'.repeat(201) })).rejects.toMatchObject({
      code: 'workflow.invalid_input',
      field: 'workflowType',
    });
    await expect(countWorkflowRuns(db.prisma, { scope, workflowType: '  ' })).rejects.toMatchObject({ code: 'workflow.invalid_input', field: 'workflowType' });
    await expect(countWorkflowRuns(db.prisma, { scope, workflowType: 'w'.repeat(200) })).resolves.toBe(0);
    // A dependency or an appended edge names a step key (at most 200 characters).
    const longDependency = { workflowType: 'fuzz.long-dependency', steps: [{ key: 'a', kind: 'external', dependsOn: [{ step: 'k'.repeat(201) }] }] } as never;
    await expect(enqueueWorkflowRun(db.prisma, longDependency)).rejects.toMatchObject({ code: 'workflow.invalid_input', field: 'steps.0.dependsOn.0.step' });
  });

  it('declareSchedules refuses an owner with a lone surrogate (stored as U+FFFD before, so prune never matched it again), writing nothing', async () => {
    const schedules = [{ key: 'fuzz.owner-surrogate', cron: '0 0 * * *', jobType: 'fuzz.sched', payload: {}, enabled: false }];
    await expect(declareSchedules(db.prisma, { owner: 'team\uD800', schedules })).rejects.toMatchObject({ code: 'schedule.invalid_input', field: 'owner' });
    await expect(declareSchedules(db.prisma, { owner: 'team\u0000', schedules })).rejects.toMatchObject({ code: 'schedule.invalid_input', field: 'owner' });
    expect(await findSchedule(db.prisma, { key: 'fuzz.owner-surrogate' })).toBeNull();
    await declareSchedules(db.prisma, { owner: 'team \uD83D\uDE00', schedules });
    expect(await findSchedule(db.prisma, { key: 'fuzz.owner-surrogate' })).toMatchObject({ declaredBy: 'team \uD83D\uDE00' });
  });

  it('getQueueMetrics refuses a now whose windows would start before year 1 (it passed validation, then failed 22008)', async () => {
    const scope = noOrganizationScope();
    await expect(getQueueMetrics(db.prisma, { scope, now: new Date('0001-01-01T00:00:00Z') })).rejects.toMatchObject({
      code: 'metrics.invalid_input',
      field: 'now',
    });
    await expect(getQueueMetrics(db.prisma, { scope, now: new Date('0001-01-01T23:59:59.999Z') })).rejects.toMatchObject({
      code: 'metrics.invalid_input',
      field: 'now',
    });
    await expect(getQueueMetrics(db.prisma, { scope, now: new Date('0001-01-02T00:00:00Z') })).resolves.toMatchObject({
      asOf: new Date('0001-01-02T00:00:00Z'),
    });
  });

  it("a typed enqueue checks the payload with its definition's schema before writing (a JavaScript caller stored a payload that could only dead-letter)", async () => {
    const definition = defineJob('fuzz.typed-payload', z.object({ n: z.number() }), async () => null);
    const bad = { n: 'x' } as never;
    const scope = noOrganizationScope();
    await expect(enqueueJob(db.prisma, definition, bad)).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'payload.n',
      message: 'Invalid payload.n: expected number, received string',
    });
    await expect(enqueueJobs(db.prisma, definition, [{ payload: { n: 1 } }, { payload: bad }])).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: '1.payload.n',
    });
    await expect(recordJobEnqueueIntent(db.prisma, definition, bad, { idempotencyKey: 'typed-bad' })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'payload.n',
    });
    expect(() => workflow('fuzz.typed-payload').external('e').job('a', definition, bad)).toThrow(
      expect.objectContaining({ code: 'workflow.invalid_input', field: 'steps.1.payload.n' }),
    );
    expect(() =>
      defineSchedule({ key: 'fuzz.typed-payload', cron: '0 0 * * *', job: definition, payload: { n: 'x' } as unknown as { n: number }, enabled: false }),
    ).toThrow(expect.objectContaining({ code: 'schedule.invalid_input', field: 'payload.n' }));
    expect((await listJobs(db.prisma, { scope, jobType: 'fuzz.typed-payload' })).items).toEqual([]);
    expect(await getEnqueueIntentStats(db.prisma, { scope })).toMatchObject({ pending: 0 });

    // An asynchronous schema is awaited by the async forms.
    const later = {
      '~standard': {
        version: 1,
        vendor: 'fuzz',
        validate: async (value: unknown) => ((value as { ok?: unknown }).ok === true ? { value } : { issues: [{ message: 'not ok', path: [{ key: 'ok' }] }] }),
      },
    } as const;
    const asyncDefinition = defineJob('fuzz.typed-async', later as unknown as StandardSchemaV1<{ ok: boolean }>, async () => null);
    await expect(enqueueJob(db.prisma, asyncDefinition, { ok: false })).rejects.toMatchObject({
      code: 'job.invalid_input',
      field: 'payload.ok',
      message: 'Invalid payload.ok: not ok',
    });
    await expect(enqueueJob(db.prisma, asyncDefinition, { ok: true })).resolves.toMatchObject({ jobId: expect.any(String) });
    await expect(enqueueJob(db.prisma, definition, { n: 1 })).resolves.toMatchObject({ jobId: expect.any(String) });
  });

  it('a workflow run handle refuses a listener that is not one, naming it, before anything is read or written (getResult threw a raw TypeError)', async () => {
    const runId = '01234567-89ab-7def-8123-456789abcdef';
    for (const listener of [{}, 5, { wake: 'no' }, { wake: async () => undefined, listening: 'yes' }]) {
      expect(() => workflowRunHandle(db.prisma, noOrganizationScope(), runId, { listener: listener as never })).toThrow(
        expect.objectContaining({ code: 'workflow.invalid_input', field: 'listener' }),
      );
    }
    const run = () => workflow('fuzz.handle-listener').external('e').build();
    await expect(enqueueWorkflowRunHandle(db.prisma, run(), { listener: {} as never })).rejects.toMatchObject({
      code: 'workflow.invalid_input',
      field: 'listener',
    });
    expect((await listWorkflowRuns(db.prisma, { scope: noOrganizationScope(), workflowType: 'fuzz.handle-listener' })).items).toEqual([]);
    // A listener-shaped object is accepted (polling decides; the wake only shortens the wait).
    const quiet = { wake: () => new Promise<void>(() => undefined), close: async () => undefined };
    await expect(workflowRunHandle(db.prisma, noOrganizationScope(), runId, { listener: quiet }).getResult({ timeoutMs: 10 })).rejects.toMatchObject({
      code: 'workflow.run_not_found',
    });
  });

  it('runledger/testing refuses server options that are not options with testing.invalid_options, starting nothing (startPostgresServer(null) threw a raw TypeError)', async () => {
    await expect(startPostgresServer(null as never)).rejects.toMatchObject({ code: 'testing.invalid_options', field: 'options' });
    await expect(startPostgresServer({ url: 'not a url' })).rejects.toMatchObject({ code: 'testing.invalid_options', field: 'url' });
    await expect(startPostgresServer({ settings: { 'fsync=off -c x': 'on' } })).rejects.toMatchObject({ code: 'testing.invalid_options' });
    await expect(createTestDatabase('abc' as never)).rejects.toMatchObject({ code: 'testing.invalid_options', field: 'options' });
    await expect(startPostgresServer({ url: db.url })).resolves.toMatchObject({ kind: 'url', url: db.url });
  });
});
