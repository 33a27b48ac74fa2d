/** `runledger runs recover` and the lineage `runs show` prints, run in-process against a real database. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { enqueueWorkflowRun, workflow } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

describe('runledger runs recover', () => {
  it('recovers a failed run (failed-only), answers a retry with the same recovery, and shows the lineage both ways', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('cli.rec').job('a', 'clirec.a', {}).job('b', 'clirec.b', {}).afterSuccess('b', ['a']).build(),
    );
    await runRunnableJobs(db.prisma, (job) => (job.jobType === 'clirec.b' ? { ok: false } : { ok: true, output: { a: 1 } }));

    const recovered = await cli('runs', 'recover', workflowRunId, '--request-key', 'k1', '--reason', 'outage', '--failed-only', '--json');
    expect(recovered.code).toBe(0);
    const result = JSON.parse(recovered.stdout) as { recoveryRunId: string; outcome: string; carriedStepKeys: string[] };
    expect(result).toMatchObject({ outcome: 'inserted', mode: 'failed_only', carriedStepKeys: ['a'], status: 'RUNNING' });

    const again = await cli('runs', 'recover', workflowRunId, '--request-key', 'k1', '--reason', 'outage', '--failed-only');
    expect(again).toMatchObject({ code: 0 });
    expect(again.stdout).toContain(`Recovery ${result.recoveryRunId} (existing, failed_only) of run ${workflowRunId} is RUNNING; carried over: a.`);

    const conflict = await cli('runs', 'recover', workflowRunId, '--request-key', 'k1', '--reason', 'other', '--json');
    expect(conflict.code).toBe(4);
    expect(JSON.parse(conflict.stderr)).toMatchObject({ code: 'workflow.recovery_request_conflict' });
    // Another key is refused, naming the recovery, until --again says so.
    const twice = await cli('runs', 'recover', workflowRunId, '--request-key', 'k2', '--reason', 'outage', '--failed-only', '--json');
    expect(twice.code).toBe(4);
    expect(JSON.parse(twice.stderr)).toMatchObject({ code: 'workflow.recovery_already_recovered', details: { recoveryRunId: result.recoveryRunId } });
    const explicit = await cli('runs', 'recover', workflowRunId, '--request-key', 'k2', '--reason', 'outage', '--failed-only', '--again', '--json');
    expect(explicit.code).toBe(0);
    const second = JSON.parse(explicit.stdout) as { recoveryRunId: string; outcome: string };
    expect(second.outcome).toBe('inserted');
    expect(second.recoveryRunId).not.toBe(result.recoveryRunId);

    const source = await cli('runs', 'show', workflowRunId);
    expect(source.stdout).toContain(`recoveries: 2, latest ${second.recoveryRunId} RUNNING (failed_only, reason: outage)`);
    const recovery = await cli('runs', 'show', result.recoveryRunId);
    expect(recovery.stdout).toContain(`recovered from ${workflowRunId}  (failed_only,`);

    const missing = await cli('runs', 'recover', workflowRunId, '--reason', 'r');
    expect(missing.code).toBe(2);
  });
});
