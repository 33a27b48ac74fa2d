import { describe, expect, it } from 'vitest';
import {
  NotFoundError,
  adminScope,
  cancelJob,
  enqueueJob,
  findJob,
  getJob,
  noOrganizationScope,
  listJobEvents,
  listJobs,
  organizationScope,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const ORG_A = '0190a3e0-0000-7000-8000-00000000000a';
const ORG_B = '0190a3e0-0000-7000-8000-00000000000b';

async function status(jobId: string): Promise<string> {
  const [row] = await db.prisma.$queryRaw<{ status: string }[]>`SELECT status FROM runledger.job_queue WHERE id = ${jobId}::uuid`;
  return row!.status;
}

describe('job scope', () => {
  it('never lets an organization read or cancel another organization’s job', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'scoped', payload: { secret: 'a' }, organizationId: ORG_A });
    const other = organizationScope(ORG_B);
    await expect(getJob(db.prisma, { scope: other, jobId })).rejects.toBeInstanceOf(NotFoundError);
    expect(await findJob(db.prisma, { scope: other, jobId })).toBeNull();
    await expect(listJobEvents(db.prisma, { scope: other, jobId })).rejects.toMatchObject({ code: 'job.not_found' });
    expect((await listJobs(db.prisma, { scope: other })).items.map((j) => j.id)).not.toContain(jobId);
    await expect(cancelJob(db.prisma, { jobId, scope: other })).rejects.toMatchObject({ code: 'job.not_found' });
    expect(await status(jobId)).toBe('PENDING');

    expect((await getJob(db.prisma, { scope: organizationScope(ORG_A), jobId })).payload).toEqual({ secret: 'a' });
    expect((await cancelJob(db.prisma, { jobId, scope: organizationScope(ORG_A) })).status).toBe('CANCELED');
  });

  it('keeps organization jobs out of the no-organization scope and jobs without one out of organizations', async () => {
    const orgJob = await enqueueJob(db.prisma, { jobType: 'scoped.split', payload: 1, organizationId: ORG_A });
    const plainJob = await enqueueJob(db.prisma, { jobType: 'scoped.split', payload: 2 });
    expect(await findJob(db.prisma, { scope: noOrganizationScope(), jobId: orgJob.jobId })).toBeNull();
    await expect(cancelJob(db.prisma, { jobId: orgJob.jobId, scope: noOrganizationScope() })).rejects.toMatchObject({ code: 'job.not_found' });
    expect(await findJob(db.prisma, { scope: organizationScope(ORG_A), jobId: plainJob.jobId })).toBeNull();
    const plainList = await listJobs(db.prisma, { scope: noOrganizationScope(), jobType: 'scoped.split' });
    expect(plainList.items.map((j) => j.id)).toEqual([plainJob.jobId]);
    const orgList = await listJobs(db.prisma, { scope: organizationScope(ORG_A), jobType: 'scoped.split' });
    expect(orgList.items.map((j) => j.id)).toEqual([orgJob.jobId]);
    expect(await status(orgJob.jobId)).toBe('PENDING');
  });

  it('lets the admin scope see and cancel every job', async () => {
    const orgJob = await enqueueJob(db.prisma, { jobType: 'scoped.admin', payload: 1, organizationId: ORG_B });
    const plainJob = await enqueueJob(db.prisma, { jobType: 'scoped.admin', payload: 2 });
    const all = await listJobs(db.prisma, { scope: adminScope(), jobType: 'scoped.admin' });
    expect(all.items.map((j) => j.id).sort()).toEqual([orgJob.jobId, plainJob.jobId].sort());
    expect((await cancelJob(db.prisma, { jobId: orgJob.jobId, scope: adminScope() })).status).toBe('CANCELED');
    expect((await listJobEvents(db.prisma, { scope: adminScope(), jobId: orgJob.jobId })).items.map((e) => e.eventType)).toEqual(['ENQUEUED', 'CANCELED']);
  });
});
