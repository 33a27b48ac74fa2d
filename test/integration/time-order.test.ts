/**
 * Time follows cause (SPEC §7): a transition time written after a lock wait,
 * or in a transaction that began before the commit it depends on, is never
 * earlier than the times it depends on. Each case starts a transaction first
 * (its now() is then earlier than everything that follows), lets another
 * connection commit the cause, and only then writes the effect in the early
 * transaction. Without the fixes each one stores the effect before its cause,
 * and verifyIntegrity names it; the last block seeds each corruption by hand.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  appendWorkflowSteps,
  cancelJob,
  cancelWorkflowRun,
  claimJobs,
  completeExternalWorkflowStep,
  completeJobs,
  completeJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  noOrganizationScope,
  verifyIntegrity,
  workflow,
  type ClaimedJob,
  type Db,
  type IntegrityViolation,
} from '../../src/index.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { corrupter, only } from '../harness/corruption.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier, claimOne } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let clients: PrismaClient[];
beforeAll(() => {
  clients = Array.from({ length: 4 }, () => db.newClient({ max: 1 }));
});

const scope = noOrganizationScope();
const TIME_KINDS = [
  'edge.released_before_prerequisite_finished',
  'step.finished_before_released',
  'step.job_created_before_release',
  'run.finished_before_step',
  'job.finished_before_started',
];

/** The time-order violations of these runs (and their jobs). */
async function timeViolations(workflowRunIds: string[]): Promise<IntegrityViolation[]> {
  const report = await verifyIntegrity(db.prisma, { workflowRunIds });
  return report.violations.filter((v) => TIME_KINDS.includes(v.kind));
}

/**
 * Runs `effect` in a transaction of `client` that began (and read its now()) before `cause` ran and
 * committed on another connection.
 */
async function effectAfterCause<T>(client: PrismaClient, cause: () => Promise<unknown>, effect: (tx: Db) => Promise<T>): Promise<T> {
  return client.$transaction(
    async (tx) => {
      await tx.$queryRaw`SELECT now()`;
      await cause();
      return effect(tx as unknown as Db);
    },
    { timeout: 30_000 },
  );
}

/** Microsecond-exact comparisons, in SQL (a JavaScript Date keeps milliseconds). */
async function stepTimes(
  workflowRunId: string,
): Promise<Record<string, { released: string | null; finished: string | null; job_finished: string | null; job_created: string | null }>> {
  const rows = await db.prisma.$queryRaw<
    { step_key: string; released: string | null; finished: string | null; job_finished: string | null; job_created: string | null }[]
  >`
    SELECT ws.step_key, ws.released_at::text AS released, ws.finished_at::text AS finished,
           jq.finished_at::text AS job_finished, jq.created_at::text AS job_created
      FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
     WHERE ws.workflow_run_id = ${workflowRunId}::uuid`;
  return Object.fromEntries(rows.map(({ step_key, ...times }) => [step_key, times]));
}

async function isOrdered(earlier: string, later: string): Promise<boolean> {
  const [row] = await db.prisma.$queryRaw<{ ok: boolean }[]>`SELECT ${earlier}::timestamptz <= ${later}::timestamptz AS ok`;
  return row!.ok;
}

