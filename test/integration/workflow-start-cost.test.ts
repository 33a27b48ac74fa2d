/**
 * Starting a workflow run costs what enqueueing a job costs: its statements (counted at the driver, BEGIN and
 * COMMIT included) on both kinds of root client, in a host's transaction, and no lock shared between runs.
 */
import { describe, expect, it } from 'vitest';
import {
  enqueueJob,
  enqueueWorkflowRun,
  enqueueWorkflowRuns,
  isRunledgerError,
  listWorkflowSteps,
  poolDb,
  workflow,
  type WorkflowRunInput,
} from '../../src/index.js';
import type { Db } from '../../src/client/types.js';
import { countingClient, countingPoolDb } from '../harness/counting-client.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

const chain = (name: string, key?: string, payload: Record<string, number> = {}): WorkflowRunInput => {
  const builder = workflow(name);
  if (key !== undefined) builder.idempotencyKey(key);
  return builder.job('a', `${name}.a`, payload).job('b', `${name}.b`, {}).afterSuccess('b', ['a']).job('c', `${name}.c`, {}).afterSuccess('c', ['b']).build();
};

/** The one-time per-client isolation checks (autocommit and owned transactions), out of the counts. */
async function warm(client: Db): Promise<void> {
  await enqueueJob(client, { jobType: 'cost.warm', payload: {} });
  await enqueueWorkflowRun(client, chain('cost.warm', `w${Math.random()}`));
  await enqueueWorkflowRuns(client, [chain('cost.warm', `w${Math.random()}`), chain('cost.warm', `w${Math.random()}`)]);
}

async function statementsOf(counter: { count(): number }, call: () => Promise<unknown>): Promise<number> {
  const before = counter.count();
  await call();
  return counter.count() - before;
}

async function stepStatuses(workflowRunId: string): Promise<Record<string, string>> {
  const steps = (await listWorkflowSteps(db.prisma, { scope: { kind: 'admin' }, workflowRunId, limit: 10 })).items;
  return Object.fromEntries(steps.map((s) => [s.stepKey, s.status]));
}

describe('workflow start cost', () => {
  it.each(['Prisma', 'poolDb'] as const)('starts a 3-step chain in one statement on %s, as many as one enqueueJob', async (kind) => {
    const prismaCounter = kind === 'Prisma' ? countingClient(db) : undefined;
    const counter = prismaCounter ?? countingPoolDb(db);
    const client = counter.client as Db;
    try {
      await warm(client);
      const job = await statementsOf(counter, () => enqueueJob(client, { jobType: 'cost.job', payload: {} }));
      let runId = '';
      const run = await statementsOf(counter, async () => {
        runId = (await enqueueWorkflowRun(client, chain('cost.chain'))).workflowRunId;
      });
      expect({ job, run }).toEqual({ job: 1, run: 1 });
      // The one statement wrote the whole run: its steps, edges and root job.
      expect(await stepStatuses(runId)).toEqual({ a: 'ENQUEUED', b: 'BLOCKED', c: 'BLOCKED' });
      const [row] = await db.prisma.$queryRaw<{ edges: number; jobs: number }[]>`
        SELECT (SELECT count(*)::int FROM runledger.workflow_step_dependencies WHERE workflow_run_id = ${runId}::uuid) AS edges,
               (SELECT count(*)::int FROM runledger.job_queue jq JOIN runledger.workflow_steps ws ON ws.job_id = jq.id
                 WHERE ws.workflow_run_id = ${runId}::uuid) AS jobs`;
      expect(row).toEqual({ edges: 2, jobs: 1 });
    } finally {
      if (prismaCounter) await prismaCounter.close();
    }
  });

  it('reads the existing run only when its key was taken: same request one more statement, a different one a conflict that writes nothing', async () => {
    const counter = countingClient(db);
    try {
      await warm(counter.client);
      const first = await statementsOf(counter, () => enqueueWorkflowRun(counter.client, chain('cost.keyed', 'k', { n: 1 })));
      const again = await statementsOf(counter, async () => {
        expect(await enqueueWorkflowRun(counter.client, chain('cost.keyed', 'k', { n: 1 }))).toMatchObject({ disposition: 'existing' });
      });
      expect({ first, again }).toEqual({ first: 1, again: 2 });
      const error = await enqueueWorkflowRun(counter.client, chain('cost.keyed', 'k', { n: 2 })).catch((e: unknown) => e);
      expect(isRunledgerError(error, 'workflow.idempotency_conflict')).toBe(true);
      const [row] = await db.prisma.$queryRaw<{ runs: number }[]>`
        SELECT count(*)::int AS runs FROM runledger.workflow_runs WHERE workflow_type = 'cost.keyed'`;
      expect(row).toEqual({ runs: 1 });
    } finally {
      await counter.close();
    }
  });

  it('joins a host transaction with one statement (a key adds the isolation check); a keyed batch owns one transaction', async () => {
    const counter = countingClient(db);
    try {
      await warm(counter.client);
      const joined = await statementsOf(counter, () => counter.client.$transaction((tx) => enqueueWorkflowRun(tx as never, chain('cost.joined'))));
      const joinedKeyed = await statementsOf(counter, () => counter.client.$transaction((tx) => enqueueWorkflowRun(tx as never, chain('cost.joined', 'jk'))));
      const keyedBatch = await statementsOf(counter, () =>
        enqueueWorkflowRuns(counter.client, [chain('cost.batch', 'b1'), chain('cost.batch', 'b2'), chain('cost.batch')]),
      );
      const plainBatch = await statementsOf(counter, () => enqueueWorkflowRuns(counter.client, [chain('cost.batch'), chain('cost.batch')]));
      // BEGIN + statement(s) + COMMIT for the transactions.
      expect({ joined, joinedKeyed, keyedBatch, plainBatch }).toEqual({ joined: 3, joinedKeyed: 4, keyedBatch: 3, plainBatch: 1 });
    } finally {
      await counter.close();
    }
  });

  it('ten concurrent starts do not wait on each other, nor on a start held uncommitted in another transaction', async () => {
    const client = poolDb(db.newPool({ max: 10 })) as Db;
    await enqueueWorkflowRun(client, chain('cost.warm'));
    const arrive = barrier(10);
    // One start of the same workflow type, organization and job types stays uncommitted until the ten are done
    // (or the deadline passes): whatever it locks stays locked meanwhile.
    const outcome = await db.prisma.$transaction(
      async (tx) => {
        await enqueueWorkflowRun(tx as never, chain('cost.concurrent', 'held'));
        const ten = Promise.all(
          Array.from({ length: 10 }, async (_, i) => {
            await arrive();
            return enqueueWorkflowRun(client, chain('cost.concurrent', `k${i}`));
          }),
        );
        const deadline = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 10_000).unref());
        return Promise.race([ten.then((results) => results.map((r) => r.disposition)), deadline]);
      },
      { timeout: 30_000 },
    );
    expect(outcome).toEqual(Array.from({ length: 10 }, () => 'inserted'));
    const [row] = await db.prisma.$queryRaw<{ runs: number }[]>`
      SELECT count(*)::int AS runs FROM runledger.workflow_runs WHERE workflow_type = 'cost.concurrent'`;
    expect(row).toEqual({ runs: 11 });
  });
});
