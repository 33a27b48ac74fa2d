/** The dashboard's JSON API over real HTTP and a real database: counts, scoping, CSRF, read-only, actions, live events. */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  claimJobs,
  completeExternalWorkflowStep,
  completeJob,
  createDashboard,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  getQueueMetrics,
  heartbeatJob,
  isRunledgerError,
  listJobAttempts,
  organizationScope,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { countFinishedHistory } from '../harness/finished-history.js';
import { callDashboard as call, dashboardSession, SCOPE_HEADER, serveDashboard, type ServedDashboard } from '../harness/dashboard.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

/** A run whose `approve` step waits for an external completion; `publish` follows on success, `audit` on any outcome. */
function reviewRun(org: string | null) {
  const builder = workflow('dash.review')
    .external('approve')
    .job('publish', 'dash.publish', {})
    .afterSuccess('publish', ['approve'])
    .job('audit', 'dash.audit', {})
    .afterTerminal('audit', ['approve']);
  return (org ? builder.organization(org) : builder).build();
}

let served: ServedDashboard;
let base: string;
let runA: string;
let runB: string;
let jobB: string;

beforeAll(async () => {
  runA = (await enqueueWorkflowRun(db.prisma, reviewRun('org-a'))).workflowRunId;
  runB = (await enqueueWorkflowRun(db.prisma, reviewRun('org-b'))).workflowRunId;
  await enqueueJob(db.prisma, { jobType: 'dash.mail', payload: { n: 1 }, organizationId: 'org-a' });
  await enqueueJob(db.prisma, { jobType: 'dash.mail', payload: { n: 2 }, organizationId: 'org-a' });
  jobB = (await enqueueJob(db.prisma, { jobType: 'dash.bill', payload: { n: 3 }, organizationId: 'org-b' })).jobId;
  await enqueueJob(db.prisma, { jobType: 'dash.bill', payload: { n: 4 } });
  served = await serveDashboard(db.prisma, { listenConnectionString: db.url });
  base = served.url;
});