/** The pid's backend is waiting for a lock (the waiting side of a real lock wait). */
async function waitUntilBlocked(pid: number): Promise<void> {
  for (let i = 0; i < 2_000; i += 1) {
    const [row] = await db.prisma.$queryRaw<{ waiting: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}::int AND wait_event_type = 'Lock') AS waiting`;
    if (row!.waiting) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`backend ${pid} never waited for a lock`);
}

describe('time follows cause', () => {
  it('a dependent whose last prerequisite completes in a batch that waited for the other batch is released after both finished', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.fanin').job('a', 'to.fanin.a', {}).job('b', 'to.fanin.b', {}).job('d', 'to.fanin.d', {}).afterSuccess('d', ['a', 'b']).build(),
    );
    const a = await claimOne(db.prisma, 'to.fanin.a', { markRunning: true });
    const b = await claimOne(db.prisma, 'to.fanin.b', { markRunning: true });
    // Batch B begins first (its now() is the earliest), then batch A completes a and holds d's row lock;
    // B completes b, waits for d's lock, and once A commits it is the one that releases d.
    let releaseA!: () => void;
    const aMayCommit = new Promise<void>((resolve) => (releaseA = resolve));
    let bStarted!: (pid: number) => void;
    const bPid = new Promise<number>((resolve) => (bStarted = resolve));
    let aHoldsD!: () => void;
    const aCompleted = new Promise<void>((resolve) => (aHoldsD = resolve));
    const batchB = clients[0]!.$transaction(
      async (tx) => {
        const [row] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid, now()`;
        bStarted(row!.pid);
        await aCompleted;
        return completeJobs(tx, [{ ...b, output: 'b' }]);
      },
      { timeout: 30_000 },
    );
    const batchA = clients[1]!.$transaction(
      async (tx) => {
        await bPid;
        const outcome = await completeJobs(tx, [{ ...a, output: 'a' }]);
        aHoldsD();
        await aMayCommit;
        return outcome;
      },
      { timeout: 30_000 },
    );
    await waitUntilBlocked(await bPid);
    releaseA();
    await Promise.all([batchA, batchB]);

    const times = await stepTimes(workflowRunId);
    expect(times.d!.released).not.toBeNull();
    for (const prerequisite of ['a', 'b']) {
      expect(await isOrdered(times[prerequisite]!.finished!, times.d!.released!)).toBe(true);
      expect(await isOrdered(times[prerequisite]!.job_finished!, times.d!.released!)).toBe(true);
    }
    expect(await isOrdered(times.d!.released!, times.d!.job_created!)).toBe(true);
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
  });

  it('concurrent completion batches over shared dependents never release one before a prerequisite finished', async () => {
    // 12 runs of 4 roots sharing one dependent; 4 batches, each one root of every run. Batches 0-2 begin
    // first; batch 3 begins after them, completes its roots (holding every dependent's row) and lets them
    // go; they wait for the dependents' rows and, once batch 3 commits, one of them releases each
    // dependent, in a transaction whose now() precedes batch 3's finish times.
    const runs = await Promise.all(
      Array.from({ length: 12 }, (_, i) => {
        const builder = workflow(`to.batch.${i}`);
        const roots: string[] = ['r0', 'r1', 'r2', 'r3'];
        for (const root of roots) builder.job(root, `to.batch.${root}`, { i });
        // Keys added in a loop are typed string, checked by build() (the typed builder refuses unseen literals).
        return enqueueWorkflowRun(db.prisma, builder.job('d', 'to.batch.d', {}).afterSuccess('d', roots).build());
      }),
    );
    const byRoot: ClaimedJob[][] = [];
    for (const root of ['r0', 'r1', 'r2', 'r3']) {
      byRoot.push(await claimJobs(db.prisma, { workerId: 'w', jobTypes: [`to.batch.${root}`], limit: 100, leaseSeconds: 600, markRunning: true }));
    }
    expect(byRoot.map((jobs) => jobs.length)).toEqual([12, 12, 12, 12]);

    const earlyBegun = barrier(4);
    let lateHolds!: () => void;
    const lateCompleted = new Promise<void>((resolve) => (lateHolds = resolve));
    const pids: Promise<number>[] = [];
    const early = byRoot.slice(0, 3).map((jobs, i) => {
      let begun!: (pid: number) => void;
      pids.push(new Promise<number>((resolve) => (begun = resolve)));
      return clients[i]!.$transaction(
        async (tx) => {
          const [row] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid, now()`;
          begun(row!.pid);
          await earlyBegun();
          await lateCompleted;
          return completeJobs(
            tx,
            jobs.map((job) => ({ ...job, output: i })),
          );
        },
        { timeout: 30_000 },
      );
    });
    const late = (async () => {
      await earlyBegun();
      return clients[3]!.$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT now()`;
          const outcome = await completeJobs(
            tx,
            byRoot[3]!.map((job) => ({ ...job, output: 3 })),
          );
          lateHolds();
          for (const pid of pids) await waitUntilBlocked(await pid);
          return outcome;
        },
        { timeout: 30_000 },
      );
    })();
    await Promise.all([...early, late]);
    const runIds = runs.map((run) => run.workflowRunId);
    expect(await timeViolations(runIds)).toEqual([]);
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: runIds })).violations).toEqual([]);
  });

  it('a cascade cancel after a lock wait is not earlier than the prerequisite that finished meanwhile', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.cascade')
        .job('x', 'to.cascade.x', {})
        .job('a', 'to.cascade.a', {})
        .job('b', 'to.cascade.b', {})
        .job('c', 'to.cascade.c', {})
        .afterSuccess('b', ['x', 'a'])
        .afterSuccess('c', ['b'])
        .build(),
    );
    const x = await claimOne(db.prisma, 'to.cascade.x', { markRunning: true });
    const a = await claimOne(db.prisma, 'to.cascade.a', { markRunning: true });
    await effectAfterCause(
      clients[0]!,
      () => completeJob(db.prisma, { ...x, output: 1 }),
      (tx) => failJob(tx, { ...a, error: { code: 'to.failed', message: 'no' }, retryable: false }),
    );
    const times = await stepTimes(workflowRunId);
    expect(await isOrdered(times.x!.job_finished!, times.b!.finished!)).toBe(true);
    expect(await isOrdered(times.b!.finished!, times.c!.finished!)).toBe(true);
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
  });

  it('a run that ends in a transaction begun before another step finished ends after that step', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('to.leaves').job('a', 'to.leaves.a', {}).job('b', 'to.leaves.b', {}).build());
    const a = await claimOne(db.prisma, 'to.leaves.a', { markRunning: true });
    const b = await claimOne(db.prisma, 'to.leaves.b', { markRunning: true });
    await effectAfterCause(
      clients[0]!,
      () => completeJob(db.prisma, { ...a, output: 1 }),
      (tx) => completeJob(tx, { ...b, output: 2 }),
    );
    expect(await timeViolations([workflowRunId])).toEqual([]);
    const [run] = await db.prisma.$queryRaw<{ ok: boolean }[]>`
      SELECT r.finished_at >= max(ws.finished_at) AS ok FROM runledger.workflow_runs r JOIN runledger.workflow_steps ws ON ws.workflow_run_id = r.id
       WHERE r.id = ${workflowRunId}::uuid GROUP BY r.finished_at`;
    expect(run!.ok).toBe(true);
  });

  it('canceling a run after a release committed cancels the released step, its job and the run no earlier', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.cancel').job('a', 'to.cancel.a', {}).job('b', 'to.cancel.b', {}).afterSuccess('b', ['a']).build(),
    );
    const a = await claimOne(db.prisma, 'to.cancel.a', { markRunning: true });
    await effectAfterCause(
      clients[0]!,
      () => completeJob(db.prisma, { ...a, output: 1 }),
      (tx) => cancelWorkflowRun(tx, { workflowRunId, scope }),
    );
    const times = await stepTimes(workflowRunId);
    expect(await isOrdered(times.b!.released!, times.b!.finished!)).toBe(true);
    expect(await isOrdered(times.b!.job_created!, times.b!.job_finished!)).toBe(true);
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
  });

  it('canceling a job claimed after the cancellation began finishes it no earlier than its start', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'to.job.cancel', payload: {} });
    await effectAfterCause(
      clients[0]!,
      () => claimOne(db.prisma, 'to.job.cancel', { markRunning: true }),
      (tx) => cancelJob(tx, { jobId, scope }),
    );
    const report = await verifyIntegrity(db.prisma);
    expect(report.violations.filter((v) => v.jobId === jobId)).toEqual([]);
  });

  it('canceling a workflow job released after the cancellation began finishes it no earlier than its creation', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.jobcancel').job('a', 'to.jobcancel.a', {}).job('b', 'to.jobcancel.b', {}).afterSuccess('b', ['a']).build(),
    );
    const a = await claimOne(db.prisma, 'to.jobcancel.a', { markRunning: true });
    await effectAfterCause(
      clients[0]!,
      () => completeJob(db.prisma, { ...a, output: 1 }),
      async (tx) => {
        const [b] = await tx.$queryRaw<{ job_id: string }[]>`
          SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = 'b'`;
        return cancelJob(tx, { jobId: b!.job_id, scope });
      },
    );
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
  });

  it('completing an external step released after the completion began finishes it no earlier than its release', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.external').job('a', 'to.external.a', {}).external('e').afterSuccess('e', ['a']).build(),
    );
    const a = await claimOne(db.prisma, 'to.external.a', { markRunning: true });
    await effectAfterCause(
      clients[0]!,
      () => completeJob(db.prisma, { ...a, output: 1 }),
      (tx) => completeExternalWorkflowStep(tx, { workflowRunId, stepKey: 'e', scope, outcome: { status: 'succeeded', output: 'ok' } }),
    );
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
  });

  it('an append after a prerequisite finished releases and cancels the new steps no earlier than it finished', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.append').job('a', 'to.append.a', {}).job('f', 'to.append.f', {}).external('window').build(),
    );
    const a = await claimOne(db.prisma, 'to.append.a', { markRunning: true });
    const f = await claimOne(db.prisma, 'to.append.f', { markRunning: true });
    await failJob(db.prisma, { ...f, error: { code: 'to.failed', message: 'no' }, retryable: false });
    await effectAfterCause(
      clients[0]!,
      () => completeJob(db.prisma, { ...a, output: 1 }),
      (tx) =>
        appendWorkflowSteps(tx, {
          workflowRunId,
          scope,
          mutationKey: 'later',
          steps: [
            { key: 'after-a', kind: 'job', jobType: 'to.append.next', payload: {} },
            { key: 'after-f', kind: 'job', jobType: 'to.append.next', payload: {} },
          ],
          edges: [
            { prerequisite: 'a', dependent: 'after-a' },
            { prerequisite: 'f', dependent: 'after-f' },
          ],
        }),
    );
    const times = await stepTimes(workflowRunId);
    expect(await isOrdered(times.a!.finished!, times['after-a']!.released!)).toBe(true);
    expect(await isOrdered(times['after-a']!.released!, times['after-a']!.job_created!)).toBe(true);
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
  });
});

