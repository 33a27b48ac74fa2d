/**
 * "What needs me, and why, in ten seconds", in Chromium: on planted trouble
 * (test/harness/attention-scenario.ts) the overview names the stuck, the
 * saturated and the failing type, the runs waiting on a person while RUNNING
 * and the newest failures by code, each linked to where it is fixed; the runs
 * list filters to the runs waiting on a person; the workers page lists the
 * jobs each worker holds and flags the stale one. A tenant sees its own.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { enqueueWorkflowRun, workflow } from '../../src/index.js';
import {
  FAILING_CODE,
  FAILING_TYPE,
  plantAttentionScenario,
  SATURATED_TYPE,
  SATURATED_WORKER,
  STALE_WORKER,
  STUCK_TYPE,
  type AttentionScenario,
} from '../harness/attention-scenario.js';
import { chromiumAvailable, screenshot, useDashboardInChromium } from '../harness/browser.js';
import { useTestDatabase } from '../harness/database.js';

const hasChromium = chromiumAvailable('dashboard attention browser tests');
/** The page fits the 1440 px window: no horizontal scroll (browser-side, as a string: no DOM library here). */
const NO_SIDEWAYS_SCROLL = 'document.documentElement.scrollWidth <= document.documentElement.clientWidth';
const db = useTestDatabase();
let planted: AttentionScenario;
let foreignRun: string;

beforeAll(async () => {
  planted = await plantAttentionScenario(db, 'acme');
  foreignRun = (await enqueueWorkflowRun(db.prisma, workflow('att.review').organization('other').external('approve').build())).workflowRunId;
});

