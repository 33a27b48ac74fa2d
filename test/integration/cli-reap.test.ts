/** `runledger reap` and `worker --until-idle` recover a crashed worker's job (LEASED, lease expired). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cancelWorkflowRun, claimJobs, enqueueJob, enqueueOrGetActiveWorkflowRun, getJob, noOrganizationScope, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { runCli } from '../harness/cli.js';
import { expireLeases } from '../harness/leases.js';
import { setLeaseExpiry } from '../harness/leases.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

/** A job a worker claimed, started and then died holding: LEASED, its lease already expired. */
async function crashedJob(jobType: string, payload: { [key: string]: string }, maxAttempts = 3, expiresIn = '-1 second'): Promise<string> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload, maxAttempts });
  const [claimed] = await claimJobs(db.prisma, { workerId: 'crashed-worker', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
  expect(claimed?.jobId).toBe(jobId);
  await setLeaseExpiry(db.prisma, jobId, expiresIn);
  return jobId;
}

describe('runledger reap', () => {
  it('retries an expired lease, dead-letters one out of attempts, and prints the counts', async () => {
    const retried = await crashedJob('reap.retry', {});
    const dead = await crashedJob('reap.dead', {}, 1);
    const result = await cli('--json', 'reap');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ retried: 1, deadLettered: 1, activeKeysReleased: 0, retriedJobIds: [retried], deadLetteredJobIds: [dead] });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: retried })).toMatchObject({
      status: 'PENDING',
      leaseOwner: null,
      lastErrorCode: 'job.lease_expired',
    });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: dead })).status).toBe('DEAD_LETTERED');

    const again = await cli('reap');
    expect(again).toMatchObject({ code: 0, stdout: 'No expired leases.\n' });
  });

  it("releases the active key of a canceled run once its canceled lease has run out, like a worker's reaper", async () => {
    const run = workflow('customer.sync').job('pull', 'reap.keyed', {}).build();
    const first = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...run, activeKey: 'sync:reap' });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['reap.keyed'], limit: 1, leaseSeconds: 300, markRunning: true });
    await cancelWorkflowRun(db.prisma, { workflowRunId: first.workflowRunId, scope: noOrganizationScope() });
    expect(JSON.parse((await cli('--json', 'reap')).stdout)).toMatchObject({ activeKeysReleased: 0 });
    expect((await enqueueOrGetActiveWorkflowRun(db.prisma, { ...run, activeKey: 'sync:reap' })).outcome).toBe('existing_active');

    await expireLeases(db.prisma, lease!.jobId);
    const result = await cli('reap');
    expect(result).toMatchObject({ code: 0, stdout: 'No expired leases.\nReleased 1 active workflow key(s).\n' });
    const [claim] = await db.prisma.$queryRaw<{ released: boolean }[]>`
      SELECT released_at IS NOT NULL AS released FROM runledger.workflow_active_keys WHERE workflow_run_id = ${first.workflowRunId}::uuid`;
    expect(claim?.released).toBe(true);
  });

  it('leaves a lease that has not expired alone and refuses a scope it would ignore', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'reap.alive', payload: {} });
    await claimJobs(db.prisma, { workerId: 'live-worker', jobTypes: ['reap.alive'], limit: 1, leaseSeconds: 60, markRunning: true });
    expect((await cli('reap')).stdout).toBe('No expired leases.\n');
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).status).toBe('LEASED');
    expect((await cli('--without-org', 'reap')).code).toBe(2);
  });
});

describe('runledger worker --until-idle', () => {
  it("reaps a crashed worker's expired lease and runs the job before it exits", async () => {
    const jobId = await crashedJob('cli.greet', { name: 'again' });
    const result = await cli('--json', 'worker', '--handlers', 'test/fixtures/cli/handlers.ts', '--until-idle');
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed.stats).toMatchObject({ succeeded: 1, inFlight: 0 });
    expect(printed.reaped).toEqual({ retried: 1, deadLettered: 0 });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).toMatchObject({ status: 'SUCCEEDED', output: { greeting: 'hello again' } });
  });

  it('reaps a lease that expired while it ran before it decides it is idle', async () => {
    // Not yet expired when the worker starts; expired by the time the slow job is done.
    const crashed = await crashedJob('cli.greet', { name: 'late' }, 3, '700 milliseconds');
    const { jobId: slow } = await enqueueJob(db.prisma, { jobType: 'cli.slow', payload: { ms: 1_500 } });
    const result = await cli('--json', 'worker', '--handlers', 'test/fixtures/cli/slow-handlers.ts', '--until-idle');
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed.reaped).toEqual({ retried: 1, deadLettered: 0 });
    expect(printed.stats).toMatchObject({ succeeded: 2, inFlight: 0 });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: slow })).status).toBe('SUCCEEDED');
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: crashed })).toMatchObject({ status: 'SUCCEEDED', attempt: 2 });
  });

  it('exits even when the job it reaped is of a type it does not handle', async () => {
    const ours = await crashedJob('cli.greet', { name: 'ours' });
    const theirs = await crashedJob('reap.other-type', {});
    const result = await cli('--json', 'worker', '--handlers', 'test/fixtures/cli/handlers.ts', '--until-idle');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).reaped).toEqual({ retried: 2, deadLettered: 0 });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: ours })).status).toBe('SUCCEEDED');
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: theirs })).status).toBe('PENDING');
  });
});