describe('verifyIntegrity: time order (seeded corruption)', () => {
  const corrupt = corrupter(db);

  it('names each timestamp written before its cause', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.seeded').job('a', 'to.seeded.a', {}).job('b', 'to.seeded.b', {}).external('e').afterSuccess('b', ['a']).afterSuccess('e', ['a']).build(),
    );
    const a = await claimOne(db.prisma, 'to.seeded.a', { markRunning: true });
    await completeJob(db.prisma, { ...a, output: 1 });
    const b = await claimOne(db.prisma, 'to.seeded.b', { markRunning: true });
    await completeJob(db.prisma, { ...b, output: 2 });
    await completeExternalWorkflowStep(db.prisma, { workflowRunId, stepKey: 'e', scope, outcome: { status: 'succeeded' } });
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
    const step = (key: string) => `(SELECT id FROM runledger.workflow_steps WHERE workflow_run_id = $1 AND step_key = '${key}')`;

    // b released a second before a finished (step and job).
    await corrupt(
      `UPDATE runledger.workflow_steps SET released_at = (SELECT finished_at FROM runledger.workflow_steps WHERE id = ${step('a')}) - interval '1 second' WHERE id = ${step('b')}`,
      [workflowRunId],
    );
    // e finished before it was released.
    await corrupt(`UPDATE runledger.workflow_steps SET finished_at = released_at - interval '1 second' WHERE id = ${step('e')}`, [workflowRunId]);
    // The run finished before its last step.
    await corrupt(`UPDATE runledger.workflow_runs SET finished_at = finished_at - interval '1 hour' WHERE id = $1`, [workflowRunId]);
    // b's job finished before it started.
    await corrupt(`UPDATE runledger.job_queue SET finished_at = started_at - interval '1 second' WHERE id = $1`, [b.jobId]);
    // a's job created a day before its step was released.
    await corrupt(`UPDATE runledger.job_queue SET created_at = created_at - interval '1 day' WHERE id = $1`, [a.jobId]);

    const violations = (await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations;
    expect(only(violations, 'edge.released_before_prerequisite_finished')).toEqual([
      expect.objectContaining({ workflowRunId, stepKey: 'b', found: expect.objectContaining({ releasedAt: expect.any(String) }) }),
    ]);
    expect(only(violations, 'step.finished_before_released')).toEqual(expect.arrayContaining([expect.objectContaining({ workflowRunId, stepKey: 'e' })]));
    expect(only(violations, 'run.finished_before_step')).toEqual([expect.objectContaining({ workflowRunId })]);
    expect(only(violations, 'job.finished_before_started')).toEqual([expect.objectContaining({ jobId: b.jobId })]);
    expect(only(violations, 'step.job_created_before_release')).toEqual([expect.objectContaining({ stepKey: 'a', jobId: a.jobId })]);
  });

  it('names a dependent canceled as unsatisfied before its failed prerequisite finished', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('to.seeded.cancel').job('a', 'to.seeded.cancel.a', {}).job('b', 'to.seeded.cancel.b', {}).afterSuccess('b', ['a']).build(),
    );
    const a = await claimOne(db.prisma, 'to.seeded.cancel.a', { markRunning: true });
    await failJob(db.prisma, { ...a, error: { code: 'to.failed', message: 'no' }, retryable: false });
    expect((await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations).toEqual([]);
    await corrupt(`UPDATE runledger.job_queue SET finished_at = finished_at + interval '1 minute' WHERE id = $1`, [a.jobId]);
    const violations = (await verifyIntegrity(db.prisma, { workflowRunIds: [workflowRunId] })).violations;
    expect(only(violations, 'edge.released_before_prerequisite_finished')).toEqual([
      expect.objectContaining({
        stepKey: 'b',
        found: expect.objectContaining({ canceledAt: expect.any(String), prerequisiteJobFinishedAt: expect.any(String) }),
      }),
    ]);
  });
});
