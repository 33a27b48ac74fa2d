/** The operator CLI, run in-process against a real database: output, --json, exit codes. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { enqueueJob, enqueueWorkflowRun, getJob, noOrganizationScope, workflow } from '../../src/index.js';
import { newId } from '../../src/db/ids.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();

const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

describe('runledger CLI', () => {
  it('lists runs, draws a DAG, completes an external step and cancels a run', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('cli.review')
        .job('draft', 'cli.draft', {})
        .external('approve')
        .afterSuccess('approve', ['draft'])
        .job('publish', 'cli.publish', {})
        .afterSuccess('publish', ['approve'])
        .resultStep('publish')
        .build(),
    );
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: { words: 120 } }));

    const list = await cli('runs', 'list', '--type', 'cli.review');
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(workflowRunId);
    expect(list.stdout).toContain('RUNNING');

    const show = await cli('runs', 'show', workflowRunId);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/level 0\n\s+✔ draft\s+SUCCEEDED\s+job cli.draft/);
    expect(show.stdout).toMatch(/level 1\n\s+⏸ approve\s+WAITING_FOR_EXTERNAL\s+external\s+← draft/);
    expect(show.stdout).toMatch(/level 2\n\s+· publish\s+BLOCKED/);

    const complete = await cli('--json', 'steps', 'complete', workflowRunId, 'approve', '--output', '{"by":"ops"}');
    expect(complete.code).toBe(0);
    expect(JSON.parse(complete.stdout)).toMatchObject({ stepKey: 'approve', status: 'SUCCEEDED', output: { by: 'ops' } });

    const json = JSON.parse((await cli('--json', 'runs', 'show', workflowRunId)).stdout);
    expect(json.steps.map((s: { stepKey: string; status: string }) => `${s.stepKey}:${s.status}`)).toEqual([
      'draft:SUCCEEDED',
      'approve:SUCCEEDED',
      'publish:ENQUEUED',
    ]);

    const cancel = await cli('runs', 'cancel', workflowRunId, '--reason', 'ops said so');
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toContain('CANCELED');
  });

  it('exits with codes that mean something', async () => {
    expect((await cli('runs', 'show', newId())).code).toBe(3);
    const bad = await cli('runs', 'show', 'not-a-uuid');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('workflow.invalid_input');
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('cli.ext').external('e').build());
    expect((await cli('steps', 'complete', workflowRunId, 'e', '--failed', '--output', '{}')).code).toBe(2);
    expect((await cli('steps', 'complete', workflowRunId, 'e', '--output', '{nope')).code).toBe(2);
    expect((await cli('steps', 'complete', workflowRunId, 'e')).code).toBe(0);
    const conflict = await cli('--json', 'steps', 'complete', workflowRunId, 'e', '--canceled');
    expect(conflict.code).toBe(4);
    expect(JSON.parse(conflict.stderr)).toMatchObject({ code: 'workflow.external_step_conflicting_completion_retry', category: 'conflict' });
    expect((await cli('runs', 'list', '--org', newId())).stdout).toContain('No workflow runs.');
    expect((await cli('no-such-command')).code).toBe(2);
  });

  it('shows, replays and requeues jobs', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.mail', payload: { to: 'a@example.test' } });
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: 'sent' }));
    const show = await cli('jobs', 'show', jobId);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/cli\.mail\s+SUCCEEDED\s+run 1/);
    expect(show.stdout).toMatch(/ENQUEUED[\s\S]*LEASED[\s\S]*RUNNING[\s\S]*SUCCEEDED/);
    // The attempt history: who ran it and how it ended.
    expect(show.stdout).toMatch(/STARTED\s+FINISHED\s+RUN\s+ATTEMPT\s+WORKER\s+OUTCOME[^\n]*\n\S+\s+\S+\s+1\s+1\s+test-worker\s+SUCCEEDED/);
    const first = JSON.parse((await cli('--json', 'jobs', 'replay', jobId, '--key', 'incident-7', '--reason', 'mail lost')).stdout);
    expect(first).toMatchObject({ kind: 'replayed', replay: { disposition: 'inserted', status: 'PENDING', runNumber: 1 } });
    const again = JSON.parse((await cli('--json', 'jobs', 'replay', jobId, '--key', 'incident-7', '--reason', 'mail lost')).stdout);
    expect(again.replay).toMatchObject({ jobId: first.replay.jobId, disposition: 'existing' });
    expect((await cli('jobs', 'replay', jobId, '--key', 'incident-7', '--reason', 'other')).code).toBe(4);
    expect((await cli('jobs', 'replay', jobId, '--key', 'k', '--reason', 'r', '--run', '2')).code).toBe(4);

    const { jobId: doomed } = await enqueueJob(db.prisma, { jobType: 'cli.doomed', payload: {} });
    await runRunnableJobs(db.prisma, (job) => (job.jobType === 'cli.doomed' ? { ok: false } : { ok: true }));
    const requeue = await cli('jobs', 'requeue', doomed);
    expect(requeue.code).toBe(0);
    expect(requeue.stdout).toContain('requeued as run 2');
    expect((await cli('jobs', 'requeue', jobId)).code).toBe(2);
  });

  it('runs a worker for a handlers module until idle', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.greet', payload: { name: 'ops' } });
    const result = await cli('--json', 'worker', '--handlers', 'test/fixtures/cli/handlers.ts', '--until-idle', '--concurrency', '2');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).stats).toMatchObject({ succeeded: 1, inFlight: 0 });
    expect((await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).output).toEqual({ greeting: 'hello ops' });
    expect((await cli('worker', '--handlers', 'test/fixtures/cli/nope.ts')).code).toBe(2);
  });

  it('migrates (a no-op on a migrated database)', async () => {
    const result = await cli('--json', 'migrate');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).applied).toEqual([]);
  });
});
