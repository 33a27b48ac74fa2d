/** `runledger runs show` prints a run's active key (held or released) and its appends, in text and --json. */
import { describe, expect, it } from 'vitest';
import { appendWorkflowSteps, enqueueOrGetActiveWorkflowRun, enqueueWorkflowRun, organizationScope, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { runCli } from '../harness/cli.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const ORG = 'org-cli-coordination';
const ISO = '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z';

describe('runledger runs show', () => {
  it("prints the held active key and each append's mutation key, step count and time; --json carries them", async () => {
    const { workflowRunId } = await enqueueOrGetActiveWorkflowRun(db.prisma, {
      ...workflow('cli.sync').organization(ORG).external('intake').build(),
      activeKey: 'sync:customer-7',
    });
    const append = (mutationKey: string, keys: string[]) =>
      appendWorkflowSteps(db.prisma, {
        workflowRunId,
        scope: organizationScope(ORG),
        mutationKey,
        window: 'intake',
        steps: keys.map((key) => ({ key, kind: 'external' as const })),
      });
    await append('add-legal', ['legal', 'finance']);
    await append('add-ceo', ['ceo']);

    const show = await runCli(db.url, 'runs', 'show', workflowRunId);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`active key: "sync:customer-7" \\(organization:${ORG}\\)  claimed ${ISO}  held\\n`));
    expect(show.stdout).toMatch(new RegExp(`appends \\(2\\):\\n\\s+"add-legal"  2 steps  at ${ISO}\\n\\s+"add-ceo"  1 step  at ${ISO}\\n`));
    // The header comes first and the DAG last.
    expect(show.stdout.indexOf('active key')).toBeLessThan(show.stdout.indexOf('level 0'));

    const json = JSON.parse((await runCli(db.url, '--json', 'runs', 'show', workflowRunId)).stdout);
    expect(json.activeKey).toMatchObject({ activeKey: 'sync:customer-7', scope: `organization:${ORG}`, releasedAt: null });
    expect(json.mutations.map((m: { mutationKey: string; stepCount: number }) => [m.mutationKey, m.stepCount])).toEqual([
      ['add-legal', 2],
      ['add-ceo', 1],
    ]);
  });

  it('says when the key was released, prints nothing extra for a plain run, and shows another organization nothing', async () => {
    const { workflowRunId } = await enqueueOrGetActiveWorkflowRun(db.prisma, { ...workflow('cli.once').job('a', 'cli.a', {}).build(), activeKey: 'once' });
    await runRunnableJobs(db.prisma);
    const show = await runCli(db.url, 'runs', 'show', workflowRunId);
    expect(show.stdout).toMatch(new RegExp(`active key: "once" \\(global\\)  claimed ${ISO}  released ${ISO}\\n`));
    expect(show.stdout).not.toContain('appends');

    const plain = await enqueueWorkflowRun(db.prisma, workflow('cli.plain').job('a', 'cli.a', {}).build());
    const plainShow = await runCli(db.url, 'runs', 'show', plain.workflowRunId);
    expect(plainShow.stdout).not.toMatch(/active key|appends/);
    expect(JSON.parse((await runCli(db.url, '--json', 'runs', 'show', plain.workflowRunId)).stdout)).toMatchObject({ activeKey: null, mutations: [] });

    expect((await runCli(db.url, '--org', 'someone-else', 'runs', 'show', workflowRunId)).code).toBe(3);
  });
});
