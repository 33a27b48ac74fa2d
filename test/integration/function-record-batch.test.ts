/**
 * Step records of several attempts in one statement (src/workflow/function-record-batch.ts,
 * recordFunctionSteps): each step is written only under its own live lease, a dead lease costs only its
 * own steps, and steps that finish while a record is in flight share the next statement.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimJobs, defineFunction, enqueueWorkflowRun, isRunledgerError } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { recordThroughBatch } from '../../src/workflow/function-record-batch.js';
import { recordFunctionSteps } from '../../src/workflow/function-statements.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();

const fn = defineFunction('fn.record_batch', z.object({ n: z.number() }), async () => null);

/** Three function runs whose body jobs are claimed by hand: their leases and runs. */
async function claimedBodies() {
  const runs = [];
  for (let n = 0; n < 3; n += 1) runs.push((await enqueueWorkflowRun(db.prisma, fn.run({ n }))).workflowRunId);
  const claimed = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['fn.record_batch'], limit: 10, leaseSeconds: 60 });
  expect(claimed).toHaveLength(3);
  return claimed.map((job) => ({ lease: job, workflowRunId: job.step!.workflowRunId }));
}

function item(
  body: { lease: { jobId: string; runNumber: number; attempt: number; workerId: string }; workflowRunId: string },
  stepKey: string,
  output: number,
) {
  return { lease: body.lease, workflowRunId: body.workflowRunId, step: { id: newId(), stepKey, callIndex: 0, output, elapsedMs: 1 } };
}

async function recorded(workflowRunId: string) {
  return db.prisma.$queryRaw<{ step_key: string; output: unknown; finished_at: Date }[]>`
    SELECT step_key, output, finished_at FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND execution_kind = 'FUNCTION'`;
}

describe('function step records of several attempts', () => {
  it('writes each step under its own lease only: a stale lease loses its step, the others commit', async () => {
    const [a, b, c] = await claimedBodies();
    const stale = { ...b!, lease: { ...b!.lease, attempt: b!.lease.attempt + 1 } };
    const rows = await recordFunctionSteps(db.prisma, [item(a!, 'x', 1), item(stale, 'x', 2), item(c!, 'x', 3)], false);
    expect(rows.map((row) => row?.output ?? null)).toEqual([1, null, 3]);
    expect((await recorded(a!.workflowRunId)).map((r) => r.output)).toEqual([1]);
    expect(await recorded(b!.workflowRunId)).toEqual([]);
    expect((await recorded(c!.workflowRunId)).map((r) => r.output)).toEqual([3]);
    // One statement, one clock: the steps of both live leases carry the same finish time.
    expect(rows[0]!.at.getTime()).toBe(rows[2]!.at.getTime());
  });

  it('sends the first record at once and the ones that finish meanwhile together; a dead lease rejects only its own', async () => {
    const [a, b, c] = await claimedBodies();
    const stale = { ...c!, lease: { ...c!.lease, workerId: 'someone-else' } };
    const outcomes = await Promise.allSettled([
      recordThroughBatch(db.prisma, item(a!, 'y', 1)),
      recordThroughBatch(db.prisma, item(b!, 'y', 2)),
      recordThroughBatch(db.prisma, item(stale, 'y', 3)),
      recordThroughBatch(db.prisma, item(a!, 'z', 4)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const lost = (outcomes[2] as PromiseRejectedResult).reason;
    expect(isRunledgerError(lost, 'job.lease_owner_mismatch')).toBe(true);
    const times = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.at.getTime()] : []));
    // The first went alone; the second and fourth waited for it and shared the next statement.
    expect(times[0]).not.toBe(times[1]);
    expect(times[1]).toBe(times[2]);
    expect((await recorded(a!.workflowRunId)).map((r) => r.step_key).sort()).toEqual(['y', 'z']);
    expect(await recorded(c!.workflowRunId)).toEqual([]);
  });
});
