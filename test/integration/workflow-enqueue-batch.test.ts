/**
 * `enqueueWorkflowRuns`: any number of runs in a constant number of
 * statements, results in input order, all or nothing.
 */
import { describe, expect, it } from 'vitest';
import { enqueueWorkflowRuns, isRunledgerError, listWorkflowSteps, workflow, type WorkflowRunInput } from '../../src/index.js';
import { countingClient } from '../harness/counting-client.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const diamond = (name: string, key?: string): WorkflowRunInput => {
  const builder = workflow(name);
  if (key !== undefined) builder.idempotencyKey(key);
  return builder
    .job('a', `${name}.a`, { n: 1 })
    .job('b', `${name}.b`, {})
    .external('c')
    .job('d', `${name}.d`, {})
    .afterSuccess('b', ['a'])
    .afterSuccess('c', ['a'])
    .afterTerminal('d', ['b', 'c'])
    .build();
};

async function runCount(workflowType: string): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.workflow_runs WHERE workflow_type = ${workflowType}`;
  return row!.n;
}

describe('enqueueWorkflowRuns', () => {
  it('enqueues 1 and 100 runs with the same number of statements, each run whole', async () => {
    const statements = async (size: number): Promise<number> => {
      const counter = countingClient(db);
      try {
        await enqueueWorkflowRuns(counter.client, [diamond(`warm${size}`)]); // one-time per-client checks
        const before = counter.count();
        const results = await enqueueWorkflowRuns(
          counter.client,
          Array.from({ length: size }, () => diamond(`batch${size}`)),
        );
        expect(results).toHaveLength(size);
        expect(new Set(results.map((r) => r.workflowRunId)).size).toBe(size);
        for (const result of results) expect(result).toMatchObject({ status: 'RUNNING', disposition: 'inserted' });
        const steps = (await listWorkflowSteps(db.prisma, { scope: { kind: 'admin' }, workflowRunId: results[size - 1]!.workflowRunId, limit: 500 })).items;
        expect(Object.fromEntries(steps.map((s) => [s.stepKey, s.status]))).toEqual({ a: 'ENQUEUED', b: 'BLOCKED', c: 'BLOCKED', d: 'BLOCKED' });
        return counter.count() - before;
      } finally {
        await counter.close();
      }
    };
    const one = await statements(1);
    expect(await statements(100)).toBe(one);
    expect(one).toBe(1); // runs, root jobs, steps and edges in one autocommitted statement (no key: nothing to undo)
  });

  it('returns existing runs for keys already used by the same request, in input order, including a key twice in the batch', async () => {
    const [first] = await enqueueWorkflowRuns(db.prisma, [diamond('keyed', 'k1')]);
    const results = await enqueueWorkflowRuns(db.prisma, [diamond('keyed', 'k2'), diamond('keyed', 'k1'), diamond('keyed', 'k2')]);
    expect(results.map((r) => r.disposition)).toEqual(['inserted', 'existing', 'existing']);
    expect(results[1]!.workflowRunId).toBe(first!.workflowRunId);
    expect(results[2]!.workflowRunId).toBe(results[0]!.workflowRunId);
    expect(await runCount('keyed')).toBe(2);
  });

  it('keeps nothing of a batch with one conflicting key, also when the caller catches the error and commits', async () => {
    await enqueueWorkflowRuns(db.prisma, [diamond('conflict', 'taken')]);
    const other = workflow('conflict').idempotencyKey('taken').job('x', 'conflict.x', {}).build();
    const owned = await enqueueWorkflowRuns(db.prisma, [diamond('conflict'), other]).catch((e: unknown) => e);
    expect(isRunledgerError(owned, 'workflow.idempotency_conflict')).toBe(true);
    expect(await runCount('conflict')).toBe(1);
    const joined = await db.prisma.$transaction(async (tx) => enqueueWorkflowRuns(tx, [diamond('conflict'), other]).catch((e: unknown) => e));
    expect(isRunledgerError(joined, 'workflow.idempotency_conflict')).toBe(true);
    expect(await runCount('conflict')).toBe(1);
    const [jobs] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE job_type = 'conflict.a'`;
    expect(jobs!.n).toBe(1);
  });

  it('names the invalid run and writes nothing', async () => {
    const bad = { ...diamond('invalid'), steps: [] };
    const error = await enqueueWorkflowRuns(db.prisma, [diamond('invalid'), bad as WorkflowRunInput]).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'workflow.invalid_input', field: expect.stringMatching(/^1\./) });
    expect(await runCount('invalid')).toBe(0);
  });
});