describe('dashboard API: reads', () => {
  it('reports overview counts equal to the database, for admin and for one organization', async () => {
    // The oldest due job's age on the database clock, read just before and just after the request: the
    // overview's figure was taken between the two.
    const oldestReady = async (): Promise<number> =>
      (
        await db.prisma.$queryRaw<{ s: number }[]>`
          SELECT extract(epoch FROM now() - min(next_run_at))::float8 AS s FROM runledger.job_queue WHERE status = 'PENDING' AND next_run_at <= now()`
      )[0]!.s;
    const readyBefore = await oldestReady();
    const overview = await call(base, 'GET', '/api/overview');
    const readyAfter = await oldestReady();
    expect(overview.status).toBe(200);
    const actual = await db.prisma.$queryRaw<{ job_type: string; status: string; n: number }[]>`
      SELECT job_type, status::text AS status, count(*)::int AS n FROM runledger.job_queue GROUP BY 1, 2 ORDER BY 1, 2`;
    expect(overview.body.jobs).toEqual(actual.map((row) => ({ jobType: row.job_type, status: row.status, count: row.n })));
    const runs = await db.prisma.$queryRaw<{ workflow_type: string; status: string; n: number }[]>`
      SELECT workflow_type, status::text AS status, count(*)::int AS n FROM runledger.workflow_runs GROUP BY 1, 2 ORDER BY 1, 2`;
    expect(overview.body.runs).toEqual(runs.map((row) => ({ workflowType: row.workflow_type, status: row.status, count: row.n })));
    expect(readyBefore).toBeGreaterThan(0);
    expect(overview.body.oldestReadySeconds).toBeGreaterThanOrEqual(readyBefore);
    expect(overview.body.oldestReadySeconds).toBeLessThanOrEqual(readyAfter);

    const scoped = await call(base, 'GET', '/api/overview', { scope: 'org:org-a' });
    const orgA = await db.prisma.$queryRaw<{ job_type: string; status: string; n: number }[]>`
      SELECT job_type, status::text AS status, count(*)::int AS n FROM runledger.job_queue WHERE organization_id = 'org-a' GROUP BY 1, 2 ORDER BY 1, 2`;
    expect(scoped.body.jobs).toEqual(orgA.map((row) => ({ jobType: row.job_type, status: row.status, count: row.n })));
    expect(scoped.body.jobs.some((row: { jobType: string }) => row.jobType === 'dash.bill')).toBe(false);
    const orgARuns = await db.prisma.$queryRaw<
      { status: string }[]
    >`SELECT status::text AS status FROM runledger.workflow_runs WHERE organization_id = 'org-a'`;
    expect(scoped.body.runs).toEqual([{ workflowType: 'dash.review', status: orgARuns[0]!.status, count: 1 }]);
  });

  it('counts live jobs and runs in full and finished ones over the last 24 h only, and says so', async () => {
    // Finished two days ago: outside the window. Live since two days: counted.
    await db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, status, attempt, created_at, next_run_at, started_at, finished_at)
      VALUES ('00000000-0000-7000-8000-0000000000d1', 'dash.old', 'org-a', '{}', 'SUCCEEDED', 1, now() - interval '3 days', now() - interval '3 days',
              now() - interval '3 days', now() - interval '2 days'),
             ('00000000-0000-7000-8000-0000000000d2', 'dash.old', 'org-a', '{}', 'SUCCEEDED', 1, now() - interval '3 days', now() - interval '3 days',
              now() - interval '3 days', now() - interval '23 hours')`;
    // As the completions would have counted them (the finished counts read the counters).
    await countFinishedHistory(db.prisma, "job_type = 'dash.old'");
    await db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, organization_id, payload, created_at, next_run_at)
      VALUES ('00000000-0000-7000-8000-0000000000d3', 'dash.old', 'org-a', '{}', now() - interval '2 days', now() - interval '2 days')`;
    await db.prisma.$executeRaw`
      INSERT INTO runledger.workflow_runs (id, workflow_type, organization_id, status, created_at, finished_at)
      VALUES ('00000000-0000-7000-8000-0000000000e1', 'dash.oldrun', 'org-a', 'SUCCEEDED', now() - interval '3 days', now() - interval '2 days'),
             ('00000000-0000-7000-8000-0000000000e2', 'dash.oldrun', 'org-a', 'RUNNING', now() - interval '3 days', NULL)`;
    try {
      for (const header of ['admin', 'org:org-a']) {
        const overview = await call(base, 'GET', '/api/overview', { scope: header });
        expect(overview.status).toBe(200);
        expect(overview.body.finishedWindowMs).toBe(86_400_000);
        expect(Date.parse(overview.body.generatedAt) - Date.parse(overview.body.finishedSince)).toBe(86_400_000);
        expect(overview.body.jobs.filter((row: { jobType: string }) => row.jobType === 'dash.old')).toEqual([
          { jobType: 'dash.old', status: 'PENDING', count: 1 },
          { jobType: 'dash.old', status: 'SUCCEEDED', count: 1 },
        ]);
        expect(overview.body.runs.filter((row: { workflowType: string }) => row.workflowType === 'dash.oldrun')).toEqual([
          { workflowType: 'dash.oldrun', status: 'RUNNING', count: 1 },
        ]);
        // Live, so due for two days: the oldest ready job.
        expect(overview.body.oldestReadySeconds).toBeGreaterThanOrEqual(2 * 86_400 - 60);
      }
      const other = await call(base, 'GET', '/api/overview', { scope: 'org:org-b' });
      expect(JSON.stringify(other.body.jobs)).not.toContain('dash.old');
      expect(JSON.stringify(other.body.runs)).not.toContain('dash.oldrun');
    } finally {
      await db.prisma.$executeRaw`DELETE FROM runledger.job_queue WHERE job_type = 'dash.old'`;
      await db.prisma.$executeRaw`DELETE FROM runledger.job_counts WHERE job_type = 'dash.old'`;
      await db.prisma.$executeRaw`DELETE FROM runledger.workflow_runs WHERE workflow_type = 'dash.oldrun'`;
    }
  });

  it("returns a job's attempts, with its stage and progress, only in a scope that holds the job", async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'dash.attempted', payload: {}, organizationId: 'org-b', maxAttempts: 3, stage: 'queued' });
    const [first] = await claimJobs(db.prisma, { workerId: 'w-1', limit: 1, leaseSeconds: 60, jobTypes: ['dash.attempted'] });
    await heartbeatJob(db.prisma, { ...first!, save: { progress: { processed: 2, total: 5 } } });
    await failJob(db.prisma, { ...first!, error: { code: 'test.flaky', message: 'try again' }, retryable: true });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
    await claimJobs(db.prisma, { workerId: 'w-2', limit: 1, leaseSeconds: 60, jobTypes: ['dash.attempted'] });

    const expected = JSON.parse(JSON.stringify((await listJobAttempts(db.prisma, { scope: organizationScope('org-b'), jobId })).items));
    expect(expected.map((a: { outcome: string | null; workerId: string }) => [a.workerId, a.outcome])).toEqual([
      ['w-1', 'FAILED_RETRY'],
      ['w-2', null],
    ]);
    expect(expected[0]).toMatchObject({ errorCode: 'test.flaky', errorMessage: 'try again', retryDelaySource: 'POLICY' });
    expect(expected[0].retryDelayMs).toBeGreaterThan(0);

    const detail = await call(base, 'GET', `/api/jobs/${jobId}`, { scope: 'org:org-b' });
    expect(detail.status).toBe(200);
    expect(detail.body.attempts).toEqual(expected);
    expect(detail.body.attemptsCursor).toBeNull();
    expect([detail.body.job.stage, detail.body.job.progress]).toEqual(['queued', { processed: 2, total: 5 }]);
    const paged = await call(base, 'GET', `/api/jobs/${jobId}/attempts?limit=1`, { scope: 'org:org-b' });
    expect(paged.body.items).toEqual([expected[0]]);
    const rest = await call(base, 'GET', `/api/jobs/${jobId}/attempts?cursor=${paged.body.nextCursor}`, { scope: 'org:org-b' });
    expect([rest.body.items, rest.body.nextCursor]).toEqual([[expected[1]], null]);

    for (const path of [`/api/jobs/${jobId}`, `/api/jobs/${jobId}/attempts`]) {
      const foreign = await call(base, 'GET', path, { scope: 'org:org-a' });
      expect([foreign.status, foreign.body.error.code]).toEqual([404, 'job.not_found']);
      expect(JSON.stringify(foreign.body)).not.toContain('test.flaky');
    }
    const badCursor = await call(base, 'GET', `/api/jobs/${jobId}/attempts?cursor=nope`, { scope: 'org:org-b' });
    expect([badCursor.status, badCursor.body.error.code, badCursor.body.error.details.field]).toEqual([400, 'job.invalid_input', 'cursor']);
  });

  it("reports the last hour's figures exactly as getQueueMetrics does, for admin and for one organization", async () => {
    await enqueueJob(db.prisma, { jobType: 'dash.metric', payload: { n: 1 }, organizationId: 'org-a' });
    await enqueueJob(db.prisma, { jobType: 'dash.metric', payload: { n: 2 }, organizationId: 'org-a', maxAttempts: 1 });
    const claimed = await claimJobs(db.prisma, { workerId: 'w', limit: 10, leaseSeconds: 60, jobTypes: ['dash.metric'], markRunning: true });
    expect(claimed).toHaveLength(2);
    await completeJob(db.prisma, { ...claimed[0]!, output: null });
    await failJob(db.prisma, { ...claimed[1]!, error: { code: 'test.failed', message: 'no' }, retryable: false });

    for (const [header, scope] of [
      ['admin', { kind: 'admin' } as const],
      ['org:org-a', organizationScope('org-a')],
    ] as const) {
      const overview = await call(base, 'GET', '/api/overview', { scope: header });
      expect(overview.status).toBe(200);
      const metrics = overview.body.metrics;
      // The same instant: every window and age is computed from it, so the figures must agree exactly.
      const expected = JSON.parse(JSON.stringify(await getQueueMetrics(db.prisma, { scope, now: new Date(metrics.asOf) })));
      // The intent backlog's age is read on the database clock, not at `now`.
      delete expected.intents.oldestPendingAgeMs;
      delete metrics.intents.oldestPendingAgeMs;
      expect(metrics).toEqual(expected);
      expect(metrics.jobs.finishedRecently.succeeded).toBeGreaterThanOrEqual(1);
      expect(metrics.jobs.finishedRecently.deadLettered).toBeGreaterThanOrEqual(1);
      expect(metrics.runTimeMs.samples).toBeGreaterThanOrEqual(2);
      expect(metrics.deadLetteredLast24h).toBeGreaterThanOrEqual(1);
    }
    const orgA = (await call(base, 'GET', '/api/overview', { scope: 'org:org-a' })).body.metrics;
    expect(orgA.byType.some((row: { jobType: string }) => row.jobType === 'dash.bill')).toBe(false);
    expect(orgA.byType.find((row: { jobType: string }) => row.jobType === 'dash.metric').finishedRecently).toEqual({
      succeeded: 1,
      deadLettered: 1,
      canceled: 0,
    });
  });

  it('refuses a request authorize denies, page and API alike', async () => {
    expect((await call(base, 'GET', '/api/overview', { scope: 'none' })).body.error.code).toBe('dashboard.forbidden');
    expect((await call(base, 'GET', '/api/overview', { scope: 'none' })).status).toBe(403);
    expect((await call(base, 'GET', '/', { scope: 'none' })).status).toBe(403);
    expect((await call(base, 'GET', '/api/events', { scope: 'none' })).status).toBe(403);
  });

  it('keeps an organization to its own jobs and runs', async () => {
    const jobs = await call(base, 'GET', '/api/jobs?limit=100', { scope: 'org:org-a' });
    expect(jobs.body.items.length).toBeGreaterThan(0);
    expect(jobs.body.items.every((job: { organizationId: string }) => job.organizationId === 'org-a')).toBe(true);
    // Filtering by another organization, or searching another's id, finds nothing.
    expect((await call(base, 'GET', '/api/jobs?org=org-b', { scope: 'org:org-a' })).body.items).toEqual([]);
    expect((await call(base, 'GET', `/api/jobs?id=${jobB}`, { scope: 'org:org-a' })).body.items).toEqual([]);
    const detail = await call(base, 'GET', `/api/jobs/${jobB}`, { scope: 'org:org-a' });
    expect([detail.status, detail.body.error.code]).toEqual([404, 'job.not_found']);
    const run = await call(base, 'GET', `/api/runs/${runB}`, { scope: 'org:org-a' });
    expect([run.status, run.body.error.code]).toEqual([404, 'workflow.run_not_found']);
    const runs = await call(base, 'GET', '/api/runs', { scope: 'org:org-a' });
    expect(runs.body.items.map((r: { id: string }) => r.id)).toEqual([runA]);
  });

  it('refuses a blank organization, from authorize or in the org filter, and shows nothing', async () => {
    // An authorize that hands back a blank organization (a user whose org is unset) is a broken scope, never admin.
    for (const header of ['raw-org:', 'raw-org:   ']) {
      for (const path of ['/api/overview', '/api/jobs', '/api/runs', `/api/jobs/${jobB}`]) {
        const answer = await call(base, 'GET', path, { scope: header });
        expect([header, path, answer.status, answer.body.error?.code]).toEqual([header, path, 500, 'dashboard.invalid_scope']);
        expect(JSON.stringify(answer.body)).not.toContain('org-b');
      }
    }
    // The org filter: empty is no filter (an empty form field), blank is refused in every scope.
    for (const header of ['admin', 'org:org-a']) {
      const blank = await call(base, 'GET', '/api/jobs?org=%20%20', { scope: header });
      expect([blank.status, blank.body.error.code, blank.body.error.details.field]).toEqual([400, 'dashboard.invalid_input', 'org']);
      const tab = await call(base, 'GET', '/api/jobs?org=%09', { scope: header });
      expect([tab.status, tab.body.error.code]).toEqual([400, 'dashboard.invalid_input']);
    }
    expect((await call(base, 'GET', '/api/jobs?org=&limit=500')).body.items.map((job: { id: string }) => job.id)).toContain(jobB);
  });

  it('lets admin narrow the jobs list by organization, type, status and idempotency key, with keyset pages', async () => {
    const orgB = await call(base, 'GET', '/api/jobs?org=org-b');
    expect(orgB.body.items.map((job: { id: string }) => job.id)).toContain(jobB);
    expect(orgB.body.items.every((job: { organizationId: string }) => job.organizationId === 'org-b')).toBe(true);
    const first = await call(base, 'GET', '/api/jobs?type=dash.mail&status=PENDING&limit=1');
    expect(first.body.items).toHaveLength(1);
    expect(first.body.nextCursor).toBeTypeOf('string');
    const second = await call(base, 'GET', `/api/jobs?type=dash.mail&status=PENDING&limit=1&cursor=${first.body.nextCursor}`);
    expect(second.body.items).toHaveLength(1);
    expect(second.body.items[0].id).not.toBe(first.body.items[0].id);
    expect(second.body.nextCursor).toBeNull();
    const keyed = await enqueueJob(db.prisma, { jobType: 'dash.keyed', payload: {}, organizationId: 'org-b', idempotencyKey: 'order-42' });
    await enqueueJob(db.prisma, { jobType: 'dash.keyed', payload: {}, organizationId: 'org-a', idempotencyKey: 'order-42' });
    const byKey = await call(base, 'GET', '/api/jobs?type=dash.keyed&key=order-42');
    expect(byKey.body.items.map((job: { organizationId: string }) => job.organizationId).sort()).toEqual(['org-a', 'org-b']);
    const byKeyInB = await call(base, 'GET', '/api/jobs?type=dash.keyed&key=order-42', { scope: 'org:org-b' });
    expect(byKeyInB.body.items.map((job: { id: string }) => job.id)).toEqual([keyed.jobId]);
    const keyWithoutType = await call(base, 'GET', '/api/jobs?key=order-42');
    expect([keyWithoutType.status, keyWithoutType.body.error.code, keyWithoutType.body.error.details.field]).toEqual([400, 'dashboard.invalid_input', 'type']);
    const bad = await call(base, 'GET', '/api/jobs?status=NOPE');
    expect([bad.status, bad.body.error.code, bad.body.error.details.field]).toEqual([400, 'job.invalid_input', 'status.0']);
  });

  it('shows a run with its steps and edges, and the edge modes', async () => {
    const detail = await call(base, 'GET', `/api/runs/${runA}`, { scope: 'org:org-a' });
    expect(detail.status).toBe(200);
    expect(detail.body.steps.map((step: { stepKey: string }) => step.stepKey).sort()).toEqual(['approve', 'audit', 'publish']);
    expect(detail.body.edges.map((edge: { dependentStepKey: string; releaseMode: string }) => `${edge.dependentStepKey}:${edge.releaseMode}`).sort()).toEqual([
      'audit:ON_TERMINAL',
      'publish:ON_SUCCESS',
    ]);
  });

  it('answers unknown routes and wrong methods with coded errors, and redirects the bare base path', async () => {
    expect((await call(base, 'GET', '/api/nothing')).body.error.code).toBe('dashboard.not_found');
    const wrong = await call(base, 'GET', `/api/runs/${runA}/cancel`);
    expect([wrong.status, wrong.body.error.code]).toEqual([405, 'dashboard.method_not_allowed']);
    const mounted = await serveDashboard(db.prisma, { basePath: '/ops/jobs/' });
    const redirect = await call(mounted.url, 'GET', '');
    expect([redirect.status, redirect.body]).toEqual([308, '']);
    expect((await call(mounted.url, 'GET', '/api/overview')).status).toBe(200);
  });

  it('fails closed when authorize throws or returns something that is not a scope, showing nothing of either', async () => {
    const throwing = await serveDashboard(db.prisma, {
      authorize: () => {
        throw new Error('session store down: secret-detail');
      },
    });
    const thrown = await call(throwing.url, 'GET', '/api/overview');
    expect([thrown.status, thrown.body.error.code]).toEqual([500, 'dashboard.internal']);
    expect(JSON.stringify(thrown.body)).not.toContain('secret-detail');
    const odd = await serveDashboard(db.prisma, { authorize: () => ({ kind: 'everyone' }) as never });
    const refused = await call(odd.url, 'GET', '/api/jobs');
    expect([refused.status, refused.body.error.code]).toEqual([500, 'dashboard.invalid_scope']);
    expect(refused.body.jobs).toBeUndefined();
  });

  it('refuses bad options with dashboard.invalid_options naming the field', () => {
    const attempt = (options: object) => {
      try {
        createDashboard({ db: db.prisma, authorize: () => null, ...options });
        return 'accepted';
      } catch (error) {
        return isRunledgerError(error, 'dashboard.invalid_options') ? (error.details.field as string) : String(error);
      }
    };
    expect(attempt({ basePath: 'no-slash' })).toBe('basePath');
    expect(attempt({ authorize: 'yes' })).toBe('authorize');
    expect(attempt({ readOnly: 'no' })).toBe('readOnly');
  });
});

