/**
 * Completion batches that span runs: one global lock order (no deadlock
 * between batches, whatever the interleaving), a constant number of
 * statements per batch, every precondition before the first write, and one
 * run's trouble kept inside that run.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  cancelJob,
  claimJobs,
  completeJob,
  completeJobs,
  enqueueJob,
  enqueueWorkflowRun,
  enqueueWorkflowRuns,
  failJob,
  getJob,
  noOrganizationScope,
  isRunledgerError,
  workflow,
  type ClaimedJob,
  type WorkflowRunInput,
} from '../../src/index.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { countingClient } from '../harness/counting-client.js';
import { completeJobsSettled } from '../../src/queue/complete.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let clients: PrismaClient[];
beforeAll(() => {
  clients = Array.from({ length: 4 }, () => db.newClient({ max: 1 }));
});

/** Deterministic shuffle (a fixed seed keeps a failure reproducible). */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i -= 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function claimType(jobType: string, limit = 1000): Promise<ClaimedJob[]> {
  return claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit, leaseSeconds: 600, markRunning: true });
}

describe('completion batches across runs', () => {
  it('two batches with interleaved job ids of two runs (x1 < y1 < x2 < y2) both commit: no deadlock', async () => {
    // x1 and x2 share a dependent in run X, y1 and y2 in run Y. x2 and y2 are released by completing a
    // helper root each, in turn, so their job ids interleave across the runs: x1 < y1 < x2 < y2. Batch one
    // is [x1, y2] (X before Y in id order), batch two [y1, x2] (Y before X).
    const twoRoots = (name: string) =>
      workflow(name)
        .job('r1', `inter.${name}.first`, {})
        .job('helper', `inter.${name}.helper`, {})
        .job('r2', `inter.${name}.second`, {})
        .job('shared', 'inter.shared', {})
        .afterSuccess('r2', ['helper'])
        .afterSuccess('shared', ['r1', 'r2'])
        .build();
    for (let round = 0; round < 10; round += 1) {
      const x = await enqueueWorkflowRun(db.prisma, twoRoots('x'));
      const y = await enqueueWorkflowRun(db.prisma, twoRoots('y'));
      for (const name of ['x', 'y']) {
        const [helper] = await claimType(`inter.${name}.helper`);
        await completeJob(db.prisma, helper!);
      }
      const [x1] = await claimType('inter.x.first');
      const [y1] = await claimType('inter.y.first');
      const [x2] = await claimType('inter.x.second');
      const [y2] = await claimType('inter.y.second');
      expect([x1, y1, x2, y2].map((job) => job!.jobId)).toEqual([x1, y1, x2, y2].map((job) => job!.jobId).sort());
      const start = barrier(2);
      const results = await Promise.all([
        (async () => {
          await start();
          return completeJobs(clients[0]!, [x1!, y2!]);
        })(),
        (async () => {
          await start();
          return completeJobs(clients[1]!, [y1!, x2!]);
        })(),
      ]);
      expect(results.flat().map((r) => r.outcome)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
      expect((await stepsByKey(db.prisma, x.workflowRunId)).shared).toMatchObject({ status: 'ENQUEUED', dependencyCountPending: 0 });
      expect((await stepsByKey(db.prisma, y.workflowRunId)).shared).toMatchObject({ status: 'ENQUEUED', dependencyCountPending: 0 });
    }
  });

  it('200 concurrent mixed cross-run batches from 4 connections: zero deadlocks, every dependent released exactly once', async () => {
    // Each run: four jobs r0..r3, each behind a helper root h0..h3, and two dependents of all four
    // (ON_SUCCESS and ON_TERMINAL). Completing the helpers level by level releases every run's r0,
    // then every run's r1, ...: so job ids interleave across runs (x.r0 < y.r0 < x.r1 < y.r1 ...), and
    // random batches of four then lock the runs' shared dependents in conflicting orders unless the
    // whole batch takes them in one global order.
    const mixedRun = (r: number): WorkflowRunInput => {
      const builder = workflow('mixed');
      for (let i = 0; i < 4; i += 1)
        builder
          .job(`h${i}`, `mixed.helper${i}`, {})
          .job(`r${i}`, 'mixed.root', { r, i })
          .afterSuccess(`r${i}`, [`h${i}`]);
      // Keys added in the loop above, unknown to the builder's type: plain strings, checked at build().
      const roots: string[] = ['r0', 'r1', 'r2', 'r3'];
      builder.job('d1', 'mixed.dep', {}).afterSuccess('d1', roots);
      builder.job('d2', 'mixed.dep', {}).afterTerminal('d2', roots);
      return builder.build();
    };
    const runs = 40;
    const ids: string[] = [];
    const errors: unknown[] = [];
    // 5 passes over 40 fresh runs; in each, the 160 root jobs are shuffled into 40 batches of four,
    // raced four at a time from four connections: 10 rounds x 4 connections x 5 passes = 200 batches.
    for (let pass = 0; pass < 5; pass += 1) {
      const enqueued = await enqueueWorkflowRuns(
        db.prisma,
        Array.from({ length: runs }, (_, r) => mixedRun(r)),
      );
      ids.push(...enqueued.map((run) => run.workflowRunId));
      for (let i = 0; i < 4; i += 1) {
        const helpers = await claimType(`mixed.helper${i}`);
        await completeJobs(db.prisma, helpers);
      }
      const roots = shuffled(await claimType('mixed.root'), pass + 7);
      expect(roots).toHaveLength(runs * 4);
      for (let round = 0; round < runs / 4; round += 1) {
        const start = barrier(4);
        await Promise.all(
          [0, 1, 2, 3].map(async (c) => {
            const batch = roots.slice((round * 4 + c) * 4, (round * 4 + c) * 4 + 4);
            await start();
            try {
              const outcomes = await completeJobs(clients[c]!, batch);
              expect(outcomes.map((o) => o.outcome)).toEqual(batch.map(() => 'succeeded'));
            } catch (error) {
              errors.push(error);
            }
          }),
        );
      }
    }
    expect(errors.map((e) => (isRunledgerError(e) ? e.code : String(e)))).toEqual([]);
    const [counts] = await db.prisma.$queryRaw<{ dependents: number; released: number; jobs: number; events: number }[]>`
      SELECT count(*)::int AS dependents,
             count(*) FILTER (WHERE ws.status = 'ENQUEUED' AND ws.dependency_count_pending = 0 AND ws.dependency_count_unsatisfied = 0)::int AS released,
             count(DISTINCT jq.id)::int AS jobs,
             (SELECT count(*)::int FROM runledger.job_trail e JOIN runledger.job_queue j ON j.id = e.job_id
               WHERE j.job_type = 'mixed.dep' AND e.event_type = 'ENQUEUED') AS events
        FROM runledger.workflow_steps ws
        JOIN runledger.job_queue jq ON jq.id = ws.job_id AND jq.workflow_step_id = ws.id
       WHERE ws.workflow_run_id = ANY(${ids}::uuid[]) AND ws.step_key IN ('d1', 'd2')`;
    expect(counts).toEqual({ dependents: ids.length * 2, released: ids.length * 2, jobs: ids.length * 2, events: ids.length * 2 });
  });

  it('costs the same number of statements for 1 and for 50 workflow jobs of 50 runs', async () => {
    const statements = async (size: number): Promise<number> => {
      for (let r = 0; r <= size; r += 1) {
        await enqueueWorkflowRun(
          db.prisma,
          workflow('count')
            .job('a', `count.${size}`, {})
            .job('b', 'count.next', {})
            .job('c', 'count.next', {})
            .afterSuccess('b', ['a'])
            .afterSuccess('c', ['a'])
            .build(),
        );
      }
      const jobs = await claimType(`count.${size}`);
      expect(jobs).toHaveLength(size + 1);
      const counter = countingClient(db);
      try {
        // Connect and let the client's one-time isolation checks run outside the count.
        await completeJobs(counter.client, [{ ...jobs[0]!, output: 'warm-up' }]);
        const before = counter.count();
        await completeJobs(counter.client, jobs.slice(1));
        return counter.count() - before;
      } finally {
        await counter.close();
      }
    };
    const one = await statements(1);
    const fifty = await statements(50);
    expect(fifty).toBe(one);
    // BEGIN, jobs+events+steps+release locks, one release depth, COMMIT: b and c were released, so
    // the runs are RUNNING as before and need no status recompute (a batch that ends runs adds the two
    // run statements; leaves with no dependents skip the release lock and depth instead).
    expect(one).toBe(4);
  });
});

describe('every precondition before the first write', () => {
  for (const level of ['RepeatableRead', 'Serializable'] as const) {
    it(`a refused ${level} completion, failure or cancellation that the caller commits changed nothing`, async () => {
      const { workflowRunId } = await enqueueWorkflowRun(
        db.prisma,
        workflow('iso').job('a', `iso.${level}`, {}).job('b', 'iso.next', {}).afterSuccess('b', ['a']).build(),
      );
      const [lease] = await claimType(`iso.${level}`);
      const before = await stepsByKey(db.prisma, workflowRunId);
      const attempts: [string, (tx: never) => Promise<unknown>][] = [
        ['complete', (tx) => completeJob(tx, { ...lease!, output: 1 })],
        ['fail', (tx) => failJob(tx, { ...lease!, error: { code: 'x', message: 'y' }, retryable: false })],
        ['cancel', (tx) => cancelJob(tx, { jobId: lease!.jobId, scope: noOrganizationScope() })],
      ];
      for (const [name, attempt] of attempts) {
        const caught = await db.prisma.$transaction(
          async (tx) => {
            const error = await attempt(tx as never).catch((e: unknown) => e);
            await tx.$executeRaw`SELECT 1`; // the transaction is still usable
            return error;
          },
          { isolationLevel: level },
        );
        expect(isRunledgerError(caught) ? caught.code : caught, name).toMatch(/unsupported_isolation$/);
        expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease!.jobId }), name).toMatchObject({ status: 'LEASED' });
        expect(await stepsByKey(db.prisma, workflowRunId), name).toEqual(before);
      }
    });
  }

  it('a direct job still completes inside a REPEATABLE READ transaction', async () => {
    await enqueueJob(db.prisma, { jobType: 'iso.direct', payload: {} });
    const [lease] = await claimType('iso.direct');
    await db.prisma.$transaction(async (tx) => completeJob(tx, lease!), { isolationLevel: 'RepeatableRead' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: lease!.jobId })).toMatchObject({ status: 'SUCCEEDED' });
  });
});

