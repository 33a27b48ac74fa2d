/**
 * The dashboard in a real browser: Debian's Chromium (package `chromium`,
 * installed by .ci/run when missing) driven by playwright-core, which
 * downloads nothing. The page is built first (scripts/build-dashboard.ts), so
 * no prior `npm run build` is needed. Without Chromium the file says why and
 * is skipped, visibly.
 *
 * Screenshots go to test-artifacts/ (git-ignored); with
 * RUNLEDGER_UPDATE_SCREENSHOTS=1 they are also copied to docs/ for the docs site and the README.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { Route } from 'playwright-core';
import {
  claimJobs,
  completeExternalWorkflowStep,
  createDashboardFetchHandler,
  enqueueJob,
  enqueueWorkflowRun,
  organizationScope,
  releaseJob,
  workflow,
} from '../../src/index.js';
import { chromiumAvailable, screenshot, useDashboardInChromium } from '../harness/browser.js';
import { useTestDatabase } from '../harness/database.js';
import { SCOPE_HEADER, scopeFromHeader, serveDashboard } from '../harness/dashboard.js';
import { countFinishedHistory } from '../harness/finished-history.js';
import { fetchToNode } from '../harness/fetch-bridge.js';
import { runRunnableJobs, stepsByKey } from '../harness/workflow-helpers.js';

const hasChromium = chromiumAvailable('dashboard browser tests');

const db = useTestDatabase();

describe.skipIf(!hasChromium)('dashboard in Chromium', () => {
  const ui = useDashboardInChromium(db, { dashboard: { basePath: '/ops/runledger' } });
  const { openPage } = ui;

  it('shows overview counts equal to the database', async () => {
    for (let n = 0; n < 3; n += 1) await enqueueJob(db.prisma, { jobType: 'browser.mail', payload: { n } });
    await enqueueJob(db.prisma, { jobType: 'browser.bill', payload: {} });
    const page = await openPage('#/');
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE status = 'PENDING'`;
    const pending = row!.n;
    await page
      .locator('[data-testid=pending-total]')
      .filter({ hasText: String(pending) })
      .waitFor();
    const mailPending = await page.locator('td[data-type="browser.mail"][data-status="PENDING"]').innerText();
    expect(mailPending.trim()).toBe('3');
    // Every form control is labelled.
    // (Browser-side code as strings: this file compiles without the DOM library.)
    const unlabelled = await page.evaluate("[...document.querySelectorAll('input, select, textarea')].filter((el) => el.labels.length === 0).length");
    expect(unlabelled).toBe(0);
    await page.context().close();
  });

  it('draws a run as a DAG and advances it without a reload when its external step is completed in the page', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('report.weekly')
        .organization('acme')
        .job('fetch-news', 'report.fetch', { source: 'news' })
        .job('fetch-rates', 'report.fetch', { source: 'rates' })
        .job('summarize', 'report.summarize', {})
        .afterSuccess('summarize', ['fetch-news', 'fetch-rates'])
        .job('audit', 'report.audit', {})
        .afterTerminal('audit', ['fetch-news', 'fetch-rates'])
        .external('approval')
        .afterSuccess('approval', ['summarize'])
        .job('publish', 'report.publish', {}, { stage: 'awaiting approval' })
        .afterSuccess('publish', ['approval'])
        .resultStep('publish')
        .build(),
    );
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: { ok: true } }));
    expect((await stepsByKey(db.prisma, workflowRunId)).approval!.status).toBe('WAITING_FOR_EXTERNAL');

    const page = await openPage(`#/runs/${workflowRunId}`, 'org:acme');
    const node = (key: string, status: string) => page.locator(`svg.dag [data-step-key="${key}"][data-status="${status}"]`);
    await node('approval', 'WAITING_FOR_EXTERNAL').waitFor();
    expect(await page.locator('svg.dag .node').count()).toBe(6);
    expect(await page.locator('svg.dag path.edge-ON_TERMINAL').count()).toBe(2);
    expect(await page.locator('svg.dag path.edge-ON_SUCCESS').count()).toBe(4);
    // The step's stage, in the steps table and in the node's tooltip.
    await page.locator('tr:has(button:text-is("publish")) [data-testid=step-stage]').filter({ hasText: 'awaiting approval' }).waitFor();
    expect(await page.locator('svg.dag [data-step-key="publish"] title').textContent()).toContain('stage awaiting approval');
    await screenshot(page, 'dashboard-run.png');

    // A marker a reload would wipe.
    await page.evaluate('window.stayed = true');
    // Keyboard: focus the node, open it with Enter, complete the step from the form.
    await page.locator('svg.dag [data-step-key="approval"]').focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('Output (JSON, success only)').fill('{"approvedBy":"ana"}');
    await page.getByRole('button', { name: 'Complete step' }).click();
    await node('approval', 'SUCCEEDED').waitFor();
    await node('publish', 'ENQUEUED').waitFor();
    const steps = await stepsByKey(db.prisma, workflowRunId);
    expect(steps.approval!.output).toEqual({ approvedBy: 'ana' });

    // A change made elsewhere (a worker finishing publish) reaches the open page too.
    await runRunnableJobs(db.prisma, () => ({ ok: true, output: { url: 'https://example.test/r' } }));
    await node('publish', 'SUCCEEDED').waitFor();
    await page.locator('[data-testid=run-status]').filter({ hasText: 'succeeded' }).waitFor();
    expect(await page.evaluate('window.stayed')).toBe(true);
    await screenshot(page, 'dashboard-run-finished.png', { forReadme: false });

    // From the steps table to the publish job's page, then to the jobs list, all in the same page.
    await page.getByRole('link', { name: `…${steps.publish!.jobId!.slice(-8)}` }).click();
    await page.locator('#job-title').filter({ hasText: steps.publish!.jobId! }).waitFor();
    await page
      .locator('table.list td')
      .filter({ hasText: /^SUCCEEDED$/ })
      .first()
      .waitFor();
    await page.getByRole('link', { name: `step publish of run ${workflowRunId}` }).waitFor();
    // Its one attempt: the worker that ran it, and how it ended.
    const attempt = page.locator('[data-testid=attempt-row]');
    await attempt.locator('[data-testid=attempt-outcome]').filter({ hasText: 'succeeded' }).waitFor();
    expect(await attempt.count()).toBe(1);
    expect(await attempt.locator('td').nth(2).innerText()).toBe('test-worker');
    await screenshot(page, 'dashboard-job.png', { forReadme: false });
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Jobs' }).click();
    await page.getByLabel('Type', { exact: true }).fill('report.publish');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('link', { name: steps.publish!.jobId! }).waitFor();
    expect(await page.evaluate('window.stayed')).toBe(true);
    await page.context().close();
  });

  it("shows a library error in the page, and no other organization's run", async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('browser.other').organization('other').external('gate').build());
    const foreign = await openPage(`#/runs/${workflowRunId}`, 'org:acme');
    await foreign.locator('#error').filter({ hasText: 'workflow.run_not_found' }).waitFor();
    expect(await foreign.locator('svg.dag .node').count()).toBe(0);
    await foreign.context().close();

    // The page shows the run, then the step is completed elsewhere: the form's click gets the library's conflict code.
    const page = await openPage(`#/runs/${workflowRunId}`, 'org:other');
    await page.locator('svg.dag [data-step-key="gate"]').click();
    const button = page.getByRole('button', { name: 'Complete step' });
    await button.waitFor();
    // From here the page's reads of the run are held, so no refresh (live or polled) replaces the stale form before the click.
    const held: Route[] = [];
    await page.route(`**/api/runs/${workflowRunId}`, (route) => void held.push(route));
    await completeExternalWorkflowStep(db.prisma, { workflowRunId, stepKey: 'gate', scope: organizationScope('other'), outcome: { status: 'failed' } });
    await button.click();
    await page.locator('#error').filter({ hasText: 'workflow.' }).waitFor();
    await page.context().close();
  });

  it('shows a claimed step RUNNING within a couple of seconds, though a claim sends no notification', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('browser.claimed').job('work', 'browser.claimed', {}).build());
    const page = await openPage(`#/runs/${workflowRunId}`);
    await page.locator('svg.dag [data-step-key="work"][data-status="ENQUEUED"]').waitFor();
    await page
      .locator('#live')
      .filter({ hasText: /^live$/ })
      .waitFor();
    // While a step waits to be claimed the page polls every second instead of every 5 s (views/run.ts): two reads
    // in a row, with nothing changing in between, come well within 5 s.
    const refreshedAt = () => page.evaluate('document.body.dataset.refreshedAt');
    for (let i = 0; i < 2; i += 1) {
      const before = await refreshedAt();
      await expect.poll(refreshedAt, { timeout: 3_500, interval: 100 }).not.toBe(before);
    }
    const [claimed] = await claimJobs(db.prisma, { workerId: 'browser-claimer', jobTypes: ['browser.claimed'], limit: 1, leaseSeconds: 60, markRunning: true });
    expect(claimed?.step?.workflowRunId).toBe(workflowRunId);
    await page.locator('svg.dag [data-step-key="work"][data-status="RUNNING"]').waitFor({ timeout: 3_500 });
    await page.context().close();
  });

  it('draws a 200-step run whole once its fan-out is expanded, scaled to fit, and zooms from the keyboard', async () => {
    let builder = workflow('browser.wide').job('root', 'wide.root', {});
    for (let i = 0; i < 198; i += 1) builder = builder.job(`part-${i}`, 'wide.part', { i }).afterSuccess(`part-${i}`, ['root']);
    const parts = Array.from({ length: 198 }, (_, i) => `part-${i}`);
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.job('merge', 'wide.merge', {}).afterTerminal('merge', parts).build());
    const page = await openPage(`#/runs/${workflowRunId}`);
    await page.locator('svg.dag [data-step-key="merge"]').waitFor();
    // The 198 parts are one group until expanded (dashboard-views.test.ts tests the group itself).
    await page.locator('svg.dag .node.group').click();
    await expect.poll(() => page.locator('svg.dag .node').count()).toBe(200);
    const scale = async () => Number(/scale\(([0-9.]+)\)/.exec((await page.locator('svg.dag g.viewport').getAttribute('transform')) ?? '')?.[1]);
    await expect.poll(scale).toBeLessThan(0.5);
    const fitted = await scale();
    await page.locator('svg.dag').focus();
    await page.keyboard.press('+');
    expect(await scale()).toBeCloseTo(fitted * 1.25, 3);
    await page.keyboard.press('0');
    expect(await scale()).toBeCloseTo(fitted, 3);
    await page.context().close();
  });

  it('hides the actions of a read-only dashboard', async () => {
    const readOnly = await serveDashboard(db.prisma, { readOnly: true });
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('browser.ro').external('gate').build());
    const context = await ui.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${readOnly.url}/#/runs/${workflowRunId}`);
    await page.locator('svg.dag [data-step-key="gate"][data-status="WAITING_FOR_EXTERNAL"]').click();
    await page.locator('.step-panel h2').filter({ hasText: 'gate' }).waitFor();
    expect(await page.locator('form.action').count()).toBe(0);
    await expect(page.locator('#scope').innerText()).resolves.toContain('read-only');
    await context.close();
  });

  it('shows the overview after the runs above (the README screenshot)', async () => {
    const page = await openPage('#/');
    await page.locator('td[data-type="report.weekly"][data-status="SUCCEEDED"]').filter({ hasText: '1' }).waitFor();
    // What the screenshot shows is the database: every job type's and workflow type's count in every status column (every
    // finished row here is minutes old, inside the finished columns' 24 h window, so whole-table counts are the expected ones).
    const jobs = await db.prisma.$queryRaw<{ type: string; status: string; n: number }[]>`
      SELECT job_type AS type, status::text AS status, count(*)::int AS n FROM runledger.job_queue GROUP BY 1, 2`;
    const runs = await db.prisma.$queryRaw<{ type: string; status: string; n: number }[]>`
      SELECT workflow_type AS type, status::text AS status, count(*)::int AS n FROM runledger.workflow_runs GROUP BY 1, 2`;
    const inDatabase = [
      ...jobs.map((row) => [`Jobs by type and status: ${row.type} ${row.status}`, String(row.n)]),
      ...runs.map((row) => [`Workflow runs by type and status: ${row.type} ${row.status}`, String(row.n)]),
    ];
    const cells = (await page.evaluate(
      "[...document.querySelectorAll('td[data-type][data-status]')].filter((td) => td.dataset.type !== '*').map((td) => [td.closest('table').querySelector('caption').textContent.replace(/ [(]finished: last [^)]*[)]$/, '') + ': ' + td.dataset.type + ' ' + td.dataset.status, td.innerText.trim()])",
    )) as [string, string][];
    const columnOf = (key: string) => `${key.split(': ')[0]} ${key.split(' ').at(-1)}`;
    const columns = new Set(cells.map(([key]) => columnOf(key)));
    expect(Object.fromEntries(cells.filter(([, n]) => n !== '0'))).toEqual(Object.fromEntries(inDatabase.filter(([key]) => columns.has(columnOf(key!)))));
    expect(cells).toContainEqual(['Workflow runs by type and status: report.weekly SUCCEEDED', '1']);
    const file = await screenshot(page, 'dashboard-overview.png');
    // A PNG of the page at the viewport's width (IHDR's width, bytes 16-19).
    const png = await readFile(file);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(png.readUInt32BE(16)).toBe(1280);
    await page.context().close();
  });

  it("pages a job's attempts past the first 500, and keeps them across a refresh", async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'browser.restless', payload: {} });
    // 501 leases: each released (runnable at once), so claimed again under the same attempt number.
    for (let n = 0; n < 501; n += 1) {
      const [lease] = await claimJobs(db.prisma, { workerId: `w-${n}`, limit: 1, leaseSeconds: 60, jobTypes: ['browser.restless'] });
      await releaseJob(db.prisma, { ...lease!, reason: 'job.worker_shutdown' });
    }
    const page = await openPage(`#/jobs/${jobId}`);
    const rows = page.locator('[data-testid=attempt-row]');
    const more = page.getByRole('button', { name: 'Show later attempts' });
    await more.waitFor();
    expect(await rows.count()).toBe(500);
    await more.click();
    await rows.nth(500).locator('td').filter({ hasText: 'w-500' }).waitFor();
    expect(await more.count()).toBe(0);
    // A new lease after the pages were loaded shows up on the next refresh, the loaded rows stay.
    await claimJobs(db.prisma, { workerId: 'w-late', limit: 1, leaseSeconds: 60, jobTypes: ['browser.restless'] });
    await rows.nth(501).locator('td').filter({ hasText: 'w-late' }).waitFor();
    expect(await rows.count()).toBe(502);
    expect(await rows.nth(501).locator('[data-testid=attempt-outcome]').innerText()).toBe('—');
    await page.context().close();
  });
  it('searches jobs and runs from a labelled box by keyboard, keeps the search in the hash, and updates the results as jobs arrive', async () => {
    await enqueueJob(db.prisma, { jobType: 'browser.search', payload: {}, organizationId: 'acme', idempotencyKey: 'Invoice-2031-X' });
    await enqueueJob(db.prisma, { jobType: 'browser.search', payload: {}, organizationId: 'globex', idempotencyKey: 'invoice-2031-Y' });
    const page = await openPage('#/jobs', 'org:acme');
    const box = page.getByLabel('Search', { exact: true });
    await box.focus();
    await page.keyboard.type('INVOICE-2031');
    await page.keyboard.press('Enter');
    // (Polled with evaluate: waitForFunction evaluates a string in the page, which its CSP refuses.)
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/jobs?q=INVOICE-2031');
    const rows = page.locator('table.list tbody tr');
    await page.locator('[data-testid=search-note][data-kind=key_substring]').filter({ hasText: 'newest 10,000' }).waitFor();
    await rows.first().waitFor();
    expect(await rows.count()).toBe(1);
    // The box keeps the text and says what it searches; globex's job is not in this scope.
    expect(await box.inputValue()).toBe('INVOICE-2031');
    expect(await box.getAttribute('aria-describedby')).toBe('filter-q-hint');
    // A job that arrives later shows up through the refresh loop, without a reload.
    await page.evaluate('window.stayed = true');
    await enqueueJob(db.prisma, { jobType: 'browser.search', payload: {}, organizationId: 'acme', idempotencyKey: 'invoice-2031-z' });
    await page.locator('table.list tbody tr').nth(1).waitFor();
    expect(await page.evaluate('window.stayed')).toBe(true);

    // An id prefix, typed with its dash, on the runs page.
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('browser.searched').organization('acme').external('gate').build());
    await page.goto(`${ui.served.url}/#/runs?q=${workflowRunId.slice(0, 13)}`);
    await page.getByRole('link', { name: workflowRunId }).waitFor();
    await page.locator('[data-testid=search-note][data-kind=id_prefix]').waitFor();
    expect(await page.getByLabel('Search', { exact: true }).inputValue()).toBe(workflowRunId.slice(0, 13));
    const ids = await page.locator('table.list tbody tr td:first-child a').allInnerTexts();
    expect(ids.every((id) => id.startsWith(workflowRunId.slice(0, 13)))).toBe(true);
    await page.context().close();
  });

  it('charts the last hour per minute with totals equal to the database, and a table alternative', async () => {
    // Finished jobs at known minutes: 2 succeeded 4 minutes ago, 1 dead-lettered 9 minutes ago, 1 canceled 30 minutes ago.
    const seeded: string[] = [];
    for (const [minutesAgo, status] of [
      [4, 'SUCCEEDED'],
      [4, 'SUCCEEDED'],
      [9, 'DEAD_LETTERED'],
      [30, 'CANCELED'],
    ] as const) {
      const { jobId } = await enqueueJob(db.prisma, { jobType: 'browser.timed', payload: {} });
      seeded.push(jobId);
      await db.prisma.$executeRaw`
        UPDATE runledger.job_queue SET status = ${status}::runledger.job_status, attempt = 1, started_at = now() - interval '1 hour',
               finished_at = date_trunc('minute', now()) - make_interval(mins => ${minutesAgo}::int) + interval '20 seconds',
               output = CASE WHEN ${status} = 'SUCCEEDED' THEN '{}'::jsonb END,
               last_error_code = CASE WHEN ${status} = 'DEAD_LETTERED' THEN 'test.failed' END, last_error_message = CASE WHEN ${status} = 'DEAD_LETTERED' THEN 'no' END
         WHERE id = ${jobId}::uuid`;
    }
    // Finished by hand, not by a terminal statement: their finished-job counters as the statements add them.
    await countFinishedHistory(db.prisma, `id IN (${seeded.map((id) => `'${id}'::uuid`).join(', ')})`);
    const page = await openPage('#/');
    const chart = page.locator('[data-testid=throughput]');
    await chart.locator('svg g.bar').nth(59).waitFor({ state: 'attached' });
    const read = async () =>
      (await page.evaluate(
        `(() => { const f = document.querySelector('[data-testid=throughput]'); return { ...f.dataset, bars: [...f.querySelectorAll('g.bar')].map((g) => ({ ...g.dataset })) }; })()`,
      )) as Record<string, any>;
    const shown = await read();
    const [db0] = await db.prisma.$queryRaw<{ succeeded: number; dead: number; canceled: number; retried: number }[]>`
      SELECT (SELECT count(*)::int FROM runledger.job_queue WHERE status = 'SUCCEEDED' AND finished_at >= ${shown.from}::timestamptz AND finished_at <= ${shown.to}::timestamptz) AS succeeded,
             (SELECT count(*)::int FROM runledger.job_queue WHERE status = 'DEAD_LETTERED' AND finished_at >= ${shown.from}::timestamptz AND finished_at <= ${shown.to}::timestamptz) AS dead,
             (SELECT count(*)::int FROM runledger.job_queue WHERE status = 'CANCELED' AND finished_at >= ${shown.from}::timestamptz AND finished_at <= ${shown.to}::timestamptz) AS canceled,
             (SELECT count(*)::int FROM runledger.job_attempts WHERE outcome = 'FAILED_RETRY' AND finished_at >= ${shown.from}::timestamptz AND finished_at <= ${shown.to}::timestamptz) AS retried`;
    expect([shown.totalSucceeded, shown.totalDeadLettered, shown.totalCanceled, shown.totalRetried].map(Number)).toEqual([
      db0!.succeeded,
      db0!.dead,
      db0!.canceled,
      db0!.retried,
    ]);
    expect(db0!.canceled).toBeGreaterThanOrEqual(1);
    // Each seeded minute's bar holds at least what was seeded there, per the database's own minute.
    const bar = (minutesAgo: number) => shown.bars[59 - minutesAgo];
    const [minutes] = await db.prisma.$queryRaw<{ four: Date; nine: Date; thirty: Date }[]>`
      SELECT date_trunc('minute', ${shown.to}::timestamptz) - interval '4 minutes' AS four, date_trunc('minute', ${shown.to}::timestamptz) - interval '9 minutes' AS nine,
             date_trunc('minute', ${shown.to}::timestamptz) - interval '30 minutes' AS thirty`;
    expect([bar(4).minute, bar(9).minute, bar(30).minute]).toEqual([minutes!.four.toISOString(), minutes!.nine.toISOString(), minutes!.thirty.toISOString()]);
    expect(Number(bar(4).succeeded)).toBeGreaterThanOrEqual(2);
    expect(Number(bar(9).deadLettered)).toBeGreaterThanOrEqual(1);
    expect(Number(bar(30).canceled)).toBeGreaterThanOrEqual(1);
    const perBar = shown.bars.reduce((sum: number, b: Record<string, string>) => sum + Number(b.succeeded), 0);
    expect(perBar).toBe(db0!.succeeded);
    // Without the picture: a summary label, and the minutes as a table behind a keyboard-operable disclosure.
    expect(await chart.locator('svg').getAttribute('aria-label')).toContain(`${db0!.succeeded} succeeded`);
    await expect.poll(() => page.evaluate('document.body.dataset.refreshedAt')).toBeDefined();
    await chart.locator('summary').focus();
    await page.keyboard.press('Enter');
    expect(await chart.locator('table.chart-table tbody tr').count()).toBe(60);
    // The table stays open across the refresh loop.
    const refreshed = await page.evaluate('document.body.dataset.refreshedAt');
    await expect.poll(() => page.evaluate('document.body.dataset.refreshedAt'), { timeout: 15_000 }).not.toBe(refreshed);
    expect(await chart.locator('details').getAttribute('open')).toBe('');
    await page.context().close();
  });

  // Last: its run would otherwise show in the README's overview screenshot.
  it('works the same served by the Fetch API handler, mounted as a Next.js catch-all route would be: live stream, CSRF-checked action', async () => {
    const dashboard = createDashboardFetchHandler({
      db: db.prisma,
      listenConnectionString: db.url,
      basePath: '/admin/runledger',
      authorize: (request) => scopeFromHeader(request.headers.get(SCOPE_HEADER) ?? undefined),
    });
    const server = http.createServer(fetchToNode(dashboard));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const context = await ui.browser.newContext({ extraHTTPHeaders: { [SCOPE_HEADER]: 'org:next' } });
    try {
      const { workflowRunId } = await enqueueWorkflowRun(
        db.prisma,
        workflow('browser.fetch').organization('next').external('gate').job('after', 'browser.after', {}).afterSuccess('after', ['gate']).build(),
      );
      const page = await context.newPage();
      ui.watchErrors(page, 'fetch handler');
      // The bare base path redirects to its trailing slash, as on the Node handler.
      await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/runledger#/runs/${workflowRunId}`);
      expect(new URL(page.url()).pathname).toBe('/admin/runledger/');
      await page
        .locator('#live')
        .filter({ hasText: /^live$/ })
        .waitFor();
      await page.locator('svg.dag [data-step-key="gate"][data-status="WAITING_FOR_EXTERNAL"]').click();
      await page.getByLabel('Output (JSON, success only)').fill('{"via":"fetch"}');
      await page.getByRole('button', { name: 'Complete step' }).click();
      await page.locator('svg.dag [data-step-key="after"][data-status="ENQUEUED"]').waitFor();
      expect((await stepsByKey(db.prisma, workflowRunId)).gate!.output).toEqual({ via: 'fetch' });
    } finally {
      await context.close();
      await dashboard.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
