/**
 * The dashboard API's reading additions over real HTTP: each run's step
 * summary on the runs list, a run's attempts for its timeline, the event log
 * a page at a time, the catalog's job types, the time range, organization and
 * metadata filters of the lists, and HTML error pages for page loads (the API
 * keeps answering JSON).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob, enqueueWorkflowRun, recordJobProgress, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { SCOPE_HEADER, serveDashboard, type ServedDashboard } from '../harness/dashboard.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

async function get(path: string, scope = 'admin', headers: Record<string, string> = {}): Promise<{ status: number; type: string; body: any }> {
  const response = await fetch(`${served.url}${path}`, { headers: { [SCOPE_HEADER]: scope, ...headers } });
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  return { status: response.status, type, body: type.includes('json') ? JSON.parse(text) : text };
}

let served: ServedDashboard;
let failedRun: string;
let otherOrgRun: string;

beforeAll(async () => {
  served = await serveDashboard(db.prisma);
  failedRun = (
    await enqueueWorkflowRun(
      db.prisma,
      workflow('read.etl', { customer: 'acme' })
        .organization('org-a')
        .job('extract', 'read.extract', {})
        .job('load', 'read.load', {})
        .afterSuccess('load', ['extract'])
        .job('side', 'read.side', {})
        .build(),
    )
  ).workflowRunId;
  otherOrgRun = (await enqueueWorkflowRun(db.prisma, workflow('read.etl', { customer: 'globex' }).organization('org-b').external('gate').build()))
    .workflowRunId;
  // extract fails once (retried, then dead-lettered): two attempts on the timeline.
  await runRunnableJobs(db.prisma, (job) => (job.jobType === 'read.extract' ? { ok: false, retryable: true, code: 'read.flaky' } : { ok: true }));
  await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE job_type = 'read.extract'`;
  await runRunnableJobs(db.prisma, (job) => (job.jobType === 'read.extract' ? { ok: false, code: 'read.broken' } : { ok: true }));
});

describe('dashboard reading API', () => {
  it('lists each run with its step counts and failing step, in scope', async () => {
    const { status, body } = await get('/api/runs?type=read.etl', 'org:org-a');
    expect(status).toBe(200);
    expect(body.items.map((run: { id: string }) => run.id)).toEqual([failedRun]);
    expect(body.items[0].steps).toEqual({
      total: 3,
      succeeded: 1,
      failed: 1,
      canceled: 1,
      open: 0,
      failingStep: { stepKey: 'extract', errorCode: 'read.broken' },
    });
  });

  it("gives a run's attempts for its timeline, oldest first per step", async () => {
    const { body } = await get(`/api/runs/${failedRun}`);
    const extract = body.attempts.filter((a: { stepKey: string }) => a.stepKey === 'extract');
    expect(extract.map((a: { attempt: number; outcome: string; errorCode: string }) => [a.attempt, a.outcome, a.errorCode])).toEqual([
      [1, 'FAILED_RETRY', 'read.flaky'],
      [2, 'DEAD_LETTERED', 'read.broken'],
    ]);
    expect(body.attempts.filter((a: { stepKey: string }) => a.stepKey === 'side').map((a: { outcome: string }) => a.outcome)).toEqual(['SUCCEEDED']);
    expect(body.attempts.some((a: { stepKey: string }) => a.stepKey === 'load')).toBe(false);
    expect((await get(`/api/runs/${failedRun}`, 'org:org-b')).status).toBe(404);
  });

  it("pages a job's event log: the first 50 with the job, the rest from api/jobs/:id/events", async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'read.progress', payload: {} });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 600, jobTypes: ['read.progress'], markRunning: true });
    for (let n = 1; n <= 70; n += 1) await recordJobProgress(db.prisma, { ...lease!, processed: n });
    const detail = (await get(`/api/jobs/${jobId}`)).body;
    expect(detail.events).toHaveLength(50);
    expect(detail.eventsCursor).not.toBeNull();
    const next = (await get(`/api/jobs/${jobId}/events?cursor=${detail.eventsCursor}`)).body;
    const all = [...detail.events, ...next.items];
    expect(next.nextCursor).toBeNull();
    expect(all.filter((e: { eventType: string }) => e.eventType === 'PROGRESS')).toHaveLength(70);
    expect(new Set(all.map((e: { id: string }) => e.id)).size).toBe(all.length);
    expect((await get(`/api/jobs/${jobId}/events`, 'org:org-a')).status).toBe(404);
  });

  it("names the catalog's job types", async () => {
    await db.prisma.$executeRaw`INSERT INTO runledger.job_definitions (job_type) VALUES ('read.catalog.b'), ('read.catalog.a')`;
    expect((await get('/api/catalog', 'org:org-a')).body).toEqual({ jobTypes: ['read.catalog.a', 'read.catalog.b'] });
  });

  it('filters both lists by a time range, and refuses a malformed one naming the field', async () => {
    const before = new Date(Date.now() - 3_600_000).toISOString();
    const after = new Date(Date.now() + 3_600_000).toISOString();
    const runs = async (query: string) => (await get(`/api/runs?type=read.etl&${query}`)).body.items.map((run: { id: string }) => run.id).sort();
    expect(await runs(`from=${before}`)).toEqual([failedRun, otherOrgRun].sort());
    expect(await runs(`to=${before}`)).toEqual([]);
    expect(await runs(`from=${after}`)).toEqual([]);
    const jobs = async (query: string) => (await get(`/api/jobs?type=read.extract&${query}`)).body.items.length;
    expect(await jobs(`from=${before}&to=${after}`)).toBe(1);
    expect(await jobs(`to=${before}`)).toBe(0);
    const bad = await get('/api/jobs?from=last-tuesday');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'dashboard.invalid_input', details: { field: 'from' } });
  });

  it('filters runs by organization (admin) and by a metadata key and value', async () => {
    const ids = async (query: string, scope = 'admin') =>
      (await get(`/api/runs?type=read.etl&${query}`, scope)).body.items.map((run: { id: string }) => run.id);
    expect(await ids('org=org-b')).toEqual([otherOrgRun]);
    expect(await ids('org=org-b', 'org:org-a')).toEqual([]);
    expect(await ids('meta=customer%3Dglobex')).toEqual([otherOrgRun]);
    expect(await ids('meta=customer%3Dglobex', 'org:org-a')).toEqual([]);
    const report = (await get('/api/runs?meta=customer%3Dacme')).body.search;
    expect(report).toEqual({ kind: 'metadata', key: 'customer', value: 'acme', searchedNewest: 5_000 });
    const bad = await get('/api/runs?meta=novalue');
    expect(bad.body.error).toMatchObject({ code: 'dashboard.invalid_input', details: { field: 'meta' } });
  });

  it('answers a refused or missing page load with an HTML page, and the API with JSON', async () => {
    const page = await get('/', 'none', { accept: 'text/html,application/xhtml+xml' });
    expect(page.status).toBe(403);
    expect(page.type).toContain('text/html');
    expect(page.body).toContain('<h1>Not allowed</h1>');
    expect(page.body).toContain('dashboard.forbidden');
    const api = await get('/api/overview', 'none', { accept: 'text/html' });
    expect(api.status).toBe(403);
    expect(api.body.error.code).toBe('dashboard.forbidden');
    const plain = await get('/', 'none');
    expect(plain.body.error.code).toBe('dashboard.forbidden');
    const missing = await get('/nowhere', 'admin', { accept: 'text/html' });
    expect(missing.status).toBe(404);
    expect(missing.body).toContain('<h1>Not found</h1>');
  });
});