describe('dashboard API: actions', () => {
  it('refuses a POST without the CSRF token, with a wrong one, or from another site, and changes nothing', async () => {
    const session = await dashboardSession(base);
    const body = { status: 'succeeded', output: { by: 'csrf' } };
    const path = `/api/runs/${runA}/steps/approve/complete`;
    const missing = await call(base, 'POST', path, { body });
    expect([missing.status, missing.body.error.code, missing.body.error.details.reason]).toEqual([403, 'dashboard.csrf_rejected', 'missing_token']);
    const wrong = await call(base, 'POST', path, { body, session: { cookie: session.cookie, token: 'x'.repeat(43) } });
    expect(wrong.body.error.details.reason).toBe('token_mismatch');
    const crossSite = await call(base, 'POST', path, { body, session, headers: { 'sec-fetch-site': 'cross-site' } });
    expect([crossSite.status, crossSite.body.error.details.reason]).toEqual([403, 'cross_site']);
    expect((await stepsByKey(db.prisma, runA)).approve!.status).toBe('WAITING_FOR_EXTERNAL');
  });

  it('refuses a body that is not JSON, or too large, before acting', async () => {
    const session = await dashboardSession(base);
    const path = `/api/runs/${runA}/cancel`;
    const headers = { [SCOPE_HEADER]: 'admin', cookie: session.cookie, 'x-runledger-csrf': session.token };
    const text = await fetch(`${base}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body: 'cancel' });
    expect([text.status, ((await text.json()) as any).error.details.field]).toEqual([400, 'content-type']);
    const huge = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'x'.repeat(1_100_000) }),
    });
    expect([huge.status, ((await huge.json()) as any).error.code]).toEqual([413, 'dashboard.payload_too_large']);
    const broken = await fetch(`${base}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"reason":' });
    expect([broken.status, ((await broken.json()) as any).error.code]).toEqual([400, 'dashboard.invalid_input']);
    const run = await call(base, 'GET', `/api/runs/${runA}`);
    expect(run.body.run.status).not.toBe('CANCELED');
  });

  it('refuses every action on a read-only dashboard', async () => {
    const readOnly = await serveDashboard(db.prisma, { readOnly: true });
    const session = await dashboardSession(readOnly.url);
    const refused = await call(readOnly.url, 'POST', `/api/runs/${runA}/steps/approve/complete`, { body: { status: 'succeeded' }, session });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'dashboard.read_only']);
    const cancel = await call(readOnly.url, 'POST', `/api/runs/${runA}/cancel`, { body: {}, session });
    expect(cancel.body.error.code).toBe('dashboard.read_only');
    expect((await call(readOnly.url, 'GET', '/api/session')).body.readOnly).toBe(true);
    expect((await stepsByKey(db.prisma, runA)).approve!.status).toBe('WAITING_FOR_EXTERNAL');
  });

  it("cannot complete or cancel another organization's run", async () => {
    const session = await dashboardSession(base, 'org:org-a');
    const complete = await call(base, 'POST', `/api/runs/${runB}/steps/approve/complete`, { scope: 'org:org-a', body: { status: 'succeeded' }, session });
    expect(complete.status).toBe(404);
    const cancel = await call(base, 'POST', `/api/runs/${runB}/cancel`, { scope: 'org:org-a', body: {}, session });
    expect([cancel.status, cancel.body.error.code]).toEqual([404, 'workflow.run_not_found']);
    const cancelJob = await call(base, 'POST', `/api/jobs/${jobB}/cancel`, { scope: 'org:org-a', body: {}, session });
    expect([cancelJob.status, cancelJob.body.error.code]).toEqual([404, 'job.not_found']);
    expect((await stepsByKey(db.prisma, runB)).approve!.status).toBe('WAITING_FOR_EXTERNAL');
    expect((await getJob(db.prisma, { scope: { kind: 'admin' }, jobId: jobB })).status).toBe('PENDING');
  });

  it("completes an external step in the request's scope, and returns the library's coded errors", async () => {
    const session = await dashboardSession(base, 'org:org-a');
    const path = `/api/runs/${runA}/steps/approve/complete`;
    const invalid = await call(base, 'POST', path, { scope: 'org:org-a', body: { status: 'maybe' }, session });
    expect([invalid.status, invalid.body.error.code]).toEqual([400, 'workflow.invalid_input']);
    const outputOnFailure = await call(base, 'POST', path, { scope: 'org:org-a', body: { status: 'failed', output: 1 }, session });
    expect(outputOnFailure.body.error.code).toBe('workflow.external_output_not_allowed');
    const done = await call(base, 'POST', path, { scope: 'org:org-a', body: { status: 'succeeded', output: { by: 'ana' }, reason: 'looks right' }, session });
    expect(done.status).toBe(200);
    expect(done.body.step).toMatchObject({ stepKey: 'approve', status: 'SUCCEEDED', output: { by: 'ana' }, statusReason: 'looks right' });
    const steps = await stepsByKey(db.prisma, runA);
    expect([steps.approve!.status, steps.publish!.status, steps.audit!.status]).toEqual(['SUCCEEDED', 'ENQUEUED', 'ENQUEUED']);
    const conflict = await call(base, 'POST', path, { scope: 'org:org-a', body: { status: 'failed' }, session });
    expect([conflict.status, conflict.body.error.category]).toEqual([409, 'conflict']);
  });

  it('cancels a run', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, reviewRun(null));
    const session = await dashboardSession(base);
    const canceled = await call(base, 'POST', `/api/runs/${workflowRunId}/cancel`, { body: { reason: 'operator' }, session });
    expect([canceled.status, canceled.body.run.status]).toEqual([200, 'CANCELED']);
  });

  it('replays a succeeded job and requeues a dead-lettered one, showing the lineage; a stale page gets dashboard.job_changed', async () => {
    const source = await enqueueJob(db.prisma, { jobType: 'dash.once', payload: {} });
    const doomed = await enqueueJob(db.prisma, { jobType: 'dash.doomed', payload: {}, maxAttempts: 1 });
    const claimed = await claimJobs(db.prisma, { workerId: 'w', limit: 10, leaseSeconds: 60, jobTypes: ['dash.once', 'dash.doomed'] });
    for (const job of claimed) {
      if (job.jobId === source.jobId) await completeJob(db.prisma, { ...job, output: { sent: true } });
      else await failJob(db.prisma, { ...job, error: { code: 'test.failed', message: 'no' }, retryable: false });
    }
    const session = await dashboardSession(base);
    const stale = await call(base, 'POST', `/api/jobs/${source.jobId}/replay`, {
      body: { expectedRunNumber: 2, reason: 'again', replayRequestKey: 'k1' },
      session,
    });
    expect([stale.status, stale.body.error.code, stale.body.error.details.status]).toEqual([409, 'dashboard.job_changed', 'SUCCEEDED']);
    const replay = await call(base, 'POST', `/api/jobs/${source.jobId}/replay`, {
      body: { expectedRunNumber: 1, reason: 'again', replayRequestKey: 'k1' },
      session,
    });
    expect(replay.status).toBe(200);
    const replayJobId = replay.body.replay.jobId as string;
    const sourceDetail = await call(base, 'GET', `/api/jobs/${source.jobId}`);
    expect(sourceDetail.body.replays).toMatchObject([{ replayJobId, sourceRunNumber: 1, reason: 'again' }]);
    expect(JSON.stringify(sourceDetail.body)).not.toContain('k1');
    expect(sourceDetail.body.events.map((e: { eventType: string }) => e.eventType)).toContain('SUCCEEDED');
    const replayDetail = await call(base, 'GET', `/api/jobs/${replayJobId}`);
    expect(replayDetail.body.replayOf).toMatchObject({ sourceJobId: source.jobId, sourceRunNumber: 1 });

    const requeued = await call(base, 'POST', `/api/jobs/${doomed.jobId}/requeue`, {
      body: { expectedStatus: 'DEAD_LETTERED', expectedRunNumber: 1 },
      session,
    });
    expect([requeued.status, requeued.body.job.status, requeued.body.job.runNumber]).toEqual([200, 'PENDING', 2]);
    const again = await call(base, 'POST', `/api/jobs/${doomed.jobId}/requeue`, { body: { expectedStatus: 'DEAD_LETTERED', expectedRunNumber: 1 }, session });
    expect(again.body.error.code).toBe('dashboard.job_changed');
  });

  it('shows a workflow job its step and run', async () => {
    const steps = await stepsByKey(db.prisma, runA);
    const detail = await call(base, 'GET', `/api/jobs/${steps.publish!.jobId}`, { scope: 'org:org-a' });
    expect(detail.body.workflowStep).toEqual({ workflowRunId: runA, stepKey: 'publish' });
  });
});

