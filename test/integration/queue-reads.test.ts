import { describe, expect, it } from 'vitest';
import { NotFoundError, enqueueJobs, findJob, getJob, noOrganizationScope, listJobEvents, listJobs, organizationScope, cancelJob } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const ORG = '0190a3e0-0000-7000-8000-0000000000c1';
const MISSING = '0190a3e0-0000-7000-8000-0000000000ee';

describe('job reads', () => {
  it('gets a job, and reports a missing one as not found or null', async () => {
    const [created] = await enqueueJobs(db.prisma, [{ jobType: 'read.one', payload: { a: 1 }, idempotencyKey: 'k' }]);
    const job = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: created!.jobId });
    expect(job).toMatchObject({ id: created!.jobId, jobType: 'read.one', payload: { a: 1 }, idempotencyKey: 'k' });
    expect(job.createdAt).toBeInstanceOf(Date);
    expect(job).not.toHaveProperty('enqueueRequest');
    await expect(getJob(db.prisma, { scope: noOrganizationScope(), jobId: MISSING })).rejects.toBeInstanceOf(NotFoundError);
    expect(await findJob(db.prisma, { scope: noOrganizationScope(), jobId: MISSING })).toBeNull();
    await expect(listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: MISSING })).rejects.toMatchObject({ code: 'job.not_found' });
  });

  it('pages through jobs newest first with a keyset cursor', async () => {
    const created = await enqueueJobs(
      db.prisma,
      Array.from({ length: 7 }, (_, i) => ({ jobType: 'read.page', payload: i, organizationId: ORG })),
    );
    const ids = created.map((c) => c.jobId).reverse();
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await listJobs(db.prisma, { scope: organizationScope(ORG), limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((j) => j.id));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(ids);
    const exact = await listJobs(db.prisma, { scope: organizationScope(ORG), limit: 7 });
    expect(exact.nextCursor).toBeNull();
  });

  it('filters by status and job type', async () => {
    const created = await enqueueJobs(db.prisma, [
      { jobType: 'read.filter', payload: 1 },
      { jobType: 'read.filter', payload: 2 },
      { jobType: 'read.other', payload: 3 },
    ]);
    await cancelJob(db.prisma, { jobId: created[1]!.jobId, scope: noOrganizationScope() });
    const canceled = await listJobs(db.prisma, { scope: noOrganizationScope(), status: 'CANCELED', jobType: 'read.filter' });
    expect(canceled.items.map((j) => j.id)).toEqual([created[1]!.jobId]);
    const pending = await listJobs(db.prisma, { scope: noOrganizationScope(), status: 'PENDING', jobType: 'read.filter' });
    expect(pending.items.map((j) => j.id)).toEqual([created[0]!.jobId]);
  });
});
