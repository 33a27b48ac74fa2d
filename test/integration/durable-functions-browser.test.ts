/**
 * A durable function run's page in Chromium: the steps table lists the recorded steps in call order,
 * labelled with their call, even when a failed call was recorded after its parallel sibling.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineFunction, enqueueWorkflowRun, enqueueWorkflowRunHandle, getWorkflowRun, noOrganizationScope, TerminalError } from '../../src/index.js';
import { chromiumAvailable, useDashboardInChromium } from '../harness/browser.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';

const hasChromium = chromiumAvailable('durable function browser tests');
const db = useTestDatabase();
const startWorker = useWorkers(db);

describe.skipIf(!hasChromium)('a function run in the dashboard', () => {
  const { openPage } = useDashboardInChromium(db);

  it('lists the recorded steps in call order with their call index', async () => {
    let attempt = 0;
    const fn = defineFunction(
      'fnb.order',
      z.object({}),
      async (_input, ctx) => {
        attempt += 1;
        const [x, y] = await Promise.all([
          ctx.step('x', () => {
            if (attempt === 1) throw new Error('x fails once');
            return 'x';
          }),
          ctx.step('y', () => 'y'),
        ]);
        return `${x}${y}`;
      },
      { retry: { maxAttempts: 2, backoff: { baseDelayMs: 1, maxDelayMs: 1 } } },
    );
    await startWorker({ handlers: [fn] });
    const handle = await enqueueWorkflowRunHandle(db.prisma, fn.run({}), { pollIntervalMs: 20 });
    expect(await handle.getResult({ timeoutMs: 20_000 })).toBe('xy');

    const page = await openPage(`#/runs/${handle.workflowRunId}`);
    await page.locator('tr:has(button:text-is("y"))').waitFor();
    const locators = page.locator('tr:has(button.link)');
    const rows: string[][] = [];
    for (let n = 0; n < (await locators.count()); n += 1) {
      const cells = locators.nth(n).locator('td');
      rows.push([((await cells.nth(0).textContent()) ?? '').trim(), ((await cells.nth(1).textContent()) ?? '').trim()]);
    }
    expect(rows.filter(([key]) => key === 'x' || key === 'y')).toEqual([
      ['x', 'function call 0'],
      ['y', 'function call 1'],
    ]);
    await page.context().close();
  });

  it('forks a failed function run from a call the operator names', async () => {
    const fn = defineFunction(
      'fnb.fork',
      z.object({}),
      async (_input, ctx) => {
        await ctx.step('a', () => 1);
        await ctx.step('b', () => 2);
        return ctx.step('c', () => {
          throw new TerminalError('c failed', { code: 'test.c' });
        });
      },
      { retry: { maxAttempts: 1 } },
    );
    await startWorker({ handlers: [fn] });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, fn.run({}));
    const deadline = Date.now() + 20_000;
    while ((await getWorkflowRun(db.prisma, { scope: noOrganizationScope(), workflowRunId })).status !== 'COMPLETED_WITH_ERRORS') {
      if (Date.now() > deadline) throw new Error('the function did not fail');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    const page = await openPage(`#/runs/${workflowRunId}`);
    await page.getByLabel('Reason (required)').fill('b was wrong');
    await page.getByLabel('From call (optional: reuse only the calls before it)').fill('1');
    await page.getByRole('button', { name: 'Recover…' }).click();
    await page.getByText('reusing the steps called before call 1').waitFor();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('#run-title').filter({ hasNotText: workflowRunId }).waitFor();
    const carried = await db.prisma.$queryRaw<{ step_key: string }[]>`
      SELECT ws.step_key FROM runledger.workflow_recoveries r JOIN runledger.workflow_steps ws ON ws.workflow_run_id = r.recovery_run_id
       WHERE r.source_run_id = ${workflowRunId}::uuid AND ws.status_reason = 'workflow.recovery_carried'`;
    expect(carried.map((row) => row.step_key)).toEqual(['a']);
    await page.context().close();
  });
});
