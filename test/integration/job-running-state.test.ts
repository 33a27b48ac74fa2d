/**
 * A job whose handler runs reads RUNNING wherever people read it (the
 * library's reads, the CLI, the dashboard's API), while its stored status
 * stays LEASED for filters, fences and compare-and-set calls (issue 21).
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob, failJob, getJob, listJobs, markJobRunning, noOrganizationScope } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';
import { SCOPE_HEADER, serveDashboard } from '../harness/dashboard.js';

const db = useTestDatabase();
const scope = noOrganizationScope();

describe('a running job', () => {
  it('reads RUNNING once its handler started, LEASED while only claimed, and keeps its stored status', async () => {
    const { jobId: pendingId } = await enqueueJob(db.prisma, { jobType: 'state.pending', payload: {} });
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'state.hand', payload: {} });
    const [claimed] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['state.hand'], limit: 1, leaseSeconds: 60 });
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'LEASED', state: 'LEASED' });

    await markJobRunning(db.prisma, claimed!);
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'LEASED', state: 'RUNNING' });
    expect(await getJob(db.prisma, { scope, jobId: pendingId })).toMatchObject({ status: 'PENDING', state: 'PENDING' });
    // Filters stay on the stored status: LEASED finds the running job.
    const leased = await listJobs(db.prisma, { scope, status: ['LEASED'], jobType: 'state.hand', limit: 10 });
    expect(leased.items.map((job) => [job.id, job.state])).toEqual([[jobId, 'RUNNING']]);
  });

  it("reads a lease's own start: a later attempt claimed without markRunning is LEASED until it starts", async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'state.again', payload: {}, maxAttempts: 3 });
    const claim = async () => (await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['state.again'], limit: 1, leaseSeconds: 60 }))[0]!;
    const first = await claim();
    await markJobRunning(db.prisma, first);
    await failJob(db.prisma, { ...first, error: { code: 'x', message: 'again' }, retryable: true });
    await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
    const second = await claim();
    // started_at keeps the run's first start; the state reads this lease's attempt.
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'LEASED', state: 'LEASED', startedAt: expect.any(Date) });
    await markJobRunning(db.prisma, second);
    expect(await getJob(db.prisma, { scope, jobId })).toMatchObject({ status: 'LEASED', state: 'RUNNING' });
  });

  it('is RUNNING as a worker claims it (markRunning), in the CLI and the dashboard API', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'state.worker', payload: {} });
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['state.worker'], limit: 1, leaseSeconds: 60, markRunning: true });

    const shown = await runCli(db.url, 'jobs', 'show', jobId);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`Job ${jobId}\\s+state\\.worker\\s+RUNNING`));
    const listed = await runCli(db.url, 'jobs', 'list', '--type', 'state.worker');
    expect(listed.stdout).toMatch(new RegExp(`${jobId}\\s+state\\.worker\\s+RUNNING`));
    expect(JSON.parse((await runCli(db.url, '--json', 'jobs', 'show', jobId)).stdout)).toMatchObject({ job: { status: 'LEASED', state: 'RUNNING' } });

    const served = await serveDashboard(db.prisma);
    const headers = { [SCOPE_HEADER]: 'admin' };
    const detail = (await (await fetch(`${served.url}/api/jobs/${jobId}`, { headers })).json()) as { job: { status: string; state: string } };
    expect(detail.job).toMatchObject({ status: 'LEASED', state: 'RUNNING' });
    const list = (await (await fetch(`${served.url}/api/jobs?type=state.worker`, { headers })).json()) as { items: { id: string; state: string }[] };
    expect(list.items.map((job) => [job.id, job.state])).toEqual([[jobId, 'RUNNING']]);
  });
});
