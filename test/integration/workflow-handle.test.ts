/** Workflow handles: status, result waiting (notification wakes, polling decides), typed errors. */
import { describe, expect, it } from 'vitest';
import { createWorkflowRunListener, enqueueWorkflowRunHandle, noOrganizationScope, isRunledgerError, workflow, workflowRunHandle } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (isRunledgerError(error) ? error.code : String(error)),
  );

describe('workflow run handles', () => {
  it('waits for the result while the run executes, by polling', async () => {
    const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('handle.poll').job('a', 'handle.a', {}).resultStep('a').build(), { pollIntervalMs: 20 });
    expect(await handle.getStatus()).toBe('RUNNING');
    const result = handle.getResult<{ total: number }>({ timeoutMs: 20_000 });
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: { total: 42 } }));
    expect(await result).toEqual({ total: 42 });
    expect(await handle.getStatus()).toBe('SUCCEEDED');
  });

  it('wakes on the run-terminal notification long before the next poll', async () => {
    const listener = await createWorkflowRunListener({ connectionString: db.url });
    try {
      const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('handle.notify').job('a', 'handle.n', {}).resultStep('a').build(), {
        listener,
        pollIntervalMs: 60_000,
      });
      // Let the first read happen and the wait begin, then finish the run.
      const result = handle.getResult({ timeoutMs: 50_000 });
      await handle.getStatus();
      const started = Date.now();
      await runRunnableJobs(db.prisma, () => ({ ok: true, output: 'done' }));
      expect(await result).toBe('done');
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await listener.close();
    }
  });

  it('reports a missing result step, an unsuccessful end, a timeout and an unknown run with stable codes', async () => {
    const noResult = await enqueueWorkflowRunHandle(db.prisma, workflow('handle.none').job('a', 'handle.none', {}).build());
    expect(await codeOf(noResult.getResult())).toBe('workflow.result_not_declared');

    const failing = await enqueueWorkflowRunHandle(db.prisma, workflow('handle.fail').job('a', 'handle.fail', {}).resultStep('a').build());
    await runRunnableJobs(db.prisma, (job) => (job.jobType === 'handle.fail' ? { ok: false } : { ok: true }));
    expect(await codeOf(failing.getResult())).toBe('workflow.result_unsuccessful_terminal');

    const waiting = await enqueueWorkflowRunHandle(db.prisma, workflow('handle.wait').external('e').resultStep('e').build(), { pollIntervalMs: 20 });
    expect(await codeOf(waiting.getResult({ timeoutMs: 100 }))).toBe('workflow.result_wait_timeout');

    expect(await codeOf(workflowRunHandle(db.prisma, noOrganizationScope(), newId()).getStatus())).toBe('workflow.run_not_found');
    const org = newId();
    const other = await enqueueWorkflowRunHandle(db.prisma, workflow('handle.org').organization(org).external('e').build());
    expect(await codeOf(workflowRunHandle(db.prisma, noOrganizationScope(), other.workflowRunId).getRun())).toBe('workflow.run_not_found');
    expect(await other.getStatus()).toBe('WAITING_FOR_EXTERNAL');
  });
});