/** An open `api/events` stream, read as text until a needle shows up. */
async function openStream(path: string, scope: string) {
  const controller = new AbortController();
  const response = await fetch(`${base}${path}`, { headers: { [SCOPE_HEADER]: scope }, signal: controller.signal });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const stream = {
    text: '',
    async readUntil(needle: string) {
      while (!stream.text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}`);
        stream.text += decoder.decode(value);
      }
    },
    async close() {
      controller.abort();
      await reader.cancel().catch(() => undefined);
    },
  };
  // LISTEN is in effect on every channel once the feed says so (a resync event), so no NOTIFY after it is missed.
  await stream.readUntil('event: hello');
  await stream.readUntil('"kind":"resync"');
  return stream;
}

describe('dashboard API: live events', () => {
  it('streams a content-free change event when jobs become runnable', async () => {
    const stream = await openStream('/api/events', 'org:org-a');
    try {
      await enqueueJob(db.prisma, { jobType: 'dash.live', payload: {}, organizationId: 'org-b' });
      await stream.readUntil('"kind":"job"');
      expect(stream.text).not.toContain('dash.live');
    } finally {
      await stream.close();
    }
  });

  it("tells a run page's stream, and only it, that the run's steps moved", async () => {
    const watched = (await enqueueWorkflowRun(db.prisma, reviewRun('org-a'))).workflowRunId;
    const other = (await enqueueWorkflowRun(db.prisma, reviewRun('org-a'))).workflowRunId;
    const watching = await openStream(`/api/events?run=${watched}`, 'org:org-a');
    const watchingOther = await openStream(`/api/events?run=${other}`, 'org:org-a');
    const unwatched = await openStream('/api/events', 'admin');
    try {
      await completeExternalWorkflowStep(db.prisma, {
        scope: organizationScope('org-a'),
        workflowRunId: watched,
        stepKey: 'approve',
        outcome: { status: 'succeeded' },
      });
      await watching.readUntil('"kind":"step"');
      expect(watching.text).not.toContain(watched);
      // A later event reaches the other streams after anything the step's flush wrote to them.
      await enqueueJob(db.prisma, { jobType: 'dash.live', payload: {} });
      await watchingOther.readUntil('"kind":"job"');
      await unwatched.readUntil('"kind":"job"');
      expect(watchingOther.text).not.toContain('"kind":"step"');
      expect(unwatched.text).not.toContain('"kind":"step"');
    } finally {
      await Promise.all([watching.close(), watchingOther.close(), unwatched.close()]);
    }
  });

  it("refuses to watch another organization's run, as its page does", async () => {
    const refused = await call(base, 'GET', `/api/events?run=${runB}`, { scope: 'org:org-a' });
    expect([refused.status, refused.body.error.code]).toEqual([404, 'workflow.run_not_found']);
    const invalid = await call(base, 'GET', '/api/events?run=nope', { scope: 'org:org-a' });
    expect(invalid.status).toBe(400);
  });
});

describe('dashboard API: search and throughput', () => {
  it("never finds another organization's job or run by id prefix or key substring", async () => {
    await enqueueJob(db.prisma, { jobType: 'dash.searched', payload: {}, organizationId: 'org-b', idempotencyKey: 'Secret-Order-B' });
    const [job] = await db.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM runledger.job_queue WHERE idempotency_key = 'Secret-Order-B'`;
    const ids = (body: any) => body.items.map((item: { id: string }) => item.id);
    expect(ids((await call(base, 'GET', `/api/jobs?q=${job!.id.slice(0, 8)}&limit=500`, { scope: 'org:org-b' })).body)).toContain(job!.id);
    expect(ids((await call(base, 'GET', '/api/jobs?q=secret-order', { scope: 'org:org-b' })).body)).toEqual([job!.id]);
    for (const path of [
      `/api/jobs?q=${job!.id}`,
      `/api/jobs?q=${job!.id.slice(0, 8)}&limit=500`,
      '/api/jobs?q=secret-order',
      '/api/jobs?q=Secret-Order-B&type=dash.searched',
      '/api/jobs?q=secret&org=org-b',
    ]) {
      const answer = await call(base, 'GET', path, { scope: 'org:org-a' });
      expect(answer.status).toBe(200);
      expect(answer.body.items.filter((item: { organizationId: string | null }) => item.organizationId !== 'org-a')).toEqual([]);
      expect(ids(answer.body)).not.toContain(job!.id);
    }
    for (const path of [`/api/runs?q=${runB}`, `/api/runs?q=${runB.slice(0, 8)}&limit=500`]) {
      const answer = await call(base, 'GET', path, { scope: 'org:org-a' });
      expect(ids(answer.body)).not.toContain(runB);
      expect(answer.body.items.every((run: { organizationId: string }) => run.organizationId === 'org-a')).toBe(true);
    }
    expect(ids((await call(base, 'GET', `/api/runs?q=${runB}`, { scope: 'org:org-b' })).body)).toEqual([runB]);
  });

  it("buckets the last hour per minute exactly as a count over the tables, in the request's scope", async () => {
    // Finished jobs and a retried failure, moved to known minutes of the last hour.
    const made: string[] = [];
    for (const [org, minutesAgo, outcome] of [
      ['org-a', 3, 'ok'],
      ['org-a', 3, 'ok'],
      ['org-b', 3, 'ok'],
      ['org-a', 17, 'dead'],
      [null, 17, 'ok'],
      ['org-b', 42, 'dead'],
    ] as const) {
      const { jobId } = await enqueueJob(db.prisma, { jobType: 'dash.timed', payload: {}, maxAttempts: 1, ...(org ? { organizationId: org } : {}) });
      const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['dash.timed'] });
      if (outcome === 'ok') await completeJob(db.prisma, { ...lease!, output: null });
      else await failJob(db.prisma, { ...lease!, error: { code: 'test.failed', message: 'no' }, retryable: false });
      await db.prisma.$executeRaw`UPDATE runledger.job_queue SET finished_at = now() - make_interval(mins => ${minutesAgo}::int) WHERE id = ${jobId}::uuid`;
      made.push(jobId);
    }
    // The chart reads the finished-job counters, which count finishes (a job requeued since, earlier in this file,
    // counts at each); recounted from the rows as they stand, so they agree with the count over the tables below
    // (the writers' counts are test/integration/finished-counts.test.ts's), with these jobs in the minutes they moved to.
    await db.prisma.$executeRaw`DELETE FROM runledger.job_counts`;
    await countFinishedHistory(db.prisma);
    const { jobId: retried } = await enqueueJob(db.prisma, { jobType: 'dash.timed.retry', payload: {}, organizationId: 'org-a', maxAttempts: 3 });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['dash.timed.retry'] });
    await failJob(db.prisma, { ...lease!, error: { code: 'test.flaky', message: 'again' }, retryable: true });
    await db.prisma.$executeRaw`UPDATE runledger.job_attempts SET finished_at = now() - interval '17 minutes' WHERE job_id = ${retried}::uuid`;

    for (const [header, org] of [
      ['admin', undefined],
      ['org:org-a', 'org-a'],
      ['no-org', null],
    ] as const) {
      const { throughput } = (await call(base, 'GET', '/api/overview', { scope: header })).body;
      expect(throughput.minutes).toHaveLength(60);
      expect(throughput.from).toBe(throughput.minutes[0].minute);
      const expected = await db.prisma.$queryRaw<{ minute: Date; succeeded: number; dead_lettered: number; canceled: number; retried: number }[]>`
        SELECT m.minute,
               (SELECT count(*)::int FROM runledger.job_queue jq WHERE jq.status = 'SUCCEEDED' AND jq.finished_at >= m.minute AND jq.finished_at < m.minute + interval '1 minute' AND jq.finished_at <= ${throughput.to}::timestamptz
                  AND (${org === undefined}::boolean OR jq.organization_id IS NOT DISTINCT FROM ${org ?? null}::text)) AS succeeded,
               (SELECT count(*)::int FROM runledger.job_queue jq WHERE jq.status = 'DEAD_LETTERED' AND jq.finished_at >= m.minute AND jq.finished_at < m.minute + interval '1 minute' AND jq.finished_at <= ${throughput.to}::timestamptz
                  AND (${org === undefined}::boolean OR jq.organization_id IS NOT DISTINCT FROM ${org ?? null}::text)) AS dead_lettered,
               (SELECT count(*)::int FROM runledger.job_queue jq WHERE jq.status = 'CANCELED' AND jq.finished_at >= m.minute AND jq.finished_at < m.minute + interval '1 minute' AND jq.finished_at <= ${throughput.to}::timestamptz
                  AND (${org === undefined}::boolean OR jq.organization_id IS NOT DISTINCT FROM ${org ?? null}::text)) AS canceled,
               (SELECT count(*)::int FROM runledger.job_attempts a JOIN runledger.job_queue jq ON jq.id = a.job_id
                 WHERE a.outcome = 'FAILED_RETRY' AND a.finished_at >= m.minute AND a.finished_at < m.minute + interval '1 minute' AND a.finished_at <= ${throughput.to}::timestamptz
                  AND (${org === undefined}::boolean OR jq.organization_id IS NOT DISTINCT FROM ${org ?? null}::text)) AS retried
          FROM generate_series(${throughput.from}::timestamptz, ${throughput.to}::timestamptz, interval '1 minute') m(minute)
         ORDER BY m.minute`;
      expect(throughput.minutes).toEqual(
        expected.map((row) => ({
          minute: row.minute.toISOString(),
          succeeded: row.succeeded,
          deadLettered: row.dead_lettered,
          canceled: row.canceled,
          retried: row.retried,
        })),
      );
      const sum = (key: string) => throughput.minutes.reduce((total: number, m: Record<string, number>) => total + m[key]!, 0);
      // What this test moved into the hour shows up, in the right scopes.
      if (header === 'admin') expect([sum('deadLettered') >= 2, sum('retried') >= 1]).toEqual([true, true]);
      if (header === 'org:org-a') expect(sum('retried')).toBeGreaterThanOrEqual(1);
      if (header === 'no-org') expect(sum('retried')).toBe(0);
    }
    expect(made).toHaveLength(6);
  });
});
