/** The CLI's usage errors: strict numbers, exit code 2 for every wrong usage, JSON errors with --json, job ids in `runs show`. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { enqueueJob, enqueueWorkflowRun, noOrganizationScope, listWorkflowSteps, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { runCli } from '../harness/cli.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

describe('runledger CLI usage', () => {
  it('rejects every numeric option that is not a plain decimal integer in range, with exit code 2, and acts on nothing', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'usage.mail', payload: {} });
    await runRunnableJobs(db.prisma);
    for (const run of ['1.5', '1e3', '0x10', '', ' 3', '3 ', '-1', '0', '+1', '01', '9007199254740993']) {
      const result = await cli('jobs', 'replay', jobId, '--key', `k${run}`, '--reason', 'r', '--run', run);
      expect({ run, code: result.code }).toEqual({ run, code: 2 });
      expect(result.stderr).toContain('--run');
    }
    // Nothing was replayed by any of them (parseInt would have read run 1 from "1.5" and "1e3").
    const replays = () => db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_replays WHERE source_job_id = ${jobId}::uuid`;
    expect(await replays()).toEqual([{ n: 0 }]);
    expect((await cli('jobs', 'replay', jobId, '--key', 'k', '--reason', 'r', '--run', '1')).code).toBe(0);
    expect(await replays()).toEqual([{ n: 1 }]);

    for (const limit of ['0', '501', '2.0', 'ten']) expect((await cli('runs', 'list', '--limit', limit)).code).toBe(2);
    expect((await cli('runs', 'list', '--limit', '500')).code).toBe(0);
    for (const [option, value] of [
      ['--concurrency', '0'],
      ['--lease-seconds', '1.5'],
      ['--drain-ms', '-5'],
      ['--concurrency', '1e1'],
    ] as const) {
      expect((await cli('worker', '--handlers', 'test/fixtures/cli/handlers.ts', '--until-idle', option, value)).code).toBe(2);
    }
  });

  it('exits 2 for a missing argument, a missing required option, an unknown option and a missing command', async () => {
    const missingArgument = await cli('runs', 'show');
    expect(missingArgument.code).toBe(2);
    expect(missingArgument.stderr).toContain("missing required argument 'workflowRunId'");
    expect((await cli('jobs', 'replay', '00000000-0000-0000-0000-000000000000', '--key', 'k')).code).toBe(2);
    expect((await cli('runs', 'list', '--bogus')).code).toBe(2);
    expect((await cli('runs', 'show', 'a', 'b')).code).toBe(2);
    expect((await cli('runs')).code).toBe(2);
    expect((await cli('--org', '00000000-0000-0000-0000-000000000000', '--without-org', 'runs', 'list')).code).toBe(2);
    expect((await cli('--help')).code).toBe(0);
  });

  it('prints a usage error as one JSON object on stderr with --json, and nothing on stdout', async () => {
    const cases: [string[], string, string][] = [
      [['runs', 'show'], 'cli.missing_argument', 'workflowRunId'],
      [['runs', 'list', '--bogus'], 'cli.unknown_option', '--bogus'],
      [['runs', 'list', '--limit', '1.5'], 'cli.invalid_argument', '--limit'],
      [['jobs', 'replay', '00000000-0000-0000-0000-000000000000', '--key', 'k'], 'cli.missing_mandatory_option_value', '--reason'],
      [['no-such-command'], 'cli.unknown_command', 'no-such-command'],
      [['runs'], 'cli.missing_command', 'argv'],
      [['steps', 'complete', '00000000-0000-0000-0000-000000000000', 'e', '--output', '{nope'], 'cli.invalid_argument', '--output'],
      [['worker', '--handlers', 'handlers.js', '--listen-url', 'not a url'], 'cli.invalid_argument', '--listen-url'],
      [['dashboard', '--listen-url', 'http://example.com/db'], 'cli.invalid_argument', '--listen-url'],
    ];
    for (const [args, code, field] of cases) {
      // --json after the command works as well as before it.
      for (const argv of [
        ['--json', ...args],
        [...args, '--json'],
      ]) {
        const result = await cli(...argv);
        expect({ argv, code: result.code }).toEqual({ argv, code: 2 });
        expect(result.stdout).toBe('');
        const lines = result.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(JSON.parse(lines[0]!)).toMatchObject({ code, category: 'validation', name: 'UsageError', details: { field } });
      }
    }
  });

  it("prints each job step's job id in the human DAG of `runs show`", async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('usage.dag').job('fetch', 'usage.fetch', {}).external('approve').afterSuccess('approve', ['fetch']).build(),
    );
    const steps = (await listWorkflowSteps(db.prisma, { scope: noOrganizationScope(), workflowRunId, limit: 500 })).items;
    const fetch = steps.find((step) => step.stepKey === 'fetch')!;
    expect(fetch.jobId).not.toBeNull();
    const show = await cli('runs', 'show', workflowRunId);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`fetch\\s+ENQUEUED\\s+job usage\\.fetch \\(id ${fetch.jobId}\\)`));
    expect(show.stdout).toMatch(/approve\s+BLOCKED\s+external\s+← fetch/);
  });
});
