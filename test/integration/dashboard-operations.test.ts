/**
 * The operator's API (src/dashboard/operations.ts) over HTTP: every action is
 * refused without the CSRF token and in read-only mode, and acts only in the
 * caller's scope; workers, schedules and definitions are an admin's; a
 * recovery from the dashboard is the library's; the queues page flags a type
 * with runnable jobs and no live worker.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  claimJobs,
  defineJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  syncJobDefinitions,
  upsertSchedule,
  workflow,
} from '../../src/index.js';
import { heartbeatWorkerRegistration } from '../../src/worker/registry.js';
import { useTestDatabase } from '../harness/database.js';
import { callDashboard as call, dashboardSession, serveDashboard, type ServedDashboard } from '../harness/dashboard.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

async function deadLetter(jobType: string, organizationId: string | null): Promise<string> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, organizationId, payload: {} });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
  await failJob(db.prisma, { ...lease!, error: { code: 'ops.failed', message: 'failed' }, retryable: false });
  return jobId;
}

async function status(jobId: string): Promise<string> {
  return (await getJob(db.prisma, { scope: adminScope(), jobId })).status;
}

let served: ServedDashboard;
let admin: { cookie: string; token: string };
let tenant: { cookie: string; token: string };

beforeAll(async () => {
  served = await serveDashboard(db.prisma);
  admin = await dashboardSession(served.url);
  tenant = await dashboardSession(served.url, 'org:acme');
});

describe('dead-letter groups over HTTP', () => {
  it('groups by type and error code in the caller scope only, with live workers per type, and refuses any query field', async () => {
    await deadLetter('ops.grouped', 'acme');
    await deadLetter('ops.grouped', 'acme');
    await deadLetter('ops.grouped', 'other');
    type Groups = { groups: { jobType: string; errorCode: string; count: number; sampleMessage: string; unserved: boolean }[] };
    const mine = (body: Groups) => body.groups.filter((group) => group.jobType === 'ops.grouped');
    expect(mine((await call(served.url, 'GET', '/api/dead-letters/groups', { scope: 'org:acme' })).body as Groups)).toEqual([
      expect.objectContaining({ jobType: 'ops.grouped', errorCode: 'ops.failed', count: 2, sampleMessage: 'failed', liveWorkers: 0, unserved: true }),
    ]);
    expect(mine((await call(served.url, 'GET', '/api/dead-letters/groups', { scope: 'org:other' })).body as Groups)).toEqual([
      expect.objectContaining({ count: 1 }),
    ]);
    expect(mine((await call(served.url, 'GET', '/api/dead-letters/groups')).body as Groups)).toEqual([expect.objectContaining({ count: 3 })]);
    const refused = await call(served.url, 'GET', '/api/dead-letters/groups?type=ops.grouped', { scope: 'org:acme' });
    expect([refused.status, refused.body.error.code, refused.body.error.details.field]).toEqual([400, 'dashboard.invalid_input', 'type']);
    await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE job_type = 'ops.grouped'`;
  });
});

describe('bulk requeue over HTTP', () => {
  it('previews the count, requeues in the caller scope only, and refuses without CSRF or when read-only', async () => {
    const acme = [await deadLetter('ops.mail', 'acme'), await deadLetter('ops.mail', 'acme')];
    const other = await deadLetter('ops.mail', 'other');

    expect((await call(served.url, 'GET', '/api/dead-letters/count?type=ops.mail', { scope: 'org:acme' })).body).toEqual({ count: 2, more: false, cap: 1000 });
    expect((await call(served.url, 'GET', '/api/dead-letters/count?type=ops.mail')).body).toMatchObject({ count: 3 });
    expect((await call(served.url, 'GET', '/api/dead-letters/count?after=yesterday')).body.error).toMatchObject({
      code: 'dashboard.invalid_input',
      details: { field: 'after' },
    });

    const body = { type: 'ops.mail', limit: 10, reason: 'relay fixed' };
    const noToken = await call(served.url, 'POST', '/api/dead-letters/requeue', { scope: 'org:acme', body });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe('dashboard.csrf_rejected');
    const readOnly = await serveDashboard(db.prisma, { readOnly: true });
    const roSession = await dashboardSession(readOnly.url, 'org:acme');
    expect((await call(readOnly.url, 'POST', '/api/dead-letters/requeue', { scope: 'org:acme', body, session: roSession })).body.error.code).toBe(
      'dashboard.read_only',
    );
    expect(await Promise.all([...acme, other].map(status))).toEqual(['DEAD_LETTERED', 'DEAD_LETTERED', 'DEAD_LETTERED']);

    const noReason = await call(served.url, 'POST', '/api/dead-letters/requeue', { scope: 'org:acme', body: { type: 'ops.mail', limit: 10 }, session: tenant });
    expect(noReason.status).toBe(400);
    expect(noReason.body.error).toMatchObject({ code: 'job.invalid_input', details: { field: 'reason' } });

    const done = await call(served.url, 'POST', '/api/dead-letters/requeue', { scope: 'org:acme', body, session: tenant });
    expect(done.status).toBe(200);
    expect(done.body.requeue).toMatchObject({ count: 2, more: false });
    expect([...done.body.requeue.jobIds].sort()).toEqual([...acme].sort());
    expect(await Promise.all([...acme, other].map(status))).toEqual(['PENDING', 'PENDING', 'DEAD_LETTERED']);
  });
});

describe('blank and unknown fields over HTTP', () => {
  it('refuses a blank or unknown filter field and a time not in ISO 8601, naming the field, and requeues nothing', async () => {
    const ids = [await deadLetter('ops.strict', null), await deadLetter('ops.strict', null)];
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const refusals: [Record<string, unknown>, string][] = [
      [{ type: '' }, 'type'],
      [{ type: '  ' }, 'type'],
      [{ type: null }, 'type'],
      [{ type: 'ops.strict', errorCode: '' }, 'errorCode'],
      // The library's name for `after`: refused, not ignored (it would requeue that type's dead letters of all times).
      [{ type: 'ops.strict', finishedAfter: later }, 'finishedAfter'],
      [{ type: 'ops.strict', jobType: 'ops.other' }, 'jobType'],
      [{ type: 'ops.strict', after: '1' }, 'after'],
      [{ type: 'ops.strict', after: '' }, 'after'],
      [{ type: 'ops.strict', before: '2026-02-30' }, 'before'],
      [{ type: 'ops.strict', before: '2026-12-01T09:30' }, 'before'],
    ];
    for (const [filter, field] of refusals) {
      const answer = await call(served.url, 'POST', '/api/dead-letters/requeue', { body: { ...filter, limit: 10, reason: 'unset' }, session: admin });
      expect([answer.status, answer.body.error], JSON.stringify(filter)).toEqual([
        400,
        expect.objectContaining({ code: 'dashboard.invalid_input', details: expect.objectContaining({ field }) }),
      ]);
    }
    for (const [query, field] of [
      ['type=', 'type'],
      ['type=ops.strict&finishedAfter=2026-01-01', 'finishedAfter'],
      ['type=ops.strict&type=ops.other', 'type'],
      ['after=1', 'after'],
    ]) {
      const preview = await call(served.url, 'GET', `/api/dead-letters/count?${query}`);
      expect([preview.status, preview.body.error], query).toEqual([
        400,
        expect.objectContaining({ code: 'dashboard.invalid_input', details: expect.objectContaining({ field }) }),
      ]);
    }
    expect(await Promise.all(ids.map(status))).toEqual(['DEAD_LETTERED', 'DEAD_LETTERED']);
    const counted = await call(served.url, 'GET', `/api/dead-letters/count?type=ops.strict&after=2000-01-01&before=${encodeURIComponent(later)}`);
    expect(counted.body).toMatchObject({ count: 2 });
  });

  it('refuses a field an action route does not take, and changes nothing', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('ops.strict.flow').job('a', 'ops.strict.step', {}).build());
    await runRunnableJobs(db.prisma, () => ({ ok: false }));
    // `failedOnly` is the CLI's word: ignored, the recovery would run every step again (mode's default, full).
    const recover = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, {
      body: { failedOnly: true, reason: 'retry', requestKey: 'strict-k1' },
      session: admin,
    });
    expect([recover.status, recover.body.error]).toEqual([
      400,
      expect.objectContaining({ code: 'dashboard.invalid_input', details: expect.objectContaining({ field: 'failedOnly' }) }),
    ]);
    const [recoveries] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.workflow_runs WHERE workflow_type = 'ops.strict.flow'`;
    expect(recoveries!.n).toBe(1);

    const { jobId } = await enqueueJob(db.prisma, { jobType: 'ops.strict.cancel', payload: {} });
    const cancel = await call(served.url, 'POST', `/api/jobs/${jobId}/cancel`, { body: { reason: 'x', why: 'y' }, session: admin });
    expect([cancel.status, cancel.body.error.details.field]).toEqual([400, 'why']);
    expect(await status(jobId)).toBe('PENDING');

    await upsertSchedule(db.prisma, { key: 'ops.strict.schedule', cron: '0 3 * * *', jobType: 'ops.strict.cancel', payload: {}, enabled: true });
    const pause = await call(served.url, 'POST', '/api/schedules/ops.strict.schedule/pause', { body: { all: true }, session: admin });
    expect([pause.status, pause.body.error.details.field]).toEqual([400, 'all']);
    expect((await call(served.url, 'GET', '/api/schedules')).body.items).toContainEqual(expect.objectContaining({ key: 'ops.strict.schedule', enabled: true }));
    await db.prisma.$executeRaw`DELETE FROM runledger.job_schedules WHERE schedule_key = 'ops.strict.schedule'`;
  });
});

describe('run recovery over HTTP', () => {
  it('recovers a failed run as a new run, failed steps only, once per request key, and not in another organization', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('ops.flow').organization('acme').job('a', 'ops.step', { n: 1 }).job('b', 'ops.step', { n: 2 }).afterSuccess('b', ['a']).build(),
    );
    await runRunnableJobs(db.prisma, (job) => ((job.payload as { n: number }).n === 1 ? { ok: true, output: { ok: 1 } } : { ok: false }));
    const body = { mode: 'failed_only', reason: 'downstream fixed', requestKey: 'dashboard-k1' };
    const foreign = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, {
      scope: 'org:other',
      body,
      session: await dashboardSession(served.url, 'org:other'),
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('workflow.run_not_found');
    const first = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, { scope: 'org:acme', body, session: tenant });
    expect(first.status).toBe(200);
    expect(first.body.recovery).toMatchObject({ outcome: 'inserted', sourceRunId: workflowRunId, mode: 'failed_only', carriedStepKeys: ['a'] });
    const again = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, { scope: 'org:acme', body, session: tenant });
    expect(again.body.recovery).toMatchObject({ outcome: 'existing', recoveryRunId: first.body.recovery.recoveryRunId });
    // A second submit of the page's form (a new key) is refused, naming the recovery; `again` must be a boolean.
    const second = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, {
      scope: 'org:acme',
      body: { ...body, requestKey: 'dashboard-k2' },
      session: tenant,
    });
    expect([second.status, second.body.error.code, second.body.error.details.recoveryRunId]).toEqual([
      409,
      'workflow.recovery_already_recovered',
      first.body.recovery.recoveryRunId,
    ]);
    const loose = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, {
      scope: 'org:acme',
      body: { ...body, requestKey: 'dashboard-k2', again: 'yes' },
      session: tenant,
    });
    expect([loose.status, loose.body.error.code, loose.body.error.details.field]).toEqual([400, 'workflow.invalid_input', 'again']);
    const extra = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, {
      scope: 'org:acme',
      body: { ...body, requestKey: 'dashboard-k2', recoverAgain: true },
      session: tenant,
    });
    expect([extra.status, extra.body.error.code]).toEqual([400, 'dashboard.invalid_input']);
    const explicit = await call(served.url, 'POST', `/api/runs/${workflowRunId}/recover`, {
      scope: 'org:acme',
      body: { ...body, requestKey: 'dashboard-k2', again: true },
      session: tenant,
    });
    expect(explicit.body.recovery).toMatchObject({ outcome: 'inserted', sourceRunId: workflowRunId });
    expect(explicit.body.recovery.recoveryRunId).not.toBe(first.body.recovery.recoveryRunId);
    // The run read links both ways.
    const sourceRead = await call(served.url, 'GET', `/api/runs/${workflowRunId}`, { scope: 'org:acme', session: tenant });
    expect(sourceRead.body.run.recoveries).toMatchObject({ count: 2, latest: { recoveryRunId: explicit.body.recovery.recoveryRunId } });
    const recoveryRead = await call(served.url, 'GET', `/api/runs/${explicit.body.recovery.recoveryRunId}`, { scope: 'org:acme', session: tenant });
    expect(recoveryRead.body.run.recoveredFrom).toMatchObject({ sourceRunId: workflowRunId });
  });
});

describe('fleet, schedules and definitions over HTTP', () => {
  it('flags a type with runnable jobs and no live worker, and counts live workers per type', async () => {
    await enqueueJob(db.prisma, { jobType: 'ops.orphan', payload: {} });
    await enqueueJob(db.prisma, { jobType: 'ops.served', payload: {} });
    await heartbeatWorkerRegistration(db.prisma, { workerId: 'ops-worker', jobTypes: ['ops.served'], concurrency: 4, inFlight: 0, ttlMs: 60_000 });
    const { queues } = (await call(served.url, 'GET', '/api/queues')).body as {
      queues: { jobType: string; runnable: number; liveWorkers: number; unserved: boolean; oldestWaitMs: number | null }[];
    };
    const orphan = queues.find((queue) => queue.jobType === 'ops.orphan');
    const servedType = queues.find((queue) => queue.jobType === 'ops.served');
    expect(orphan).toMatchObject({ runnable: 1, liveWorkers: 0, unserved: true });
    expect(orphan!.oldestWaitMs).toBeGreaterThanOrEqual(0);
    expect(servedType).toMatchObject({ runnable: 1, liveWorkers: 1, unserved: false });
    // A tenant sees its own counts (none here), never another's jobs.
    const tenantQueues = (await call(served.url, 'GET', '/api/queues', { scope: 'org:acme' })).body.queues as { jobType: string; runnable: number }[];
    expect(tenantQueues.find((queue) => queue.jobType === 'ops.orphan')?.runnable ?? 0).toBe(0);

    const workers = (await call(served.url, 'GET', '/api/workers')).body.workers;
    expect(workers).toEqual([expect.objectContaining({ id: 'ops-worker', jobTypes: ['ops.served'], concurrency: 4, live: true })]);
    await db.prisma.$executeRaw`DELETE FROM runledger.workers`;
  });

  it('keeps workers, schedules and definitions to an admin, and pauses, resumes, disables and enables through the library', async () => {
    await upsertSchedule(db.prisma, { key: 'ops/nightly report', cron: '0 3 * * *', jobType: 'ops.report', payload: {}, enabled: true });
    await syncJobDefinitions(db.prisma, [defineJob('ops.report', z.object({}), async () => null)]);
    for (const path of ['/api/workers', '/api/schedules', '/api/definitions']) {
      const refused = await call(served.url, 'GET', path, { scope: 'org:acme' });
      expect([path, refused.status, refused.body.error.code]).toEqual([path, 403, 'dashboard.forbidden']);
    }
    const key = encodeURIComponent('ops/nightly report');
    const tenantPause = await call(served.url, 'POST', `/api/schedules/${key}/pause`, { scope: 'org:acme', body: {}, session: tenant });
    expect(tenantPause.status).toBe(403);

    const listed = (await call(served.url, 'GET', '/api/schedules')).body.items;
    expect(listed).toEqual([expect.objectContaining({ key: 'ops/nightly report', enabled: true })]);
    expect((await call(served.url, 'POST', `/api/schedules/${key}/pause`, { body: {}, session: admin })).body.schedule).toMatchObject({ enabled: false });
    expect((await call(served.url, 'POST', `/api/schedules/${key}/resume`, { body: {}, session: admin })).body.schedule).toMatchObject({ enabled: true });
    expect((await call(served.url, 'POST', '/api/schedules/missing/pause', { body: {}, session: admin })).body.error.code).toBe('schedule.not_found');

    const definitions = (await call(served.url, 'GET', '/api/definitions')).body.items;
    expect(definitions).toEqual([expect.objectContaining({ jobType: 'ops.report', enabled: true })]);
    const off = await call(served.url, 'POST', '/api/definitions/ops.report/enabled', { body: { enabled: false }, session: admin });
    expect(off.body.definition).toMatchObject({ jobType: 'ops.report', enabled: false });
    await expect(enqueueJob(db.prisma, { jobType: 'ops.report', payload: {} })).rejects.toMatchObject({ code: 'job.definition_not_found_or_disabled' });
    const bad = await call(served.url, 'POST', '/api/definitions/ops.report/enabled', { body: { enabled: 'no' }, session: admin });
    expect(bad.body.error).toMatchObject({ code: 'job.invalid_input', details: { field: 'enabled' } });
    expect((await call(served.url, 'POST', '/api/definitions/ops.report/enabled', { body: { enabled: true }, session: admin })).body.definition.enabled).toBe(
      true,
    );
  });
});

describe('concurrency keys over HTTP', () => {
  const keyed = (key: string, organizationId: string, limit = 2) =>
    enqueueJob(db.prisma, { jobType: 'ops.keyed', organizationId, payload: {}, concurrency: { key, limit } });
  const limitRow = async (key: string) =>
    (await db.prisma.$queryRaw<{ max_leased: number; set_by: string }[]>`SELECT max_leased, set_by FROM runledger.concurrency_limits WHERE key = ${key}`)[0];

  it('lists the keys of the caller scope with their limits, leases and waiting jobs, and pages by key', async () => {
    await keyed('ops-key/a', 'acme');
    await keyed('ops-key/a', 'acme');
    await keyed('ops-key/b', 'other');
    type Keys = { items: { key: string; limit: number; leased: number; waiting: number; setBy: string }[]; nextAfter: string | null };
    const mine = (body: Keys) => body.items.filter((item) => item.key.startsWith('ops-key/'));
    const acme = (await call(served.url, 'GET', '/api/concurrency', { scope: 'org:acme' })).body as Keys;
    expect(mine(acme)).toEqual([expect.objectContaining({ key: 'ops-key/a', limit: 2, leased: 0, waiting: 2, setBy: 'enqueue' })]);
    const all = (await call(served.url, 'GET', '/api/concurrency')).body as Keys;
    expect(mine(all).map((item) => item.key)).toEqual(['ops-key/a', 'ops-key/b']);
    const after = (await call(served.url, 'GET', `/api/concurrency?${new URLSearchParams({ after: 'ops-key/a' })}`)).body as Keys;
    expect(mine(after).map((item) => item.key)).toEqual(['ops-key/b']);
    // A blank or unknown query field is refused, naming it, never read as "every key".
    const blank = await call(served.url, 'GET', '/api/concurrency?after=');
    expect([blank.status, blank.body.error.details.field]).toEqual([400, 'after']);
    const unknown = await call(served.url, 'GET', '/api/concurrency?key=ops-key/a');
    expect([unknown.status, unknown.body.error.code, unknown.body.error.details.field]).toEqual([400, 'dashboard.invalid_input', 'key']);
  });

  it("changes a key's limit for an admin only, with CSRF, never read-only, and only with a limit or null", async () => {
    await keyed('ops-key/set', 'acme', 3);
    const path = `/api/concurrency/${encodeURIComponent('ops-key/set')}/limit`;
    const refused = await call(served.url, 'POST', path, { scope: 'org:acme', body: { limit: 10 }, session: tenant });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'dashboard.forbidden']);
    expect((await call(served.url, 'POST', path, { body: { limit: 10 } })).status).toBe(403);
    const readOnly = await serveDashboard(db.prisma, { readOnly: true });
    const roSession = await dashboardSession(readOnly.url);
    expect((await call(readOnly.url, 'POST', path, { body: { limit: 10 }, session: roSession })).body.error.code).toBe('dashboard.read_only');
    await readOnly.close();
    // A missing, blank, wrong or unknown field changes nothing.
    for (const [body, field] of [
      [{}, 'limit'],
      [{ limit: '' }, 'limit'],
      [{ limit: 0 }, 'limit'],
      [{ limit: 2.5 }, 'limit'],
      [{ limit: 5, clear: true }, 'clear'],
    ] as const) {
      const bad = await call(served.url, 'POST', path, { body, session: admin });
      expect([JSON.stringify(body), bad.status, bad.body.error.details.field]).toEqual([JSON.stringify(body), 400, field]);
    }
    expect(await limitRow('ops-key/set')).toEqual({ max_leased: 3, set_by: 'enqueue' });

    const set = await call(served.url, 'POST', path, { body: { limit: 10 }, session: admin });
    expect(set.body.concurrency).toMatchObject({ key: 'ops-key/set', limit: 10, setBy: 'operator', waiting: 1 });
    expect(await limitRow('ops-key/set')).toEqual({ max_leased: 10, set_by: 'operator' });
    const back = await call(served.url, 'POST', path, { body: { limit: null }, session: admin });
    expect(back.body.concurrency).toMatchObject({ key: 'ops-key/set', limit: 10, setBy: 'enqueue' });
    const missing = await call(served.url, 'POST', '/api/concurrency/ops-key%2Fnone/limit', { body: { limit: null }, session: admin });
    expect([missing.status, missing.body.error.code]).toEqual([404, 'job.concurrency_key_not_found']);
  });
});

describe("a keyed job's page over HTTP", () => {
  it('says whether the key is full, counting leases as the scope sees them', async () => {
    const key = 'ops-key/page';
    const enqueue = (organizationId: string) =>
      enqueueJob(db.prisma, { jobType: 'ops.page.keyed', organizationId, payload: {}, concurrency: { key, limit: 2 } });
    await enqueue('acme');
    await enqueue('other');
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['ops.page.keyed'], limit: 10, leaseSeconds: 60, markRunning: true });
    const { jobId } = await enqueue('acme');
    const asAdmin = (await call(served.url, 'GET', `/api/jobs/${jobId}`)).body;
    expect(asAdmin.job).toMatchObject({ status: 'PENDING', concurrencyKey: key });
    expect(asAdmin.concurrency).toEqual({ key, limit: 2, leased: 2, full: true, setBy: 'enqueue' });
    // The tenant counts its own lease, and learns the key is full (its job waits on it).
    expect((await call(served.url, 'GET', `/api/jobs/${jobId}`, { scope: 'org:acme' })).body.concurrency).toEqual({
      key,
      limit: 2,
      leased: 1,
      full: true,
      setBy: 'enqueue',
    });
    expect((await call(served.url, 'GET', `/api/jobs/${jobId}`, { scope: 'org:other' })).status).toBe(404);
    const { jobId: plain } = await enqueueJob(db.prisma, { jobType: 'ops.page.plain', payload: {} });
    const unkeyed = (await call(served.url, 'GET', `/api/jobs/${plain}`)).body;
    expect([unkeyed.job.concurrencyKey, unkeyed.concurrency]).toEqual([null, null]);
  });
});
