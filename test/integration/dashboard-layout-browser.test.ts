/**
 * The dashboard's layout in Chromium, on every page with data in it: no
 * horizontal scroll at a phone's 390x844 or a laptop's 1440x900 (the page's
 * scrollWidth within its clientWidth, and at 1440 no list table scrolling
 * sideways either); the dark-mode toggle, remembered across a reload; the
 * jobs list's error message beside its code, whole on hover.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { z } from 'zod';
import { claimJobs, defineJob, enqueueJob, enqueueWorkflowRun, failJob, syncJobDefinitions, upsertSchedule, workflow } from '../../src/index.js';
import { heartbeatWorkerRegistration } from '../../src/worker/registry.js';
import { buildDashboardAssets } from '../../scripts/build-dashboard.js';
import { useTestDatabase } from '../harness/database.js';
import { chromiumAvailable, launchChromium, screenshot } from '../harness/browser.js';
import { serveDashboard, type ServedDashboard } from '../harness/dashboard.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const hasChromium = chromiumAvailable('dashboard layout tests');

const LONG_MESSAGE = `The SMTP relay refused the message after 3 tries: 451 4.7.1 greylisted, please retry later (${'x'.repeat(300)})`;

// Browser-side code as strings: this file compiles without the DOM library.
/** The page's horizontal overflow, and each list table that scrolls sideways (its caption or first header). */
const OVERFLOW = `(() => {
  const root = document.scrollingElement;
  const tables = [...document.querySelectorAll('table.list')]
    .filter((t) => t.getClientRects().length > 0 && t.scrollWidth > t.clientWidth + 1)
    .map((t) => (t.querySelector('caption')?.textContent || t.querySelector('th')?.textContent || 'table').trim() + ': ' + t.scrollWidth + ' > ' + t.clientWidth);
  return { scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, tables };
})()`;

