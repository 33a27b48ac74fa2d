/**
 * Every list has one shape: `{ items, nextCursor }`, with `limit` and
 * `cursor` in, keyset order, null `nextCursor` on the last page, and a bad
 * cursor refused as a ValidationError naming `cursor`. Lists under a parent
 * report a parent outside the scope as not found.
 */
import { describe, expect, it } from 'vitest';
import {
  ValidationError,
  cancelJob,
  claimJobs,
  enqueueJob,
  enqueueJobs,
  enqueueWorkflowRun,
  listJobEvents,
  listJobs,
  listWorkflowRuns,
  listWorkflowStepDependencies,
  listWorkflowSteps,
  noOrganizationScope,
  organizationScope,
  releaseJob,
  workflow,
  type Page,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

/** Follows nextCursor page by page; returns every item and the size of each page. */
async function everyPage<T>(fetch: (paging: { limit: number; cursor?: string }) => Promise<Page<T>>, limit: number): Promise<{ items: T[]; sizes: number[] }> {
  const items: T[] = [];
  const sizes: number[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await fetch({ limit, ...(cursor === undefined ? {} : { cursor }) });
    items.push(...page.items);
    sizes.push(page.items.length);
    if (page.nextCursor === null) return { items, sizes };
    cursor = page.nextCursor;
  }
}

describe('one page shape for every list', () => {
  it('pages a job’s events in the order they happened', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'page.events', payload: 1 });
    for (let i = 0; i < 3; i += 1) {
      const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['page.events'] });
      await releaseJob(db.prisma, { ...lease!, reason: 'job.worker_shutdown' });
    }
    const all = (await listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId })).items;
    expect(all).toHaveLength(7);
    expect(all[0]!.eventType).toBe('ENQUEUED');
    const paged = await everyPage((paging) => listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId, ...paging }), 2);
    expect(paged.sizes).toEqual([2, 2, 2, 1]);
    expect(paged.items.map((e) => e.id)).toEqual(all.map((e) => e.id));
  });

  it('pages a run’s steps and edges, and reports a run outside the scope as not found', async () => {
    const org = `org-${newId()}`;
    let builder = workflow('page.steps').organization(org).job('root', 'page.root', {});
    for (let i = 0; i < 7; i += 1) builder = builder.job(`leaf${i}`, 'page.leaf', { i }).afterSuccess(`leaf${i}`, ['root']);
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.build());
    const scope = organizationScope(org);

    const steps = await everyPage((paging) => listWorkflowSteps(db.prisma, { scope, workflowRunId, ...paging }), 3);
    expect(steps.sizes).toEqual([3, 3, 2]);
    expect(steps.items.map((s) => s.stepKey)).toEqual(['root', ...Array.from({ length: 7 }, (_, i) => `leaf${i}`)]);
    const edges = await everyPage((paging) => listWorkflowStepDependencies(db.prisma, { scope, workflowRunId, ...paging }), 4);
    expect(edges.sizes).toEqual([4, 3]);
    expect(new Set(edges.items.map((e) => e.dependentStepKey)).size).toBe(7);

    for (const other of [noOrganizationScope(), organizationScope(`${org}-other`)]) {
      await expect(listWorkflowSteps(db.prisma, { scope: other, workflowRunId })).rejects.toMatchObject({ code: 'workflow.run_not_found' });
      await expect(listWorkflowStepDependencies(db.prisma, { scope: other, workflowRunId })).rejects.toMatchObject({ code: 'workflow.run_not_found' });
    }
    // A run with no edges is an empty page, not "not found".
    const lone = await enqueueWorkflowRun(db.prisma, workflow('page.lone').organization(org).external('e').build());
    expect(await listWorkflowStepDependencies(db.prisma, { scope, workflowRunId: lone.workflowRunId })).toEqual({ items: [], nextCursor: null });
  });

  it('filters jobs by a list of statuses', async () => {
    const [a, b, c] = await enqueueJobs(
      db.prisma,
      [1, 2, 3].map((n) => ({ jobType: 'page.status', payload: n })),
    );
    await cancelJob(db.prisma, { scope: noOrganizationScope(), jobId: b!.jobId });
    const both = await listJobs(db.prisma, { scope: noOrganizationScope(), jobType: 'page.status', status: ['PENDING', 'CANCELED'] });
    expect(both.items.map((j) => j.id)).toEqual([c!.jobId, b!.jobId, a!.jobId]);
    const canceled = await listJobs(db.prisma, { scope: noOrganizationScope(), jobType: 'page.status', status: ['CANCELED'] });
    expect(canceled.items.map((j) => j.id)).toEqual([b!.jobId]);
  });

  it.each([
    ['listJobs', () => listJobs(db.prisma, { scope: noOrganizationScope(), cursor: 'next' }), 'job.invalid_input'],
    ['listJobEvents', () => listJobEvents(db.prisma, { scope: noOrganizationScope(), jobId: newId(), cursor: '-1' }), 'job.invalid_input'],
    ['listWorkflowRuns', () => listWorkflowRuns(db.prisma, { scope: noOrganizationScope(), cursor: newId() }), 'workflow.invalid_input'],
    ['listWorkflowSteps', () => listWorkflowSteps(db.prisma, { scope: noOrganizationScope(), workflowRunId: newId(), cursor: '12' }), 'workflow.invalid_input'],
    [
      'listWorkflowStepDependencies',
      () => listWorkflowStepDependencies(db.prisma, { scope: noOrganizationScope(), workflowRunId: newId(), cursor: newId() }),
      'workflow.invalid_input',
    ],
  ] as const)('%s refuses a cursor it did not issue, naming the field', async (_name, call, code) => {
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code, field: 'cursor' });
  });

  it('refuses a limit above 500 on every list, naming the field', async () => {
    await expect(listJobs(db.prisma, { scope: noOrganizationScope(), limit: 501 })).rejects.toMatchObject({ field: 'limit' });
    await expect(listWorkflowRuns(db.prisma, { scope: noOrganizationScope(), limit: 501 })).rejects.toMatchObject({ field: 'limit' });
    await expect(listWorkflowSteps(db.prisma, { scope: noOrganizationScope(), workflowRunId: newId(), limit: 501 })).rejects.toMatchObject({ field: 'limit' });
  });
});
