/**
 * Real concurrent transactions against the lock protocol: intersecting
 * fan-outs, completion racing cancellation, a corrupt cross-run edge, and the
 * READ COMMITTED guard.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  cancelWorkflowRun,
  claimJobs,
  completeExternalWorkflowStep,
  completeJob,
  enqueueWorkflowRun,
  getJob,
  getWorkflowRun,
  noOrganizationScope,
  isRunledgerError,
  workflow,
  type ClaimedJob,
} from '../../src/index.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier, claimAll, listenForRunTerminal, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let clients: PrismaClient[];
beforeAll(() => {
  clients = Array.from({ length: 20 }, () => db.newClient({ max: 1 }));
});

/** The outcome of a promise as a value: 'ok' or the RunledgerError code; anything else fails the test. */
async function settle(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (isRunledgerError(error)) return error.code;
    throw error;
  }
}

describe('workflow concurrency', () => {
  it('completes 20 prerequisites from 20 connections sharing 200 dependents: exact counters, each dependent released once', async () => {
    const builder = workflow('fan-in');
    const roots = Array.from({ length: 20 }, (_, i) => `p${i}`);
    for (const key of roots) builder.job(key, 'fanin.root', { key });
    for (let i = 0; i < 200; i += 1) builder.job(`d${i}`, 'fanin.dependent', { i }).afterSuccess(`d${i}`, roots);
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.build());
    const jobs = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['fanin.root'], limit: 20, leaseSeconds: 300, markRunning: true });
    expect(jobs).toHaveLength(20);

    const start = barrier(20);
    const outcomes = await Promise.all(
      jobs.map((job, i) =>
        settle(
          (async () => {
            await start();
            await completeJob(clients[i]!, { ...job, output: { ok: i } });
          })(),
        ),
      ),
    );
    expect(outcomes).toEqual(jobs.map(() => 'ok'));
    const steps = Object.values(await stepsByKey(db.prisma, workflowRunId));
    const dependents = steps.filter((s) => s.stepKey.startsWith('d'));
    expect(dependents).toHaveLength(200);
    for (const step of dependents) {
      expect(step).toMatchObject({ status: 'ENQUEUED', dependencyCountTotal: 20, dependencyCountPending: 0, dependencyCountUnsatisfied: 0 });
      expect(step.jobId).not.toBeNull();
    }
    const [released] = await db.prisma.$queryRaw<{ jobs: number; enqueued_events: number }[]>`
      SELECT count(DISTINCT jq.id)::int AS jobs, count(je.id)::int AS enqueued_events
        FROM runledger.job_queue jq
        JOIN runledger.job_trail je ON je.job_id = jq.id AND je.event_type = 'ENQUEUED'
       WHERE jq.job_type = 'fanin.dependent'`;
    expect(released).toEqual({ jobs: 200, enqueued_events: 200 });
  });

  it('lets a job completion or the cancellation win wholly, 50 rounds', async () => {
    const tally: Record<string, number> = {};
    for (let round = 0; round < 50; round += 1) {
      const { workflowRunId } = await enqueueWorkflowRun(
        db.prisma,
        workflow('race-job')
          .job('a', 'race.a', { round })
          .job('b', 'race.b', {})
          .job('c', 'race.c', {})
          .afterSuccess('b', ['a'])
          .afterTerminal('c', ['a'])
          .build(),
      );
      const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['race.a'], limit: 1, leaseSeconds: 300, markRunning: true });
      const start = barrier(2);
      const [completion, cancellation] = await Promise.all([
        settle(
          (async () => {
            await start();
            return completeJob(clients[0]!, { ...job!, output: round });
          })(),
        ),
        settle(
          (async () => {
            await start();
            return cancelWorkflowRun(clients[1]!, { workflowRunId, scope: noOrganizationScope() });
          })(),
        ),
      ]);
      expect(cancellation).toBe('ok');
      expect(['ok', 'job.lease_owner_mismatch', 'workflow.release_conflict']).toContain(completion);
      tally[completion] = (tally[completion] ?? 0) + 1;
      await expectWholeOutcome(workflowRunId, job!, completion === 'ok');
    }
    expect(Object.values(tally).reduce((a, b) => a + b, 0)).toBe(50);
  });

  it('lets an external completion or the cancellation win wholly, 50 rounds', async () => {
    for (let round = 0; round < 50; round += 1) {
      const { workflowRunId } = await enqueueWorkflowRun(
        db.prisma,
        workflow('race-external').external('approve').job('ship', 'race.ship', {}).afterSuccess('ship', ['approve']).build(),
      );
      const start = barrier(2);
      const [completion, cancellation] = await Promise.all([
        settle(
          (async () => {
            await start();
            return completeExternalWorkflowStep(clients[2]!, {
              workflowRunId,
              stepKey: 'approve',
              scope: noOrganizationScope(),
              outcome: { status: 'succeeded', output: round },
            });
          })(),
        ),
        settle(
          (async () => {
            await start();
            return cancelWorkflowRun(clients[3]!, { workflowRunId, scope: noOrganizationScope() });
          })(),
        ),
      ]);
      expect(cancellation).toBe('ok');
      expect(['ok', 'workflow.release_conflict', 'workflow.external_step_conflicting_completion_retry']).toContain(completion);
      const steps = await stepsByKey(db.prisma, workflowRunId);
      const run = await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId });
      expect(run.status).toBe('CANCELED');
      if (completion === 'ok') {
        expect(steps.approve).toMatchObject({ status: 'SUCCEEDED', output: round });
        // Released before the cancellation, then canceled with its job.
        expect(steps.ship!.status).toBe('CANCELED');
        expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: steps.ship!.jobId! })).status).toBe('CANCELED');
      } else {
        expect(steps.approve!.status).toBe('CANCELED');
        expect(steps.ship).toMatchObject({ status: 'CANCELED', jobId: null });
      }
      await expectNothingLeftRunnable(workflowRunId);
    }
  });

  async function expectWholeOutcome(workflowRunId: string, job: ClaimedJob, completionWon: boolean): Promise<void> {
    const run = await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId });
    expect(run.status).toBe('CANCELED');
    const steps = await stepsByKey(db.prisma, workflowRunId);
    const jobA = await getJob(db.prisma, { scope: noOrganizationScope(), jobId: job.jobId });
    if (completionWon) {
      expect(jobA.status).toBe('SUCCEEDED');
      expect(steps.a!.status).toBe('SUCCEEDED');
      for (const key of ['b', 'c']) {
        expect(steps[key]!.status).toBe('CANCELED');
        expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: steps[key]!.jobId! })).status).toBe('CANCELED');
      }
    } else {
      expect(jobA.status).toBe('CANCELED');
      expect(Object.values(steps).map((s) => s.status)).toEqual(['CANCELED', 'CANCELED', 'CANCELED']);
      expect(steps.b!.jobId).toBeNull();
      expect(steps.c!.jobId).toBeNull();
    }
    await expectNothingLeftRunnable(workflowRunId);
  }

  /** After a cancellation nothing of the run can run any more: no step or job is left non-terminal. */
  async function expectNothingLeftRunnable(workflowRunId: string): Promise<void> {
    const [row] = await db.prisma.$queryRaw<{ open_steps: number; open_jobs: number }[]>`
      SELECT count(*) FILTER (WHERE ws.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED'))::int AS open_steps,
             count(*) FILTER (WHERE jq.status IN ('PENDING', 'LEASED'))::int AS open_jobs
        FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
       WHERE ws.workflow_run_id = ${workflowRunId}::uuid`;
    expect(row).toEqual({ open_steps: 0, open_jobs: 0 });
  }

  it('answers duplicate concurrent external completions with one transition and one release', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('dup-external').external('approve').job('ship', 'dup.ship', {}).afterSuccess('ship', ['approve']).build(),
    );
    const start = barrier(10);
    const input = { workflowRunId, stepKey: 'approve', scope: noOrganizationScope(), outcome: { status: 'succeeded' as const, output: { by: 'ana' } } };
    const outcomes = await Promise.all(
      clients.slice(0, 10).map((client) =>
        settle(
          (async () => {
            await start();
            return completeExternalWorkflowStep(client, input);
          })(),
        ),
      ),
    );
    expect(outcomes).toEqual(Array(10).fill('ok'));
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.approve).toMatchObject({ status: 'SUCCEEDED', output: { by: 'ana' } });
    expect(steps.ship).toMatchObject({ status: 'ENQUEUED', dependencyCountPending: 0 });
    const [jobs] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = 'dup.ship'`;
    expect(jobs!.n).toBe(1);
  });

  it('lets exactly one of two conflicting concurrent external completions win', async () => {
    for (let round = 0; round < 10; round += 1) {
      const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('conflict-external').external('approve').build());
      const start = barrier(2);
      const base = { workflowRunId, stepKey: 'approve', scope: noOrganizationScope() };
      const outcomes = await Promise.all([
        settle(
          (async () => {
            await start();
            return completeExternalWorkflowStep(clients[0]!, { ...base, outcome: { status: 'succeeded' } });
          })(),
        ),
        settle(
          (async () => {
            await start();
            return completeExternalWorkflowStep(clients[1]!, { ...base, outcome: { status: 'failed' } });
          })(),
        ),
      ]);
      expect(outcomes.filter((o) => o === 'ok')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'workflow.external_step_conflicting_completion_retry')).toHaveLength(1);
      const status = (await stepsByKey(db.prisma, workflowRunId)).approve!.status;
      expect(status).toBe(outcomes[0] === 'ok' ? 'SUCCEEDED' : 'FAILED');
    }
  });

  it('fails closed on a cross-run edge: workflow.internal_state, nothing changed, no notification', async () => {
    const listener = await listenForRunTerminal(db.url);
    try {
      const one = await enqueueWorkflowRun(db.prisma, workflow('corrupt').job('a', 'corrupt.a', {}).build());
      const two = await enqueueWorkflowRun(
        db.prisma,
        workflow('corrupt-other').job('x', 'corrupt.x', {}).job('y', 'corrupt.y', {}).afterSuccess('y', ['x']).build(),
      );
      const a = (await stepsByKey(db.prisma, one.workflowRunId)).a!;
      const y = (await stepsByKey(db.prisma, two.workflowRunId)).y!;
      // An edge recorded in run one whose dependent lives in run two: the schema refuses it ((run, step) foreign
      // keys); only a session that disables foreign-key triggers can store it. The runtime check is defence in depth.
      const refused = await db.prisma.$executeRaw`
        INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
        VALUES (${a.id}::uuid, ${y.id}::uuid, ${one.workflowRunId}::uuid, 'ON_SUCCESS')`.catch((e: unknown) => e);
      expect(String((refused as Error).message)).toContain('workflow_step_dependencies_dependent_fkey');
      await db.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`SET LOCAL session_replication_role = replica`;
        await tx.$executeRaw`
          INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
          VALUES (${a.id}::uuid, ${y.id}::uuid, ${one.workflowRunId}::uuid, 'ON_SUCCESS')`;
      });
      const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['corrupt.a'], limit: 1, leaseSeconds: 300, markRunning: true });
      const snapshot = async () =>
        db.prisma.$queryRaw`
          SELECT ws.id, ws.status, ws.dependency_count_pending, ws.dependency_count_unsatisfied, ws.updated_at, jq.status AS job_status, jq.updated_at AS job_updated
            FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
           WHERE ws.workflow_run_id IN (${one.workflowRunId}::uuid, ${two.workflowRunId}::uuid) ORDER BY ws.id`;
      const before = await snapshot();
      const error = await completeJob(db.prisma, { ...job!, output: 1 }).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'workflow.internal_state')).toBe(true);
      expect((error as { category: string }).category).toBe('internal');
      expect(await snapshot()).toEqual(before);
      expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId: one.workflowRunId })).status).toBe('RUNNING');

      // The same with the edge recorded in the other run.
      await db.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`SET LOCAL session_replication_role = replica`;
        await tx.$executeRaw`
          UPDATE runledger.workflow_step_dependencies SET workflow_run_id = ${two.workflowRunId}::uuid
           WHERE prerequisite_step_id = ${a.id}::uuid`;
      });
      const again = await completeJob(db.prisma, { ...job!, output: 1 }).catch((e: unknown) => e);
      expect(isRunledgerError(again, 'workflow.internal_state')).toBe(true);
      expect(await snapshot()).toEqual(before);
      await listener.flush();
      expect(listener.received).toEqual([]);
    } finally {
      await listener.close();
    }
  });

  it("turns a bounded wait for the release lock into workflow.release_conflict and keeps the caller's lock_timeout", async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('bounded').job('a', 'bounded.a', {}).job('b', 'bounded.b', {}).afterSuccess('b', ['a']).build(),
    );
    const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['bounded.a'], limit: 1, leaseSeconds: 300, markRunning: true });
    const holder = db.newPool({ max: 1 });
    const connection = await holder.connect();
    try {
      // Stand in for a cancellation that holds the exclusive release lock.
      await connection.query('BEGIN');
      await connection.query("SELECT pg_advisory_xact_lock(x'52554e4c'::int, hashtext($1::text))", [workflowRunId]);
      const started = Date.now();
      const error = await completeJob(db.prisma, { ...job!, output: 1 }).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'workflow.release_conflict')).toBe(true);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: job!.jobId })).status).toBe('LEASED');
    } finally {
      await connection.query('ROLLBACK');
      connection.release();
    }
    const setting = await db.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL lock_timeout = '7s'`;
      await completeJob(tx, { ...job!, output: 1 });
      return tx.$queryRaw<{ v: string }[]>`SELECT current_setting('lock_timeout') AS v`;
    });
    expect(setting[0]!.v).toBe('7s');
    expect((await stepsByKey(db.prisma, workflowRunId)).b!.status).toBe('ENQUEUED');
  });

  it('refuses a workflow job completion inside a SERIALIZABLE caller transaction', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('iso').job('a', 'iso.a', {}).build());
    const [job] = await claimAll(db.prisma);
    const error = await db.prisma.$transaction((tx) => completeJob(tx, { ...job!, output: 1 }), { isolationLevel: 'Serializable' }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'workflow.terminal_completion_unsupported_isolation')).toBe(true);
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId: job!.jobId })).status).toBe('LEASED');
    expect((await stepsByKey(db.prisma, workflowRunId)).a!.status).toBe('RUNNING');
  });
});
