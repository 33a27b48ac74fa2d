/**
 * Organization ids are the host's own ids: a cuid, an integer as text or a
 * UUID goes through enqueue, claim, reads, scoping and idempotency unchanged;
 * an empty, blank, over-long or NUL-bearing id is refused naming the field, and
 * nothing is written.
 */
import { describe, expect, it } from 'vitest';
import {
  ValidationError,
  cancelJob,
  claimJobs,
  enqueueJob,
  enqueueWorkflowRun,
  findJob,
  getJob,
  getWorkflowRun,
  listJobs,
  listWorkflowRuns,
  organizationScope,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const CUID = 'clx9k2v0a0000qz8r3h5t7w1e';
const INTEGER = '42';

async function counts(): Promise<{ jobs: number; runs: number; steps: number }> {
  const [row] = await db.prisma.$queryRaw<{ jobs: number; runs: number; steps: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.job_queue) AS jobs,
           (SELECT count(*)::int FROM runledger.workflow_runs) AS runs,
           (SELECT count(*)::int FROM runledger.workflow_steps) AS steps`;
  return row!;
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('organization ids', () => {
  it.each([
    ['a cuid', CUID],
    ['an integer as text', INTEGER],
    ['255 characters', 'x'.repeat(255)],
  ])('carries %s through enqueue, claim, reads and scoping', async (_name, orgId) => {
    const jobType = `org.${orgId.length}.${orgId.slice(0, 8)}`;
    const { jobId } = await enqueueJob(db.prisma, { jobType, payload: { n: 1 }, organizationId: orgId, idempotencyKey: 'k' });
    const again = await enqueueJob(db.prisma, { jobType, payload: { n: 1 }, organizationId: orgId, idempotencyKey: 'k' });
    expect(again).toMatchObject({ jobId, disposition: 'existing' });

    const [claimed] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 30, jobTypes: [jobType] });
    expect(claimed).toMatchObject({ jobId, organizationId: orgId });

    const scope = organizationScope(orgId);
    expect((await getJob(db.prisma, { scope, jobId })).organizationId).toBe(orgId);
    expect((await listJobs(db.prisma, { scope, jobType })).items.map((j) => j.id)).toEqual([jobId]);
    // A prefix, another host id or no organization at all sees nothing.
    expect(await findJob(db.prisma, { scope: organizationScope(orgId.slice(0, -1) || 'other'), jobId })).toBeNull();
    expect(await findJob(db.prisma, { scope: organizationScope(orgId.length < 255 ? `${orgId} ` : orgId.toUpperCase()), jobId })).toBeNull();
    expect(await findJob(db.prisma, { scope: { kind: 'no_organization' }, jobId })).toBeNull();
    expect((await cancelJob(db.prisma, { jobId, scope })).status).toBe('CANCELED');
  });

  it('keeps the same idempotency key apart per organization and from jobs without one', async () => {
    const a = await enqueueJob(db.prisma, { jobType: 'org.idem', payload: 1, organizationId: '1', idempotencyKey: 'same' });
    const b = await enqueueJob(db.prisma, { jobType: 'org.idem', payload: 1, organizationId: '2', idempotencyKey: 'same' });
    const none = await enqueueJob(db.prisma, { jobType: 'org.idem', payload: 1, idempotencyKey: 'same' });
    expect(new Set([a.jobId, b.jobId, none.jobId]).size).toBe(3);
    expect([a, b, none].map((r) => r.disposition)).toEqual(['inserted', 'inserted', 'inserted']);
  });

  it('runs a workflow for a cuid organization: its steps and released jobs keep the id', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('org.flow')
        .organization(CUID)
        .idempotencyKey('flow')
        .job('a', 'org.flow.a', {})
        .job('b', 'org.flow.b', {})
        .afterSuccess('b', ['a'])
        .resultStep('b')
        .build(),
    );
    const handled = await runRunnableJobs(db.prisma);
    expect(handled.filter((job) => job.jobType.startsWith('org.flow.')).map((job) => [job.jobType, job.organizationId])).toEqual([
      ['org.flow.a', CUID],
      ['org.flow.b', CUID],
    ]);
    const scope = organizationScope(CUID);
    expect((await getWorkflowRun(db.prisma, { scope, workflowRunId })).status).toBe('SUCCEEDED');
    expect((await listWorkflowRuns(db.prisma, { scope })).items.map((r) => r.id)).toEqual([workflowRunId]);
    await expect(getWorkflowRun(db.prisma, { scope: organizationScope(INTEGER), workflowRunId })).rejects.toMatchObject({ code: 'workflow.run_not_found' });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(Object.values(steps).map((s) => s.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
  });

  it.each([
    ['empty', ''],
    ['blank (spaces)', '   '],
    ['blank (tab and newline)', '\t\n'],
    ['over 255 characters', 'x'.repeat(256)],
    ['containing NUL', 'org\u0000id'],
  ])('refuses an organization id %s, naming the field, and writes nothing', async (_name, orgId) => {
    const before = await counts();
    const jobError = await refusal(enqueueJob(db.prisma, { jobType: 'org.bad', payload: 1, organizationId: orgId }));
    expect(jobError).toBeInstanceOf(ValidationError);
    expect(jobError).toMatchObject({ code: 'job.invalid_input', field: 'organizationId' });

    const runError = await refusal(enqueueWorkflowRun(db.prisma, workflow('org.bad').organization(orgId).job('a', 'org.bad.a', {}).build()));
    expect(runError).toBeInstanceOf(ValidationError);
    expect(runError).toMatchObject({ code: 'workflow.invalid_input', field: 'organizationId' });

    // organizationScope refuses it at once; a scope object built by hand is refused by the function it reaches.
    expect(() => organizationScope(orgId)).toThrow(expect.objectContaining({ code: 'scope.invalid_input', field: 'organizationId' }));
    const scopeError = await refusal(listJobs(db.prisma, { scope: { kind: 'organization', organizationId: orgId } }));
    expect(scopeError).toMatchObject({ code: 'job.invalid_input', field: 'scope.organizationId' });
    expect(await counts()).toEqual(before);
  });

  it('refuses what the library would refuse in the database too', async () => {
    await expect(db.prisma.$executeRaw`
      INSERT INTO runledger.job_queue (id, job_type, organization_id, payload) VALUES (gen_random_uuid(), 'org.raw', '', '1')`).rejects.toThrow();
  });
});