describe.skipIf(!hasChromium)('needs attention in Chromium', () => {
  const { openPage } = useDashboardInChromium(db, { viewport: { width: 1440, height: 900 } });

  it('names every planted problem first on the overview, each linked to where it is fixed', async () => {
    const page = await openPage('#/');
    const section = page.locator('[data-testid=attention]');
    const item = (type: string, problem: string) => section.locator(`[data-testid=attention-queue][data-type="${type}"][data-problem="${problem}"]`);
    await item(STUCK_TYPE, 'stuck').filter({ hasText: '1 runnable job' }).filter({ hasText: 'no live worker handles the type' }).waitFor();
    expect(await item(SATURATED_TYPE, 'saturated').innerText()).toMatch(
      /4 jobs waiting, the oldest waiting [34]\.[0-9] min; 3 of 3 slots busy \(1 live worker\)/,
    );
    expect(await item(FAILING_TYPE, 'failing').innerText()).toContain('80% of its jobs failed in the last 1 h (4 dead-lettered of 5)');
    // Nothing else is flagged as saturated or failing.
    expect(await section.locator('[data-problem=saturated]').count()).toBe(1);
    expect(await section.locator('[data-problem=failing]').count()).toBe(1);
    // First on the page: before the counts.
    const order = await page.evaluate(`[...document.querySelectorAll('[data-testid=attention], [data-testid=pending-total]')].map((el) => el.dataset.testid)`);
    expect(order).toEqual(['attention', 'pending-total']);

    const waiting = section.locator('[data-testid=attention-waiting]');
    expect(await waiting.getAttribute('data-count')).toBe('7');
    expect(await waiting.innerText()).toContain('7 runs wait for an external completion');
    const runs = waiting.locator('[data-testid=attention-waiting-run]');
    expect((await runs.filter({ hasText: 'run running' }).count()) + (await runs.filter({ hasText: 'run waiting for external' }).count())).toBe(7);
    expect(await runs.filter({ hasText: 'run running' }).count()).toBe(5);

    // The runs matrix no longer says nobody waits: the sub-state column counts all seven.
    const total = page.locator('table.grid tr.total td[data-substate="WAITING_ON_PERSON"]');
    expect(await total.innerText()).toBe('7');
    expect(await page.locator('table.grid tr.total td[data-status="WAITING_FOR_EXTERNAL"]').innerText()).toBe('2');

    const failure = section.locator(`[data-testid=attention-failures] tr[data-type="${FAILING_TYPE}"][data-code="${FAILING_CODE}"]`);
    expect(await failure.innerText()).toContain('upstream timed out after 40 s');
    const requeue = failure.getByRole('link', { name: 'Requeue 4 dead letters' });
    expect(await requeue.getAttribute('href')).toBe(`#/dead-letters?type=${FAILING_TYPE}&errorCode=${FAILING_CODE}`);
    expect(await page.evaluate(NO_SIDEWAYS_SCROLL)).toBe(true);
    await screenshot(page, 'dashboard-attention.png', { fullPage: false });

    await requeue.click();
    await page.waitForURL(/#\/dead-letters\?type=att\.flaky&errorCode=flaky\.timeout$/);
    await page.goBack();
    await section.locator('[data-testid=attention-waiting] > a').click();
    await page.waitForURL(/#\/runs\?waiting=1$/);
    await page.locator('tr[data-run-id]').first().waitFor();
    expect((await page.locator('tr[data-run-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run-id')))).sort()).toEqual(
      [...planted.runningWaiting, planted.statusWaiting, foreignRun].sort(),
    );
    expect(await page.locator('[data-testid=run-waiting]').count()).toBe(5);
    expect(await page.getByLabel('Waiting on a person (any status)').isChecked()).toBe(true);
    await page.context().close();
  });

  it('filters the runs list by the sub-state from its form, with the status filter', async () => {
    const page = await openPage('#/runs?status=RUNNING');
    await page.locator('tr[data-run-id]').first().waitFor();
    expect(await page.locator(`tr[data-run-id="${planted.notWaiting}"]`).count()).toBe(1);
    await page.getByLabel('Waiting on a person (any status)').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/waiting=1/);
    await page.locator(`tr[data-run-id="${planted.notWaiting}"]`).waitFor({ state: 'detached' });
    // The old rows go when the list reloads, before the new ones come: wait for the new list itself.
    await page.locator(`tr[data-run-id="${planted.runningWaiting[0]}"]`).waitFor();
    expect((await page.locator('tr[data-run-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run-id')))).sort()).toEqual(
      [...planted.runningWaiting].sort(),
    );
    await page.context().close();
  });

  it('lists the jobs each worker holds and its slots, and flags the stale heartbeat', async () => {
    const page = await openPage('#/workers');
    const stale = page.locator(`tr[data-worker="${STALE_WORKER}"]`);
    await stale.waitFor();
    expect(await stale.getAttribute('data-state')).toBe('stale');
    expect(await stale.getAttribute('class')).toBe('flagged');
    expect(await stale.locator('[data-col=last-seen]').innerText()).toMatch(/stale: beats every 3\.3 min/);
    expect(await page.locator('[data-testid=stale-warning]').innerText()).toContain(STALE_WORKER);
    const media = page.locator(`tr[data-worker="${SATURATED_WORKER}"]`);
    expect(await media.getAttribute('data-state')).toBe('live');
    expect(await media.locator('[data-col=slots]').innerText()).toBe('3 of 3');
    const held = media.locator('[data-col=held] a');
    expect((await held.evaluateAll((links) => links.map((link) => link.getAttribute('href')))).sort()).toEqual(
      planted.heldJobIds.map((id) => `#/jobs/${id}`).sort(),
    );
    expect(await page.evaluate(NO_SIDEWAYS_SCROLL)).toBe(true);
    await screenshot(page, 'dashboard-workers-held.png', { forReadme: false });
    await page.goto(`${page.url().split('#')[0]}#/queues`);
    await page.locator('[data-testid=saturated-warning]').filter({ hasText: SATURATED_TYPE }).waitFor();
    expect(await page.locator(`tr[data-type="${SATURATED_TYPE}"]`).getAttribute('class')).toBe('flagged');
    await page.goBack();
    await held.first().click();
    await page.waitForURL(/#\/jobs\/[0-9a-f-]{36}$/);
    await page.locator('[data-testid=attempt-row]').first().waitFor();
    await page.context().close();
  });

  it("shows a tenant its own trouble only, without the fleet's slot counts", async () => {
    const page = await openPage('#/', 'org:other');
    const section = page.locator('[data-testid=attention]');
    await section.locator('[data-testid=attention-waiting][data-count="1"]').waitFor();
    expect(await section.locator('[data-testid=attention-waiting-run]').getAttribute('data-run-id')).toBe(foreignRun);
    expect(await section.locator('[data-testid=attention-queue]').count()).toBe(0);
    expect(await section.locator('[data-testid=attention-failures]').count()).toBe(0);
    await page.context().close();

    const acme = await openPage('#/', 'org:acme');
    const saturated = acme.locator(`[data-testid=attention-queue][data-type="${SATURATED_TYPE}"][data-problem=saturated]`);
    await saturated.waitFor();
    expect(await saturated.innerText()).toContain('every slot of the workers handling it is busy');
    expect(await saturated.innerText()).not.toMatch(/of 3 slots/);
    expect(await acme.locator('[data-testid=attention-waiting]').getAttribute('data-count')).toBe('6');
    await acme.context().close();
  });

  it('says so when nothing needs attention', async () => {
    const page = await openPage('#/', 'org:nobody');
    await page.locator('[data-testid=attention-none]').waitFor();
    expect(await page.locator('[data-testid=attention-queue]').count()).toBe(0);
    await page.context().close();
  });
});