describe.skipIf(!hasChromium)('dashboard layout in Chromium', () => {
  let browser: Browser;
  let served: ServedDashboard;
  let runId: string;
  let bigRunId: string;
  let jobId: string;

  beforeAll(async () => {
    await buildDashboardAssets();
    browser = await launchChromium();
    served = await serveDashboard(db.prisma, { listenConnectionString: db.url });
    runId = (
      await enqueueWorkflowRun(
        db.prisma,
        workflow('layout.review-and-publish-with-a-long-workflow-type-name', { customer: 'a-customer-with-a-long-identifier-0123456789' })
          .job('draft-the-customer-facing-announcement', 'layout.draft', {})
          .external('approve')
          .job('publish', 'layout.publish', {})
          .afterSuccess('publish', ['draft-the-customer-facing-announcement', 'approve'])
          .build(),
      )
    ).workflowRunId;
    let flow = workflow('layout.fanout');
    for (let i = 0; i < 25; i += 1) flow = flow.job(`part-${i}`, 'layout.part', { i });
    bigRunId = (await enqueueWorkflowRun(db.prisma, flow.build())).workflowRunId;
    await runRunnableJobs(db.prisma, (job) =>
      job.jobType === 'layout.part' && (job.payload as { i: number }).i === 3 ? { ok: false } : { ok: true, output: {} },
    );
    jobId = (
      await enqueueJob(db.prisma, { jobType: 'layout.mail.with-a-long-type-name', payload: { to: 'ana' }, maxAttempts: 1, idempotencyKey: 'k'.repeat(120) })
    ).jobId;
    const claimed = await claimJobs(db.prisma, {
      workerId: 'layout-worker',
      jobTypes: ['layout.mail.with-a-long-type-name'],
      limit: 1,
      leaseSeconds: 60,
      markRunning: true,
    });
    await failJob(db.prisma, {
      ...claimed[0]!,
      error: { code: 'smtp.greylisted', message: LONG_MESSAGE, stack: `Error: greylisted\n    at send (${'deep/'.repeat(40)}mail.js:1:1)` },
      retryable: false,
    });
    await upsertSchedule(db.prisma, {
      key: 'layout-nightly-report-for-every-organization',
      cron: '0 3 * * *',
      jobType: 'layout.mail.with-a-long-type-name',
      payload: {},
      enabled: true,
    });
    await syncJobDefinitions(db.prisma, [defineJob('layout.mail.with-a-long-type-name', z.object({}), async () => null)]);
    await heartbeatWorkerRegistration(db.prisma, {
      workerId: 'layout-worker-on-a-host-with-a-long-name',
      jobTypes: ['layout.mail.with-a-long-type-name', 'layout.part', 'layout.draft', 'layout.publish'],
      concurrency: 8,
      inFlight: 1,
      ttlMs: 600_000,
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  async function open(hash: string, ready: string, viewport: { width: number; height: number }): Promise<Page> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    await page.goto(`${served.url}/${hash}`);
    await page.locator(ready).first().waitFor();
    return page;
  }

  const pages = (): [string, string, string][] => [
    ['overview', '#/', '[data-testid=pending-total]'],
    ['jobs', '#/jobs', 'table.list td'],
    ['job', `#/jobs/${jobId}`, '[data-testid=attempt-row]'],
    ['runs', '#/runs', 'table.list td'],
    ['run', `#/runs/${runId}`, 'svg.dag [data-step-key="publish"]'],
    ['large run', `#/runs/${bigRunId}`, 'svg.dag'],
    ['queues', '#/queues', 'tr[data-type="layout.part"]'],
    ['dead letters', '#/dead-letters', '[data-testid=dead-letter-groups] tbody tr'],
    ['workers', '#/workers', 'tr[data-worker]'],
    ['schedules', '#/schedules', 'tr[data-schedule]'],
    ['definitions', '#/definitions', 'tr[data-type]'],
  ];

  for (const viewport of [
    { width: 390, height: 844 },
    { width: 1440, height: 900 },
  ]) {
    it(`scrolls no page sideways at ${viewport.width}x${viewport.height}`, async () => {
      const found: { page: string; scrollWidth: number; clientWidth: number; tables: string[] }[] = [];
      for (const [name, hash, ready] of pages()) {
        const page = await open(hash, ready, viewport);
        const measured = (await page.evaluate(OVERFLOW)) as { scrollWidth: number; clientWidth: number; tables: string[] };
        // On a phone a wide list scrolls inside its own box (the page does not); on a laptop it fits.
        found.push({ page: name, ...measured, tables: viewport.width >= 1440 ? measured.tables : [] });
        if (name === 'runs' || name === 'dead letters') await screenshot(page, `layout-${name.replace(' ', '-')}-${viewport.width}.png`, { forReadme: false });
        await page.context().close();
      }
      expect(found.filter((f) => f.scrollWidth > f.clientWidth || f.tables.length > 0)).toEqual([]);
      expect(found.every((f) => f.clientWidth === viewport.width)).toBe(true);
    }, 300_000);
  }

  it('catches a page that scrolls sideways (a planted wide element)', async () => {
    const page = await open('#/', '[data-testid=pending-total]', { width: 390, height: 844 });
    await page.evaluate(`document.getElementById('main').append(Object.assign(document.createElement('div'), { style: 'width: 700px; height: 4px' }))`);
    const measured = (await page.evaluate(OVERFLOW)) as { scrollWidth: number; clientWidth: number };
    expect(measured.scrollWidth).toBeGreaterThan(measured.clientWidth);
    await page.context().close();
  });

  it('toggles dark mode, follows the system until then, and remembers the choice across a reload', async () => {
    const background = (page: Page) =>
      page.evaluate(`getComputedStyle(document.body).backgroundColor || getComputedStyle(document.documentElement).backgroundColor`);
    const rootBackground = (page: Page) => page.evaluate(`getComputedStyle(document.documentElement).backgroundColor`);
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
    const page = await context.newPage();
    await page.goto(`${served.url}/#/`);
    const toggle = page.getByRole('button', { name: 'Dark mode' });
    await toggle.waitFor();
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    expect(await rootBackground(page)).toBe('rgb(255, 255, 255)');
    await toggle.click();
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    expect(await rootBackground(page)).toBe('rgb(11, 18, 32)');
    await page.reload();
    await page.getByRole('button', { name: 'Dark mode' }).waitFor();
    expect(await page.getByRole('button', { name: 'Dark mode' }).getAttribute('aria-pressed')).toBe('true');
    expect(await rootBackground(page)).toBe('rgb(11, 18, 32)');
    await page.getByRole('button', { name: 'Dark mode' }).click();
    await page.reload();
    await page.getByRole('button', { name: 'Dark mode' }).waitFor();
    expect(await rootBackground(page)).toBe('rgb(255, 255, 255)');
    expect(await background(page)).not.toBe('rgb(11, 18, 32)');
    await context.close();

    // No choice stored: the system's preference decides.
    const dark = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'dark' });
    const darkPage = await dark.newPage();
    await darkPage.goto(`${served.url}/#/`);
    await darkPage.getByRole('button', { name: 'Dark mode' }).waitFor();
    expect(await darkPage.getByRole('button', { name: 'Dark mode' }).getAttribute('aria-pressed')).toBe('true');
    expect(await rootBackground(darkPage)).toBe('rgb(11, 18, 32)');
    await dark.close();
  });

  it("shows a job's error message beside its code in the jobs list, cut to a line and whole on hover", async () => {
    const page = await open('#/jobs?status=DEAD_LETTERED', 'table.list td', { width: 1440, height: 900 });
    const cell = page.locator(`tr:has(a[href="#/jobs/${jobId}"]) [data-col=error]`);
    await cell.waitFor();
    expect(await cell.locator('code').innerText()).toBe('smtp.greylisted');
    const message = cell.locator('.error-message');
    expect(await message.getAttribute('title')).toBe(LONG_MESSAGE);
    expect((await message.innerText()).startsWith('The SMTP relay refused the message')).toBe(true);
    // Cut to one line: the box is narrower than its text.
    expect(
      await message.evaluate(
        (el) => (el as unknown as { scrollWidth: number; clientWidth: number }).scrollWidth > (el as unknown as { clientWidth: number }).clientWidth,
      ),
    ).toBe(true);
    await page.context().close();
  });
});
