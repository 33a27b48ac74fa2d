/**
 * Appending steps to a running workflow: release rules against existing and
 * new prerequisites, idempotency per mutation key, append windows, every
 * refusal, and the statement count of a wide append.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  appendWorkflowSteps,
  claimJobs,
  completeExternalWorkflowStep,
  completeJob,
  enqueueWorkflowRun,
  failJob,
  getWorkflowRun,
  noOrganizationScope,
  organizationScope,
  workflow,
  type AppendWorkflowStepsInput,
} from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { RELEASE_LOCK_NAMESPACE } from '../../src/coordination/locking.js';
import { countingClient } from '../harness/counting-client.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { useTestDatabase } from '../harness/database.js';
import { listenForRunTerminal, stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

async function claimOne(jobType: string) {
  const [job] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
  expect(job).toBeDefined();
  return job!;
}

async function stepCount(workflowRunId: string, reader: Pick<PrismaClient, '$queryRaw'> = db.prisma): Promise<number> {
  const [row] = await reader.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid`;
  return row!.n;
}

async function mutationCount(workflowRunId: string, reader: Pick<PrismaClient, '$queryRaw'> = db.prisma): Promise<number> {
  const [row] = await reader.$queryRaw<
    { n: number }[]
  >`SELECT count(*)::int AS n FROM runledger.workflow_mutations WHERE workflow_run_id = ${workflowRunId}::uuid`;
  return row!.n;
}

describe('appendWorkflowSteps', () => {
  it('appends a step after a running job step; it is released when the prerequisite succeeds', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('append.basic').job('a', 'ap.basic.a', {}).build());
    const a = await claimOne('ap.basic.a');
    const result = await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm1',
      steps: [{ kind: 'job', key: 'b', jobType: 'ap.basic.b', payload: { x: 1 } }],
      edges: [{ prerequisite: 'a', dependent: 'b' }],
    });
    expect(result).toMatchObject({ outcome: 'appended', workflowRunId, runStatus: 'RUNNING', steps: [{ stepKey: 'b', status: 'BLOCKED', jobId: null }] });
    expect((await stepsByKey(db.prisma, workflowRunId)).b).toMatchObject({ status: 'BLOCKED', dependencyCountTotal: 1, dependencyCountPending: 1 });

    await completeJob(db.prisma, { ...a, output: 1 });
    expect((await stepsByKey(db.prisma, workflowRunId)).b).toMatchObject({ status: 'ENQUEUED', dependencyCountPending: 0 });
    const b = await claimOne('ap.basic.b');
    expect(b.payload).toEqual({ x: 1 });
    await completeJob(db.prisma, { ...b, output: 2 });
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('SUCCEEDED');
  });

  it('settles edges from terminal prerequisites at once: released, born canceled, and cascaded through new steps', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('append.terminal').job('ok', 'ap.term.ok', {}).job('bad', 'ap.term.bad', {}).external('hold').build(),
    );
    await completeJob(db.prisma, { ...(await claimOne('ap.term.ok')), output: null });
    await failJob(db.prisma, { ...(await claimOne('ap.term.bad')), error: { code: 'x.failed', message: 'no' }, retryable: false });
    expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('WAITING_FOR_EXTERNAL');

    const result = await appendWorkflowSteps(db.prisma, {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm-terminal',
      steps: [
        { kind: 'job', key: 'afterOk', jobType: 'ap.term.new', payload: {} },
        { kind: 'job', key: 'afterBad', jobType: 'ap.term.new', payload: {} },
        { kind: 'job', key: 'anyBad', jobType: 'ap.term.new', payload: {} },
        { kind: 'job', key: 'afterCanceled', jobType: 'ap.term.new', payload: {} },
        { kind: 'external', key: 'anyCanceled' },
        { kind: 'job', key: 'chained', jobType: 'ap.term.new', payload: {} },
      ],
      edges: [
        { prerequisite: 'ok', dependent: 'afterOk' },
        { prerequisite: 'bad', dependent: 'afterBad' },
        { prerequisite: 'bad', dependent: 'anyBad', mode: 'on_terminal' },
        { prerequisite: 'afterBad', dependent: 'afterCanceled' },
        { prerequisite: 'afterBad', dependent: 'anyCanceled', mode: 'on_terminal' },
        { prerequisite: 'afterOk', dependent: 'chained' },
        { prerequisite: 'hold', dependent: 'chained', mode: 'on_terminal' },
      ],
    });
    expect(result.runStatus).toBe('RUNNING');
    expect(result.steps.map((s) => [s.stepKey, s.status])).toEqual([
      ['afterOk', 'ENQUEUED'],
      ['afterBad', 'CANCELED'],
      ['anyBad', 'ENQUEUED'],
      ['afterCanceled', 'CANCELED'],
      ['anyCanceled', 'WAITING_FOR_EXTERNAL'],
      ['chained', 'BLOCKED'],
    ]);
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.afterBad).toMatchObject({
      dependencyCountTotal: 1,
      dependencyCountPending: 0,
      dependencyCountUnsatisfied: 1,
      lastErrorCode: 'workflow.dependency_unsatisfied',
    });
    expect(steps.afterBad!.finishedAt).toBeInstanceOf(Date);
    expect(steps.afterCanceled).toMatchObject({ status: 'CANCELED', dependencyCountUnsatisfied: 1 });
    expect(steps.chained).toMatchObject({ dependencyCountTotal: 2, dependencyCountPending: 2, dependencyCountUnsatisfied: 0 });
    expect(steps.afterOk!.jobId).not.toBeNull();
    const [events] = await db.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM runledger.job_trail e JOIN runledger.job_queue jq ON jq.id = e.job_id
       WHERE jq.job_type = 'ap.term.new' AND e.event_type = 'ENQUEUED' AND e.payload->>'mutationKey' = 'm-terminal'`;
    expect(events!.n).toBe(2);
  });

  it('answers already_applied to the same request in another order, and refuses another request under the same key', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('append.idem').job('a', 'ap.idem.a', {}).build());
    const request: AppendWorkflowStepsInput = {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'add-review',
      steps: [
        { kind: 'external', key: 'review' },
        { kind: 'job', key: 'mail', jobType: 'ap.idem.mail', payload: { to: 'x' } },
      ],
      edges: [
        { prerequisite: 'a', dependent: 'review' },
        { prerequisite: 'review', dependent: 'mail', mode: 'on_terminal' },
      ],
    };
    const first = await appendWorkflowSteps(db.prisma, request);
    const again = await appendWorkflowSteps(db.prisma, {
      ...request,
      steps: [...request.steps].reverse().map((s) => (s.kind === 'job' ? { ...s, priority: 0 } : s)),
      edges: [...request.edges!].reverse(),
    });
    // Steps come back in the retry's own order.
    const byKey = (steps: typeof first.steps) => [...steps].sort((x, y) => (x.stepKey < y.stepKey ? -1 : 1));
    expect({ ...again, steps: byKey(again.steps) }).toEqual({ ...first, outcome: 'already_applied', steps: byKey(first.steps) });
    expect(again.steps.map((s) => s.stepKey)).toEqual(['mail', 'review']);
    for (const different of [
      { ...request, steps: [request.steps[0]!, { kind: 'job' as const, key: 'mail', jobType: 'ap.idem.mail', payload: { to: 'y' } }] },
      { ...request, edges: [request.edges![0]!] },
      { ...request, window: 'a' },
    ]) {
      const error = await appendWorkflowSteps(db.prisma, different).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'workflow.append_conflicting_retry', category: 'conflict', sensitiveDetails: { mutationKey: 'add-review' } });
      // The mutation key is the caller's request identifier: never in what a client or a log line sees.
      expect(JSON.stringify(error)).not.toContain('add-review');
      expect((error as Error).message).not.toContain('add-review');
    }
    expect(await stepCount(workflowRunId)).toBe(3);
    expect(await mutationCount(workflowRunId)).toBe(1);
  });

  it('holds the run open with a window, accepts appends while it is open, and refuses them once it is closed', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('append.window').job('a', 'ap.win.a', {}).external('intake').build());
    const listener = await listenForRunTerminal(db.url);
    try {
      await completeJob(db.prisma, { ...(await claimOne('ap.win.a')), output: null });
      expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('WAITING_FOR_EXTERNAL');
      const appended = await appendWorkflowSteps(db.prisma, {
        workflowRunId,
        scope: noOrganizationScope(),
        mutationKey: 'late-1',
        window: 'intake',
        steps: [{ kind: 'job', key: 'late', jobType: 'ap.win.late', payload: {} }],
      });
      expect(appended).toMatchObject({ runStatus: 'RUNNING', steps: [{ stepKey: 'late', status: 'ENQUEUED' }] });
      await completeJob(db.prisma, { ...(await claimOne('ap.win.late')), output: null });
      // Still open: the window holds the run.
      expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('WAITING_FOR_EXTERNAL');
      await completeExternalWorkflowStep(db.prisma, { workflowRunId, stepKey: 'intake', scope: noOrganizationScope(), outcome: { status: 'succeeded' } });
      expect((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status).toBe('SUCCEEDED');

      await expect(
        appendWorkflowSteps(db.prisma, {
          workflowRunId,
          scope: noOrganizationScope(),
          mutationKey: 'late-2',
          window: 'intake',
          steps: [{ kind: 'external', key: 'x' }],
        }),
      ).rejects.toMatchObject({ code: 'workflow.append_terminal_run' });
      // The earlier append's retry is still recognised after the run ended.
      await expect(
        appendWorkflowSteps(db.prisma, {
          workflowRunId,
          scope: noOrganizationScope(),
          mutationKey: 'late-1',
          window: 'intake',
          steps: [{ kind: 'job', key: 'late', jobType: 'ap.win.late', payload: {} }],
        }),
      ).resolves.toMatchObject({ outcome: 'already_applied', runStatus: 'SUCCEEDED', steps: [{ stepKey: 'late', status: 'SUCCEEDED' }] });
      await listener.flush();
      expect(listener.received.filter((n) => n.workflow_run_id === workflowRunId)).toEqual([{ workflow_run_id: workflowRunId, status: 'SUCCEEDED' }]);
    } finally {
      await listener.close();
    }
  });

  it('refuses a closed, missing or job-step window', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('append.window-errors').job('a', 'ap.winerr.a', {}).external('w1').external('w2').build(),
    );
    await completeExternalWorkflowStep(db.prisma, { workflowRunId, stepKey: 'w1', scope: noOrganizationScope(), outcome: { status: 'succeeded' } });
    const base = { workflowRunId, scope: noOrganizationScope(), mutationKey: 'm', steps: [{ kind: 'external' as const, key: 'n' }] };
    await expect(appendWorkflowSteps(db.prisma, { ...base, window: 'w1' })).rejects.toMatchObject({
      code: 'workflow.append_window_closed',
      category: 'conflict',
    });
    await expect(appendWorkflowSteps(db.prisma, { ...base, window: 'nope' })).rejects.toMatchObject({
      code: 'workflow.append_window_missing',
      field: 'window',
    });
    await expect(appendWorkflowSteps(db.prisma, { ...base, window: 'a' })).rejects.toMatchObject({
      code: 'workflow.append_window_not_external',
      field: 'window',
    });
    expect(await stepCount(workflowRunId)).toBe(3);
    await expect(appendWorkflowSteps(db.prisma, { ...base, window: 'w2' })).resolves.toMatchObject({ outcome: 'appended' });
  });

  it('refuses every malformed request with a coded error naming the field, writing nothing', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('append.invalid').job('a', 'ap.inv.a', {}).job('b', 'ap.inv.b', {}).build());
    const base: AppendWorkflowStepsInput = {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm',
      steps: [{ kind: 'job', key: 'n', jobType: 'ap.inv.n', payload: {} }],
    };
    const cases: [Partial<AppendWorkflowStepsInput> & Record<string, unknown>, string, string][] = [
      [{ mutationKey: ' ' }, 'workflow.invalid_input', 'mutationKey'],
      [{ mutationKey: 'k'.repeat(513) }, 'workflow.invalid_input', 'mutationKey'],
      [{ steps: [] }, 'workflow.invalid_input', 'steps'],
      [{ steps: [{ kind: 'external', key: 'x', jobType: 'j' } as never] }, 'workflow.external_step_job_settings', 'steps.0.jobType'],
      [{ steps: [{ kind: 'external', key: '  ' }] }, 'workflow.blank_step_key', 'steps.0.key'],
      [
        {
          steps: [
            { kind: 'external', key: 'x' },
            { kind: 'external', key: 'x' },
          ],
        },
        'workflow.duplicate_step_key',
        'steps.1.key',
      ],
      [
        {
          steps: [
            { kind: 'external', key: 'x' },
            { kind: 'external', key: 'b' },
          ],
        },
        'workflow.duplicate_step_key',
        'steps.1.key',
      ],
      [{ edges: [{ prerequisite: 'n', dependent: 'n' }] }, 'workflow.self_dependency', 'edges.0.prerequisite'],
      [
        {
          edges: [
            { prerequisite: 'a', dependent: 'n' },
            { prerequisite: 'a', dependent: 'n', mode: 'on_terminal' },
          ],
        },
        'workflow.duplicate_dependency',
        'edges.1',
      ],
      [{ edges: [{ prerequisite: 'zzz', dependent: 'n' }] }, 'workflow.unknown_prerequisite', 'edges.0.prerequisite'],
      [{ edges: [{ prerequisite: 'n', dependent: 'a' }] }, 'workflow.append_existing_dependent', 'edges.0.dependent'],
      [{ edges: [{ prerequisite: 'a', dependent: 'zzz' }] }, 'workflow.append_unknown_dependent', 'edges.0.dependent'],
      [
        {
          steps: [
            { kind: 'external', key: 'x' },
            { kind: 'external', key: 'y' },
            { kind: 'external', key: 'z' },
          ],
          edges: [
            { prerequisite: 'a', dependent: 'x' },
            { prerequisite: 'x', dependent: 'y' },
            { prerequisite: 'y', dependent: 'z' },
            { prerequisite: 'z', dependent: 'x' },
          ],
        },
        'workflow.cycle',
        'edges.2',
      ],
      [{ steps: Array.from({ length: 10_000 }, (_, i) => ({ kind: 'external' as const, key: `s${i}` })) }, 'workflow.step_limit_exceeded', 'steps'],
      [{ workflowRunId: 'not-a-uuid' }, 'workflow.invalid_input', 'workflowRunId'],
      // An unknown key is named itself.
      [{ extra: 1 }, 'workflow.invalid_input', 'extra'],
    ];
    for (const [change, code, field] of cases) {
      const error = await appendWorkflowSteps(db.prisma, { ...base, ...change } as AppendWorkflowStepsInput).catch((e: unknown) => e);
      expect(error, `${code} ${field}`).toMatchObject({ code, category: 'validation', field });
    }
    expect(await stepCount(workflowRunId)).toBe(2);
    expect(await mutationCount(workflowRunId)).toBe(0);
  });

  it('refuses another scope, a terminal run, REPEATABLE READ and a run a cancellation holds, writing nothing', async () => {
    const org = newId();
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, { ...workflow('append.refuse').job('a', 'ap.ref.a', {}).build(), organizationId: org });
    const request: AppendWorkflowStepsInput = { workflowRunId, scope: organizationScope(org), mutationKey: 'm', steps: [{ kind: 'external', key: 'n' }] };
    await expect(appendWorkflowSteps(db.prisma, { ...request, scope: noOrganizationScope() })).rejects.toMatchObject({ code: 'workflow.run_not_found' });
    await expect(appendWorkflowSteps(db.prisma, { ...request, scope: organizationScope(newId()) })).rejects.toMatchObject({ code: 'workflow.run_not_found' });
    await expect(appendWorkflowSteps(db.prisma, { ...request, workflowRunId: newId() })).rejects.toMatchObject({ code: 'workflow.run_not_found' });

    for (const isolationLevel of ['RepeatableRead', 'Serializable'] as const) {
      const error = await db.prisma.$transaction((tx) => appendWorkflowSteps(tx, request), { isolationLevel }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'workflow.append_unsupported_isolation' });
    }

    // A cancellation in flight holds the run's release lock exclusively.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [RELEASE_LOCK_NAMESPACE, workflowRunId]);
      await expect(appendWorkflowSteps(db.prisma, request)).rejects.toMatchObject({ code: 'workflow.release_conflict', category: 'conflict' });
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
    expect(await stepCount(workflowRunId)).toBe(1);

    await completeJob(db.prisma, { ...(await claimOne('ap.ref.a')), output: null });
    await expect(appendWorkflowSteps(db.prisma, request)).rejects.toMatchObject({ code: 'workflow.append_terminal_run', details: { status: 'SUCCEEDED' } });
    expect(await stepCount(workflowRunId)).toBe(1);
    expect(await mutationCount(workflowRunId)).toBe(0);
  });

  it('joins the host transaction: a rollback leaves neither steps nor the mutation key', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('append.join').job('a', 'ap.join.a', {}).build());
    const request: AppendWorkflowStepsInput = {
      workflowRunId,
      scope: noOrganizationScope(),
      mutationKey: 'm',
      steps: [{ kind: 'job', key: 'n', jobType: 'ap.join.n', payload: {} }],
    };
    const rollback = new Error('host rolls back');
    // Only the host's own rollback may end the transaction: a refusal inside must fail the test, not pass as "nothing written".
    await expect(
      db.prisma.$transaction(async (tx) => {
        expect(await appendWorkflowSteps(tx, request)).toMatchObject({ outcome: 'appended' });
        expect([await stepCount(workflowRunId, tx), await mutationCount(workflowRunId, tx)]).toEqual([2, 1]);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect([await stepCount(workflowRunId), await mutationCount(workflowRunId)]).toEqual([1, 0]);
    await expect(appendWorkflowSteps(db.prisma, request)).resolves.toMatchObject({ outcome: 'appended' });
  });

  it('appends 270 steps in as many statements as 3', async () => {
    const counting = countingClient(db);
    try {
      const statements = async (width: number): Promise<number> => {
        const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('append.wide').job('root', 'ap.wide.root', {}).external('done').build());
        await completeExternalWorkflowStep(db.prisma, { workflowRunId, stepKey: 'done', scope: noOrganizationScope(), outcome: { status: 'succeeded' } });
        const steps = Array.from({ length: width }, (_, i) => ({ kind: 'job' as const, key: `s${i}`, jobType: 'ap.wide.step', payload: { i } }));
        // Half depend on the running root, half on the finished window step, each on its predecessor too.
        const edges = steps.flatMap((step, i) => [
          { prerequisite: i % 2 === 0 ? 'root' : 'done', dependent: step.key },
          ...(i >= 2 ? [{ prerequisite: `s${i - 2}`, dependent: step.key, mode: 'on_terminal' as const }] : []),
        ]);
        const before = counting.count();
        const result = await appendWorkflowSteps(counting.client, { workflowRunId, scope: noOrganizationScope(), mutationKey: `wide-${width}`, steps, edges });
        const sent = counting.count() - before;
        expect(result.steps).toHaveLength(width);
        expect(result.steps.filter((s) => s.status === 'ENQUEUED').map((s) => s.stepKey)).toEqual(['s1']);
        expect(await stepCount(workflowRunId)).toBe(width + 2);
        const [edgeCount] = await db.prisma.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM runledger.workflow_step_dependencies WHERE workflow_run_id = ${workflowRunId}::uuid`;
        expect(edgeCount!.n).toBe(edges.length);
        return sent;
      };
      await statements(3); // the client's first transaction also checks its isolation default once
      const narrow = await statements(3);
      const wide = await statements(270);
      expect(wide).toBe(narrow);
      expect(wide).toBeLessThanOrEqual(12);
    } finally {
      await counting.close();
    }
  });
});