describe("one run's trouble stays in that run", () => {
  it('a batch with one run whose release cannot proceed commits the other runs and reports only that item', async () => {
    const good = await enqueueWorkflowRun(
      db.prisma,
      workflow('good').job('a', 'trouble.job', { run: 'good' }).job('b', 'trouble.next', {}).afterSuccess('b', ['a']).build(),
    );
    const bad = await enqueueWorkflowRun(
      db.prisma,
      workflow('bad').job('a', 'trouble.job', { run: 'bad' }).job('b', 'trouble.next', {}).afterSuccess('b', ['a']).build(),
    );
    const jobs = await claimType('trouble.job');
    const badLease = jobs.find((job) => (job.payload as { run: string }).run === 'bad')!;
    const goodLease = jobs.find((job) => (job.payload as { run: string }).run === 'good')!;
    // A cancellation of the bad run holds its release lock exclusively (and waits), so its release times out.
    const holder = db.newClient({ max: 1 });
    let releaseHolder!: () => void;
    const held = new Promise<void>((resolve) => (releaseHolder = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = holder.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${0x52554e4c}::int, hashtext(${bad.workflowRunId}::text))`;
        locked();
        await held;
      },
      { timeout: 30_000 },
    );
    await isLocked;
    try {
      const outcomes = await completeJobsSettled(db.prisma, [{ lease: badLease }, { lease: goodLease }]);
      expect(outcomes[0]).toMatchObject({ outcome: 'error', error: expect.objectContaining({ code: 'workflow.release_conflict' }) });
      expect(outcomes[1]).toMatchObject({ outcome: 'succeeded' });
    } finally {
      releaseHolder();
      await holding;
    }
    expect((await stepsByKey(db.prisma, good.workflowRunId)).b).toMatchObject({ status: 'ENQUEUED' });
    expect((await stepsByKey(db.prisma, bad.workflowRunId)).a).toMatchObject({ status: 'RUNNING' });
    expect(await getJob(db.prisma, { scope: noOrganizationScope(), jobId: badLease.jobId })).toMatchObject({ status: 'LEASED' });
  });
});
