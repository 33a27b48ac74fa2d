/**
 * The claim of a durable function's body job reads the run's recorded steps for its attempt
 * (src/queue/claimed-function-record.ts), so an attempt starts without a read of its own; a DAG's job
 * carries none, and a record is taken once.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { claimJobs, defineFunction, enqueueWorkflowRun, workflow } from '../../src/index.js';
import { takeClaimedFunctionRecord } from '../../src/queue/claimed-function-record.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

describe('the claim of a function body', () => {
  it("returns the run's recorded steps in call order with the database clock, once", async () => {
    const fn = defineFunction(
      'fn.claim_record',
      z.object({}),
      async (_input, ctx) => {
        await ctx.step('a', () => ({ first: true }));
        await Promise.all([ctx.step('b', () => null), ctx.step('c', () => 'three')]);
        throw new Error('cut: the retry is claimed by hand');
      },
      // The retry waits a minute (brought forward below, once the worker is gone).
      { retry: { maxAttempts: 3, backoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 } } },
    );
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({}));
    const worker = await startWorker({ handlers: [fn] });
    // The first attempt recorded a, b and c and failed; its retry is PENDING again.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const [row] = await db.prisma.$queryRaw<{ attempt: number; status: string }[]>`
        SELECT jq.attempt, jq.status::text FROM runledger.job_queue jq
          JOIN runledger.workflow_steps ws ON ws.job_id = jq.id
         WHERE ws.workflow_run_id = ${workflowRunId}::uuid AND ws.step_key = '$function'`;
      if (row!.attempt === 1 && row!.status === 'PENDING') break;
      if (Date.now() > deadline) throw new Error(`body job still ${row!.status} at attempt ${row!.attempt}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await worker.stop();
    await db.prisma.$executeRaw`
      UPDATE runledger.job_queue SET next_run_at = now()
       WHERE id = (SELECT job_id FROM runledger.workflow_steps WHERE workflow_run_id = ${workflowRunId}::uuid AND step_key = '$function')`;
    const dag = await enqueueWorkflowRun(db.prisma, workflow('claim_record.dag').job('only', 'claim_record.job', {}).build());

    const before = Date.now();
    const claimed = await claimJobs(db.prisma, { workerId: 'by-hand', jobTypes: ['fn.claim_record', 'claim_record.job'], limit: 10, leaseSeconds: 60 });
    expect(claimed.map((job) => job.jobType).sort()).toEqual(['claim_record.job', 'fn.claim_record']);
    const body = claimed.find((job) => job.jobType === 'fn.claim_record')!;
    const record = takeClaimedFunctionRecord(body)!;
    expect(record.steps).toEqual([
      { stepKey: 'a', callIndex: 0, output: { first: true } },
      { stepKey: 'b', callIndex: 1, output: null },
      { stepKey: 'c', callIndex: 2, output: 'three' },
    ]);
    // Database and local clocks are one machine's here: the offset is the claim's transit, well under a second.
    const [{ now }] = (await db.prisma.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`) as [{ now: Date }];
    expect(Math.abs(before + record.clockOffset - now.getTime())).toBeLessThan(5_000);
    expect(Math.abs(record.clockOffset)).toBeLessThan(1_000);
    expect(takeClaimedFunctionRecord(body)).toBeUndefined();
    expect(takeClaimedFunctionRecord(claimed.find((job) => job.step?.workflowRunId === dag.workflowRunId)!)).toBeUndefined();
  });
});
