/**
 * A durable function run's page in Chromium: the steps table lists the recorded steps in call order,
 * labelled with their call, even when a failed call was recorded after its parallel sibling.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineFunction, enqueueWorkflowRunHandle } from '../../src/index.js';
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
});
