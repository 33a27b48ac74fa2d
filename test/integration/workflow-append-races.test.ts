/**
 * Appends racing completion of their prerequisite and racing cancellation of
 * their run, with real concurrent transactions. Each order is forced: one
 * side holds its transaction open (its locks taken) until the other is seen
 * waiting for a lock in pg_stat_activity, or has been refused. The final
 * state must equal the state the same two operations leave in serial order.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  appendWorkflowSteps,
  cancelWorkflowRun,
  claimJobs,
  completeJob,
  enqueueWorkflowRun,
  noOrganizationScope,
  workflow,
  type AppendWorkflowStepsInput,
  type ClaimedJob,
  type Tx,
} from '../../src/index.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { useTestDatabase } from '../harness/database.js';
import { listenForRunTerminal } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let first: PrismaClient;
let second: PrismaClient;
beforeAll(() => {
  first = db.newClient({ max: 1 });
  second = db.newClient({ max: 1 });
});

/** A transaction that runs `work`, then stays open (locks held) until `release()`. */
function held<T>(client: PrismaClient, work: (tx: Tx) => Promise<T>): { ready: Promise<T>; release: () => void; done: Promise<T> } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let ready!: (value: T) => void;
  let failed!: (error: unknown) => void;
  const readyPromise = new Promise<T>((resolve, reject) => {
    ready = resolve;
    failed = reject;
  });
  const done = client.$transaction(
    async (tx) => {
      try {
        const result = await work(tx as unknown as Tx);
        ready(result);
        await gate;
        return result;
      } catch (error) {
        failed(error);
        throw error;
      }
    },
    { timeout: 30_000 },
  );
  done.catch(() => undefined);
  return { ready: readyPromise, release, done };
}

/** Resolves once `n` sessions of this database wait for a lock (the forced order has happened). */
async function lockWaiters(n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
    if (row!.n >= n) return;
    if (Date.now() > deadline) throw new Error(`no session waited for a lock within 10 s (saw ${row!.n})`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

interface Fixture {
  workflowRunId: string;
  lease: ClaimedJob;
  append: AppendWorkflowStepsInput;
}

/**
 * A run whose job step `p` is leased; `withDependent`: p also has an existing
 * dependent (no leaf shortcut); `hold`: an open external step keeps the run
 * from ending when p does.
 */
async function fixture(tag: string, withDependent: boolean, hold = true): Promise<Fixture> {
  const builder = workflow(`race.${tag}`).job('p', `race.${tag}.p`, {});
  if (hold) builder.external('hold');
  if (withDependent) builder.job('q', `race.${tag}.q`, {}).afterSuccess('q', ['p']);
  const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.build());
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [`race.${tag}.p`], limit: 1, leaseSeconds: 60, markRunning: true });
  return {
    workflowRunId,
    lease: lease!,
    append: {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'race',
      steps: [
        { kind: 'job', key: 'n', jobType: `race.${tag}.n`, payload: {} },
        { kind: 'external', key: 'after' },
      ],
      edges: [
        { prerequisite: 'p', dependent: 'n' },
        { prerequisite: 'n', dependent: 'after', mode: 'on_terminal' },
      ],
    },
  };
}

/** Everything the race could get wrong, without ids. */
async function state(workflowRunId: string) {
  const steps = await db.prisma.$queryRaw<
    { step_key: string; status: string; pending: number; unsatisfied: number; job_status: string | null; jobs: number }[]
  >`
    SELECT ws.step_key, ws.status::text, ws.dependency_count_pending AS pending, ws.dependency_count_unsatisfied AS unsatisfied,
           jq.status::text AS job_status,
           (SELECT count(*)::int FROM runledger.job_queue j WHERE j.workflow_step_id = ws.id) AS jobs
      FROM runledger.workflow_steps ws LEFT JOIN runledger.job_queue jq ON jq.id = ws.job_id
     WHERE ws.workflow_run_id = ${workflowRunId}::uuid
     ORDER BY ws.step_key`;
  const [run] = await db.prisma.$queryRaw<{ status: string }[]>`SELECT status::text FROM runledger.workflow_runs WHERE id = ${workflowRunId}::uuid`;
  return { run: run!.status, steps };
}

