/**
 * "Needs attention" (src/dashboard/attention.ts) and the run sub-state it
 * rests on (WorkflowRun.waitingForExternal), over the library and HTTP: each
 * planted condition is caught, every read stays in its scope, the thresholds
 * are options refused with a code naming the field, and the workers page
 * lists the jobs each worker holds and flags a stale heartbeat.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  adminScope,
  cancelWorkflowRun,
  claimJobs,
  completeExternalWorkflowStep,
  countWorkflowRuns,
  createDashboard,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getWorkflowRun,
  listWorkflowRuns,
  organizationScope,
  workflow,
} from '../../src/index.js';
import { attentionSettings, DEFAULT_ATTENTION, readAttention } from '../../src/dashboard/attention.js';
import {
  FAILING_CODE,
  FAILING_TYPE,
  plantAttentionScenario,
  SATURATED_TYPE,
  SATURATED_WORKER,
  STALE_WORKER,
  STUCK_TYPE,
  type AttentionScenario,
} from '../harness/attention-scenario.js';
import { runCli } from '../harness/cli.js';
import { callDashboard as call, serveDashboard, type ServedDashboard } from '../harness/dashboard.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
let planted: AttentionScenario;
let served: ServedDashboard;
let foreignRun: string;

beforeAll(async () => {
  planted = await plantAttentionScenario(db, 'acme');
  // Another organization's trouble: a waiting run, a stuck type, a dead letter of its own code.
  foreignRun = (await enqueueWorkflowRun(db.prisma, workflow('att.review').organization('other').external('approve').build())).workflowRunId;
  await enqueueJob(db.prisma, { jobType: 'att.foreign', organizationId: 'other', payload: {} });
  await enqueueJob(db.prisma, { jobType: 'att.foreign-fail', organizationId: 'other', payload: {} });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w-x', jobTypes: ['att.foreign-fail'], limit: 1, leaseSeconds: 60, markRunning: true });
  await failJob(db.prisma, { ...lease!, error: { code: 'other.secret', message: 'private' }, retryable: false });
  served = await serveDashboard(db.prisma);
});

describe('a run waiting on a person (the library)', () => {
  it('keeps the run RUNNING and says it waits on a person, on getWorkflowRun and listWorkflowRuns', async () => {
    const scope = organizationScope('acme');
    for (const id of planted.runningWaiting) {
      expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: id })).toMatchObject({ status: 'RUNNING', waitingForExternal: true });
    }
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: planted.statusWaiting })).toMatchObject({
      status: 'WAITING_FOR_EXTERNAL',
      waitingForExternal: true,
    });
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: planted.notWaiting })).toMatchObject({ status: 'RUNNING', waitingForExternal: false });

    const waiting = await listWorkflowRuns(db.prisma, { scope, waitingForExternal: true, limit: 100 });
    expect(waiting.items.map((run) => run.id).sort()).toEqual([...planted.runningWaiting, planted.statusWaiting].sort());
    expect(waiting.items.every((run) => run.waitingForExternal)).toBe(true);
    // The status filter alone finds none of the five as waiting; with the sub-state it finds all five.
    const running = await listWorkflowRuns(db.prisma, { scope, status: 'RUNNING', waitingForExternal: true, limit: 100 });
    expect(running.items.map((run) => run.id).sort()).toEqual([...planted.runningWaiting].sort());
    expect((await listWorkflowRuns(db.prisma, { scope, status: 'WAITING_FOR_EXTERNAL', limit: 100 })).items.map((run) => run.id)).toEqual([
      planted.statusWaiting,
    ]);
    const notWaiting = await listWorkflowRuns(db.prisma, { scope, waitingForExternal: false, limit: 100 });
    expect(notWaiting.items.map((run) => run.id)).toEqual([planted.notWaiting]);
    expect(await countWorkflowRuns(db.prisma, { scope, waitingForExternal: true })).toBe(6);
    expect(await countWorkflowRuns(db.prisma, { scope: adminScope(), waitingForExternal: true })).toBe(7);
    expect(await countWorkflowRuns(db.prisma, { scope: organizationScope('other'), waitingForExternal: true })).toBe(1);
  });

  it('clears the sub-state when the person acts, and a canceled run waits on nobody', async () => {
    const scope = organizationScope('acme');
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('att.transient').organization('acme').external('ok').job('after', 'att.after', {}).afterSuccess('after', ['ok']).build(),
    );
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId })).toMatchObject({ status: 'RUNNING', waitingForExternal: true });
    await completeExternalWorkflowStep(db.prisma, { scope, workflowRunId, stepKey: 'ok', outcome: { status: 'succeeded' } });
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId })).toMatchObject({ status: 'RUNNING', waitingForExternal: false });

    const other = await enqueueWorkflowRun(db.prisma, workflow('att.transient').organization('acme').external('gate').build());
    const canceled = await cancelWorkflowRun(db.prisma, { scope, workflowRunId: other.workflowRunId, reason: 'test' });
    expect(canceled).toMatchObject({ status: 'CANCELED', waitingForExternal: false });
    expect(await getWorkflowRun(db.prisma, { scope, workflowRunId: other.workflowRunId })).toMatchObject({ waitingForExternal: false });
  });

  it('lists them from the CLI with runs list --waiting, in its scope', async () => {
    const listed = await runCli(db.url, '--json', '--org', 'acme', 'runs', 'list', '--waiting', '--limit', '100');
    expect(listed.code).toBe(0);
    const page = JSON.parse(listed.stdout) as { items: { id: string; waitingForExternal: boolean }[] };
    expect(page.items.map((run) => run.id).sort()).toEqual([...planted.runningWaiting, planted.statusWaiting].sort());
    const all = JSON.parse((await runCli(db.url, '--json', '--org', 'acme', 'runs', 'list', '--limit', '100')).stdout) as typeof page;
    expect(all.items.find((run) => run.id === planted.notWaiting)).toMatchObject({ waitingForExternal: false });
  });

  it('refuses a filter that is not a boolean, naming it', async () => {
    await expect(listWorkflowRuns(db.prisma, { scope: adminScope(), waitingForExternal: 'yes' as unknown as boolean })).rejects.toMatchObject({
      code: 'workflow.invalid_input',
      details: { field: 'waitingForExternal' },
    });
  });
});

describe('needs attention over HTTP', () => {
  it('catches the stuck, saturated and failing types, the runs waiting on a person and the failures by code (admin)', async () => {
    const { attention } = (await call(served.url, 'GET', '/api/overview')).body;
    const byType = Object.fromEntries(attention.queues.map((queue: { jobType: string }) => [queue.jobType, queue]));
    expect(byType[STUCK_TYPE]).toMatchObject({ problems: ['stuck'], runnable: 1, liveWorkers: 0 });
    expect(byType['att.foreign']).toMatchObject({ problems: ['stuck'] });
    expect(byType[SATURATED_TYPE]).toMatchObject({ problems: ['saturated'], runnable: 4, liveWorkers: 1, slots: 3, slotsBusy: 3 });
    expect(byType[SATURATED_TYPE].oldestWaitMs).toBeGreaterThanOrEqual(234_000);
    expect(byType[FAILING_TYPE]).toMatchObject({ problems: ['failing'], succeeded: 1, deadLettered: 4, failureRate: 0.8 });
    // Worst first.
    expect(attention.queues.map((queue: { problems: string[] }) => queue.problems[0])).toEqual(
      [...attention.queues.map((queue: { problems: string[] }) => queue.problems[0])].sort(
        (a: string, b: string) => ['stuck', 'saturated', 'failing'].indexOf(a) - ['stuck', 'saturated', 'failing'].indexOf(b),
      ),
    );

    expect(attention.waiting.total).toBe(7);
    expect(attention.waiting.byType).toEqual([
      { workflowType: 'att.review', count: 6 },
      { workflowType: 'att.sign', count: 1 },
    ]);
    expect(attention.waiting.runs).toHaveLength(7);
    expect(attention.waiting.runs.find((run: { id: string }) => run.id === planted.runningWaiting[0])).toMatchObject({
      status: 'RUNNING',
      waitingSteps: ['approve'],
      waitingStepCount: 1,
    });

    const flaky = attention.failures.find((group: { jobType: string }) => group.jobType === FAILING_TYPE);
    expect(flaky).toMatchObject({ errorCode: FAILING_CODE, count: 4, directCount: 4, message: 'upstream timed out after 40 s' });
    expect(attention.settings).toEqual({ ...DEFAULT_ATTENTION, failuresWindowMs: 86_400_000 });
  });

  it("keeps an organization to its own runs, jobs and failures, and hides the fleet's slot counts", async () => {
    const acme = (await call(served.url, 'GET', '/api/overview', { scope: 'org:acme' })).body.attention;
    expect(acme.waiting.total).toBe(6);
    expect(acme.waiting.runs.map((run: { id: string }) => run.id)).not.toContain(foreignRun);
    expect(acme.queues.map((queue: { jobType: string }) => queue.jobType)).not.toContain('att.foreign');
    expect(acme.failures.map((group: { errorCode: string }) => group.errorCode)).toEqual([FAILING_CODE]);
    expect(acme.queues.find((queue: { jobType: string }) => queue.jobType === SATURATED_TYPE)).toMatchObject({
      problems: ['saturated'],
      slots: null,
      slotsBusy: null,
    });

    const other = (await call(served.url, 'GET', '/api/overview', { scope: 'org:other' })).body.attention;
    expect(other.waiting.runs.map((run: { id: string }) => run.id)).toEqual([foreignRun]);
    expect(other.queues.map((queue: { jobType: string; problems: string[] }) => [queue.jobType, queue.problems])).toEqual([['att.foreign', ['stuck']]]);
    expect(other.failures).toEqual([expect.objectContaining({ jobType: 'att.foreign-fail', errorCode: 'other.secret', count: 1 })]);

    // Rows without an organization: none of the planted trouble is theirs.
    const none = (await call(served.url, 'GET', '/api/overview', { scope: 'no-org' })).body.attention;
    expect([none.waiting.total, none.queues, none.failures]).toEqual([0, [], []]);
  });

  it('filters the runs list to runs waiting on a person, with a search and a metadata filter too, in scope', async () => {
    const ids = async (path: string, scope = 'admin') =>
      ((await call(served.url, 'GET', path, { scope })).body.items as { id: string; waitingForExternal: boolean }[]).map((run) => run.id).sort();
    expect(await ids('/api/runs?waiting=1&limit=100', 'org:acme')).toEqual([...planted.runningWaiting, planted.statusWaiting].sort());
    expect(await ids('/api/runs?waiting=1&status=RUNNING&limit=100', 'org:acme')).toEqual([...planted.runningWaiting].sort());
    expect(await ids('/api/runs?waiting=true&limit=100', 'org:other')).toEqual([foreignRun]);
    // `0` is no filter, as withoutOrg.
    expect((await ids('/api/runs?waiting=0&limit=100', 'org:acme')).length).toBeGreaterThan(6);
    const searched = await ids(`/api/runs?waiting=1&q=${planted.runningWaiting[0]!.slice(0, 8)}&limit=100`, 'org:acme');
    expect(searched).toContain(planted.runningWaiting[0]);
    expect(searched).not.toContain(planted.notWaiting);
    expect(await ids('/api/runs?waiting=1&meta=nothing%3Dhere&limit=100', 'org:acme')).toEqual([]);
    const listed = (await call(served.url, 'GET', '/api/runs?waiting=1&limit=1', { scope: 'org:acme' })).body.items[0];
    expect(listed).toMatchObject({ waitingForExternal: true });
    const bad = await call(served.url, 'GET', '/api/runs?waiting=maybe');
    expect([bad.status, bad.body.error.code, bad.body.error.details.field]).toEqual([400, 'dashboard.invalid_input', 'waiting']);
  });

  it('flags the saturated type on the queues page too, by the same threshold', async () => {
    const queues = (await call(served.url, 'GET', '/api/queues')).body.queues as { jobType: string; saturated: boolean; unserved: boolean }[];
    const flags = Object.fromEntries(queues.map((queue) => [queue.jobType, [queue.saturated, queue.unserved]]));
    expect(flags[SATURATED_TYPE]).toEqual([true, false]);
    expect(flags[STUCK_TYPE]).toEqual([false, true]);
    expect(flags[FAILING_TYPE]).toEqual([false, false]);
    const patient = await serveDashboard(db.prisma, { attention: { saturationWaitMs: 3_600_000 } });
    const relaxed = (await call(patient.url, 'GET', '/api/queues')).body.queues as { jobType: string; saturated: boolean }[];
    expect(relaxed.find((queue) => queue.jobType === SATURATED_TYPE)?.saturated).toBe(false);
  });

  it('lists the jobs each worker holds and flags a stale heartbeat', async () => {
    const { workers, staleAfterIntervals } = (await call(served.url, 'GET', '/api/workers')).body;
    expect(staleAfterIntervals).toBe(2);
    const media = workers.find((worker: { id: string }) => worker.id === SATURATED_WORKER);
    expect(media).toMatchObject({ state: 'live', concurrency: 3, held: 3, heartbeatIntervalMs: 200_000 });
    expect(media.heldJobs.map((job: { id: string }) => job.id).sort()).toEqual([...planted.heldJobIds].sort());
    expect(media.heldJobs[0]).toMatchObject({ jobType: SATURATED_TYPE, organizationId: 'acme', leaseExpired: false });
    expect(workers.find((worker: { id: string }) => worker.id === STALE_WORKER)).toMatchObject({ state: 'stale', live: true, held: 0, heldJobs: [] });
    // Still an admin's page only.
    expect((await call(served.url, 'GET', '/api/workers', { scope: 'org:acme' })).status).toBe(403);
  });

  it('judges by the thresholds given: a longer saturation wait and a higher failure bar flag neither', async () => {
    const strict = attentionSettings({ saturationWaitMs: 600_000, failureRate: 0.9 });
    const attention = await readAttention(db.prisma, adminScope(), strict);
    const types = attention.queues.map((queue) => queue.jobType);
    expect(types).toContain(STUCK_TYPE);
    expect(types).not.toContain(SATURATED_TYPE);
    expect(types).not.toContain(FAILING_TYPE);
    const lenient = await readAttention(db.prisma, adminScope(), attentionSettings({ failureMinCount: 5 }));
    expect(lenient.queues.map((queue) => queue.jobType)).not.toContain(FAILING_TYPE);
  });
});

describe('attention options', () => {
  it('refuses a bad threshold with dashboard.invalid_options naming the field, and takes good ones', () => {
    const make = (attention: unknown) => () => createDashboard({ db: db.prisma, authorize: () => adminScope(), attention: attention as never });
    for (const [attention, field] of [
      [{ failureRate: 0 }, 'attention.failureRate'],
      [{ failureRate: 1.5 }, 'attention.failureRate'],
      [{ saturationWaitMs: -1 }, 'attention.saturationWaitMs'],
      [{ saturationWaitMs: 1.5 }, 'attention.saturationWaitMs'],
      [{ failureWindowMs: 1_000 }, 'attention.failureWindowMs'],
      [{ failureMinCount: '3' }, 'attention.failureMinCount'],
      [{ saturationWait: 5 }, 'attention.saturationWait'],
      ['often', 'attention'],
    ] as const) {
      expect(make(attention), field).toThrow(expect.objectContaining({ code: 'dashboard.invalid_options', details: expect.objectContaining({ field }) }));
    }
    expect(attentionSettings(undefined)).toEqual(DEFAULT_ATTENTION);
    expect(attentionSettings({ saturationWaitMs: 0, failureWindowMs: 900_000 })).toEqual({
      ...DEFAULT_ATTENTION,
      saturationWaitMs: 0,
      failureWindowMs: 900_000,
    });
    make({ failureRate: 1, failureMinCount: 1 })().close();
  });
});
