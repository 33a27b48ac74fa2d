/** getResult: a result step that succeeded without output has no result; its waits are bounded like any Node timer. */
import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  enqueueWorkflowRunHandle,
  noOrganizationScope,
  isRunledgerError,
  ValidationError,
  workflow,
  workflowRunHandle,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';
import { errorOf } from '../harness/errors.js';

const db = useTestDatabase();

describe('getResult', () => {
  it('is workflow.result_missing, not null, when the result step succeeded without output', async () => {
    const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('result.none').job('a', 'result.none', {}).resultStep('a').build());
    await runRunnableJobs(db.prisma, () => ({ ok: true }));
    expect(await handle.getStatus()).toBe('SUCCEEDED');
    const error = await errorOf(handle.getResult({ timeoutMs: 5_000 }));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ code: 'workflow.result_missing', details: { workflowRunId: handle.workflowRunId, resultStepKey: 'a' } });
  });

  it('still returns a falsy output that was recorded (0, false, empty string)', async () => {
    for (const output of [0, false, '']) {
      const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('result.falsy').job('a', 'result.falsy', {}).resultStep('a').build());
      await runRunnableJobs(db.prisma, () => ({ ok: true, output }));
      expect(await handle.getResult({ timeoutMs: 5_000 })).toBe(output);
    }
  });

  it.each([Number.NaN, -1, Number.POSITIVE_INFINITY, 2 ** 31, 1.5])('refuses timeoutMs %s at once, naming the field', async (timeoutMs) => {
    const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('result.bounds').external('e').resultStep('e').build());
    const started = Date.now();
    const error = await errorOf(handle.getResult({ timeoutMs }));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'workflow.invalid_input', field: 'timeoutMs' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('accepts the longest timer (2^31-1 ms) and a zero timeout', async () => {
    const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('result.max').external('e').resultStep('e').build(), { pollIntervalMs: 2 ** 31 - 1 });
    const controller = new AbortController();
    const waiting = errorOf(handle.getResult({ timeoutMs: 2 ** 31 - 1, signal: controller.signal }));
    controller.abort();
    expect(isRunledgerError(await waiting, 'workflow.result_wait_aborted')).toBe(true);
    expect(isRunledgerError(await errorOf(handle.getResult({ timeoutMs: 0 })), 'workflow.result_wait_timeout')).toBe(true);
  });

  it('reports an abort by its signal as an abort, not as a timeout it never reached', async () => {
    const handle = await enqueueWorkflowRunHandle(db.prisma, workflow('result.abort').external('e').resultStep('e').build());
    const reason = new Error('the caller gave up');
    const started = Date.now();
    const error = await errorOf(handle.getResult({ timeoutMs: 10_000, signal: AbortSignal.timeout(200) }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toMatchObject({ code: 'workflow.result_wait_aborted', category: 'unavailable', details: { workflowRunId: handle.workflowRunId } });
    expect((error as Error).message).toMatch(/aborted/);
    expect((error as Error).message).not.toMatch(/within|10000/);
    // The signal's reason is the cause, as a caller who aborted with their own reason expects.
    const controller = new AbortController();
    controller.abort(reason);
    expect(await errorOf(handle.getResult({ signal: controller.signal }))).toMatchObject({ code: 'workflow.result_wait_aborted', cause: reason });
  });

  it('refuses a handle poll interval a timer cannot wait', () => {
    for (const pollIntervalMs of [Number.NaN, 0, 2 ** 31]) {
      expect(() => workflowRunHandle(db.prisma, noOrganizationScope(), '0190a3e0-0000-7000-8000-0000000000aa', { pollIntervalMs })).toThrow(
        expect.objectContaining({ code: 'workflow.invalid_input', field: 'pollIntervalMs' }),
      );
    }
  });
});