describe('append racing completion of its prerequisite', () => {
  for (const withDependent of [false, true]) {
    const kind = withDependent ? 'a prerequisite with dependents' : 'a leaf prerequisite';

    it(`${kind}: the append first, the completion waiting for its step row`, async () => {
      const serial = await fixture(`c1s${Number(withDependent)}`, withDependent);
      await appendWorkflowSteps(db.prisma, serial.append);
      await completeJob(db.prisma, { ...serial.lease, output: 1 });

      const raced = await fixture(`c1r${Number(withDependent)}`, withDependent);
      const append = held(first, (tx) => appendWorkflowSteps(tx, raced.append));
      expect((await append.ready).steps.map((s) => s.status)).toEqual(['BLOCKED', 'BLOCKED']);
      const completion = completeJob(second, { ...raced.lease, output: 1 });
      await lockWaiters(1);
      append.release();
      await append.done;
      await completion;

      const final = await state(raced.workflowRunId);
      expect(final.steps.find((s) => s.step_key === 'n')).toMatchObject({ status: 'ENQUEUED', pending: 0, job_status: 'PENDING', jobs: 1 });
      expect(final).toEqual(await state(serial.workflowRunId));
    });

    it(`${kind}: the completion first, the append waiting for the step row`, async () => {
      const serial = await fixture(`c2s${Number(withDependent)}`, withDependent);
      await completeJob(db.prisma, { ...serial.lease, output: 1 });
      await appendWorkflowSteps(db.prisma, serial.append);

      const raced = await fixture(`c2r${Number(withDependent)}`, withDependent);
      const completion = held(first, (tx) => completeJob(tx, { ...raced.lease, output: 1 }));
      await completion.ready;
      const append = appendWorkflowSteps(second, raced.append);
      await lockWaiters(1);
      completion.release();
      await completion.done;
      expect((await append).steps.map((s) => [s.stepKey, s.status])).toEqual([
        ['n', 'ENQUEUED'],
        ['after', 'BLOCKED'],
      ]);

      const final = await state(raced.workflowRunId);
      expect(final.steps.find((s) => s.step_key === 'n')).toMatchObject({ status: 'ENQUEUED', pending: 0, jobs: 1 });
      expect(final).toEqual(await state(serial.workflowRunId));
    });
  }

  it('never announces the end of a run that then receives steps', async () => {
    const listener = await listenForRunTerminal(db.url);
    try {
      // Control: without the append, completing p ends the run and announces it.
      const control = await fixture('notify-control', false, false);
      await completeJob(db.prisma, { ...control.lease, output: 1 });
      await listener.flush();
      expect(listener.received.filter((n) => n.workflow_run_id === control.workflowRunId)).toEqual([
        { workflow_run_id: control.workflowRunId, status: 'SUCCEEDED' },
      ]);

      const raced = await fixture('notify', false, false);
      const append = held(first, (tx) => appendWorkflowSteps(tx, raced.append));
      await append.ready;
      const completion = completeJob(second, { ...raced.lease, output: 1 });
      await lockWaiters(1);
      append.release();
      await append.done;
      await completion;
      await listener.flush();
      expect(listener.received.filter((n) => n.workflow_run_id === raced.workflowRunId)).toEqual([]);
      expect((await state(raced.workflowRunId)).run).toBe('RUNNING');
    } finally {
      await listener.close();
    }
  });
});

describe('append racing cancellation of its run', () => {
  it('the append first: the cancellation waits for it and then cancels the appended steps and their jobs too', async () => {
    const serial = await fixture('x1s', false);
    await appendWorkflowSteps(db.prisma, { ...serial.append, edges: [] });
    await cancelWorkflowRun(db.prisma, { workflowRunId: serial.workflowRunId, scope: noOrganizationScope() });

    const listener = await listenForRunTerminal(db.url);
    try {
      const raced = await fixture('x1r', false);
      const append = held(first, (tx) => appendWorkflowSteps(tx, { ...raced.append, edges: [] }));
      expect((await append.ready).steps.map((s) => s.status)).toEqual(['ENQUEUED', 'WAITING_FOR_EXTERNAL']);
      const cancel = cancelWorkflowRun(second, { workflowRunId: raced.workflowRunId, scope: noOrganizationScope() });
      await lockWaiters(1);
      append.release();
      await append.done;
      expect((await cancel).status).toBe('CANCELED');

      const final = await state(raced.workflowRunId);
      expect(final.steps.find((s) => s.step_key === 'n')).toMatchObject({ status: 'CANCELED', job_status: 'CANCELED' });
      expect(final).toEqual(await state(serial.workflowRunId));
      await listener.flush();
      expect(listener.received.filter((n) => n.workflow_run_id === raced.workflowRunId)).toEqual([
        { workflow_run_id: raced.workflowRunId, status: 'CANCELED' },
      ]);
    } finally {
      await listener.close();
    }
  });

  it('the cancellation first: the append is refused at once (release_conflict), and after it as a terminal run', async () => {
    const serial = await fixture('x2s', false);
    await cancelWorkflowRun(db.prisma, { workflowRunId: serial.workflowRunId, scope: noOrganizationScope() });
    await expect(appendWorkflowSteps(db.prisma, serial.append)).rejects.toMatchObject({ code: 'workflow.append_terminal_run' });

    const raced = await fixture('x2r', false);
    const cancel = held(first, (tx) => cancelWorkflowRun(tx, { workflowRunId: raced.workflowRunId, scope: noOrganizationScope() }));
    await cancel.ready;
    await expect(appendWorkflowSteps(second, raced.append)).rejects.toMatchObject({ code: 'workflow.release_conflict' });
    cancel.release();
    await cancel.done;
    await expect(appendWorkflowSteps(second, raced.append)).rejects.toMatchObject({ code: 'workflow.append_terminal_run' });

    const final = await state(raced.workflowRunId);
    expect(final.steps.map((s) => s.step_key)).toEqual(['hold', 'p']);
    expect(final).toEqual(await state(serial.workflowRunId));
  });
});
