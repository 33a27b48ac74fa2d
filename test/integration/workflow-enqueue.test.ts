/** Enqueueing runs: persistence, root release, idempotency, validation, composition with the host's transaction. */
import { describe, expect, it } from 'vitest';
import {
  countWorkflowRuns,
  enqueueWorkflowRun,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  isRunledgerError,
  listWorkflowRuns,
  listWorkflowSteps,
  organizationScope,
  workflow,
  type WorkflowRunInput,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

const counts = async () => {
  const [row] = await db.prisma.$queryRaw<{ runs: number; steps: number; jobs: number }[]>`
    SELECT (SELECT count(*)::int FROM runledger.workflow_runs) AS runs,
           (SELECT count(*)::int FROM runledger.workflow_steps) AS steps,
           (SELECT count(*)::int FROM runledger.job_queue) AS jobs`;
  return row!;
};

describe('enqueueWorkflowRun', () => {
  it('persists run, steps and edges and releases the roots in the same transaction', async () => {
    const org = newId();
    const { workflowRunId, disposition } = await enqueueWorkflowRun(
      db.prisma,
      workflow('profiles.refresh', { requestedBy: 'u1' })
        .organization(org)
        .job('crawl', 'profiles.crawl', { url: 'https://example.test' }, { priority: 7, maxAttempts: 2, timeoutSeconds: 30 })
        .external('approve')
        .job('score', 'profiles.score', {})
        .afterSuccess('score', ['crawl'])
        .afterTerminal('score', ['approve'])
        .resultStep('score')
        .build(),
    );
    expect(disposition).toBe('inserted');
    const run = await getWorkflowRun(db.prisma, { scope: organizationScope(org), workflowRunId });
    expect(run).toMatchObject({
      workflowType: 'profiles.refresh',
      organizationId: org,
      status: 'RUNNING',
      metadata: { requestedBy: 'u1' },
      resultStepKey: 'score',
    });
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.crawl).toMatchObject({ status: 'ENQUEUED', executionKind: 'JOB', dependencyCountTotal: 0 });
    expect(steps.approve).toMatchObject({ status: 'WAITING_FOR_EXTERNAL', executionKind: 'EXTERNAL', jobId: null });
    expect(steps.score).toMatchObject({ status: 'BLOCKED', jobId: null, dependencyCountTotal: 2, dependencyCountPending: 2, dependencyCountUnsatisfied: 0 });
    const job = await getJob(db.prisma, { scope: organizationScope(org), jobId: steps.crawl!.jobId! });
    expect(job).toMatchObject({ jobType: 'profiles.crawl', organizationId: org, priority: 7, maxAttempts: 2, timeoutSeconds: 30, status: 'PENDING' });
    // Steps come back in topological (id) order.
    expect((await listWorkflowSteps(db.prisma, { scope: organizationScope(org), workflowRunId, limit: 500 })).items.map((s) => s.stepKey)).toEqual([
      'crawl',
      'approve',
      'score',
    ]);
  });

  it('answers ten concurrent identical requests with one run and refuses a different request under the key', async () => {
    const input: WorkflowRunInput = workflow('idem').job('a', 'idem.a', { v: 1 }).idempotencyKey('order-42').build();
    const clients = Array.from({ length: 10 }, () => db.newClient({ max: 1 }));
    const start = barrier(10);
    const results = await Promise.all(
      clients.map((client) =>
        client.$transaction(async (tx) => {
          await start();
          return enqueueWorkflowRun(tx, input);
        }),
      ),
    );
    expect(new Set(results.map((r) => r.workflowRunId)).size).toBe(1);
    expect(results.filter((r) => r.disposition === 'inserted')).toHaveLength(1);
    expect(await countWorkflowRuns(db.prisma, { scope: noOrganizationScope(), workflowType: 'idem' })).toBe(1);
    const before = await counts();
    const changed = workflow('idem').job('a', 'idem.a', { v: 2 }).idempotencyKey('order-42').build();
    const error = await enqueueWorkflowRun(db.prisma, changed).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'workflow.idempotency_conflict')).toBe(true);
    expect(await counts()).toEqual(before);
    // Keys are scoped by organization: the same key elsewhere is a new run.
    const other = await enqueueWorkflowRun(db.prisma, { ...changed, organizationId: newId() });
    expect(other.disposition).toBe('inserted');
  });

  it('writes nothing for an invalid run', async () => {
    const before = await counts();
    const error = await enqueueWorkflowRun(
      db.prisma,
      workflow('bad').job('a', 'x', {}).job('b', 'x', {}).afterSuccess('a', ['b']).afterSuccess('b', ['a']).build(),
    ).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'workflow.cycle')).toBe(true);
    expect(await counts()).toEqual(before);
  });

  it("exists only if the host's transaction commits", async () => {
    const before = await counts();
    const marker = new Error('host failed');
    await expect(
      db.prisma.$transaction(async (tx) => {
        await enqueueWorkflowRun(tx, workflow('host').job('a', 'host.a', {}).build());
        throw marker;
      }),
    ).rejects.toBe(marker);
    expect(await counts()).toEqual(before);
  });

  it('lists runs by keyset pages with filters and counts them', async () => {
    const org = newId();
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await enqueueWorkflowRun(db.prisma, workflow('paged').organization(org).external('e').build())).workflowRunId);
    const scope = organizationScope(org);
    const first = await listWorkflowRuns(db.prisma, { scope, limit: 2 });
    const second = await listWorkflowRuns(db.prisma, { scope, limit: 2, cursor: first.nextCursor! });
    const third = await listWorkflowRuns(db.prisma, { scope, limit: 2, cursor: second.nextCursor! });
    expect([...first.items, ...second.items, ...third.items].map((r) => r.id)).toEqual([...ids].reverse());
    expect(third.nextCursor).toBeNull();
    expect(await countWorkflowRuns(db.prisma, { scope, status: 'WAITING_FOR_EXTERNAL' })).toBe(5);
    expect(await countWorkflowRuns(db.prisma, { scope, status: ['SUCCEEDED', 'CANCELED'] })).toBe(0);
    expect((await listWorkflowRuns(db.prisma, { scope: noOrganizationScope(), workflowType: 'paged' })).items).toEqual([]);
    expect((await listWorkflowRuns(db.prisma, { scope: { kind: 'admin' }, workflowType: 'paged' })).items).toHaveLength(5);
  });
});
