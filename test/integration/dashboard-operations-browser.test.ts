import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminScope,
  claimJobs,
  defineJob,
  enqueueJob,
  enqueueWorkflowRun,
  failJob,
  getJob,
  getWorkflowRun,
  syncJobDefinitions,
  upsertSchedule,
  workflow,
} from '../../src/index.js';
import { chromiumAvailable, screenshot, useDashboardInChromium } from '../harness/browser.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const hasChromium = chromiumAvailable('dashboard operations browser tests');

const db = useTestDatabase();
const startWorker = useWorkers(db);

async function deadLetter(jobType: string, stack?: string): Promise<string> {
  const { jobId } = await enqueueJob(db.prisma, { jobType, payload: {} });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
  await failJob(db.prisma, { ...lease!, error: { code: 'smtp.down', message: 'relay refused', ...(stack ? { stack } : {}) }, retryable: false });
  return jobId;
}

async function jobStatus(jobId: string): Promise<string> {
  return (await getJob(db.prisma, { scope: adminScope(), jobId })).status;
}

describe.skipIf(!hasChromium)('operator pages in Chromium', () => {
  const ui = useDashboardInChromium(db);
  const { openPage } = ui;

  it('requeues the filtered dead letters after a preview and a confirmation, as one operation', async () => {
    const mail = [await deadLetter('ui.mail'), await deadLetter('ui.mail'), await deadLetter('ui.mail')];
    const sms = await deadLetter('ui.sms');
    const page = await openPage('#/dead-letters?type=ui.mail');
    await page.locator('[data-testid=dead-letter-count]').filter({ hasText: '3 dead-lettered jobs match (type ui.mail)' }).waitFor();
    expect(await page.getByLabel('At most this many jobs').inputValue()).toBe('3');
    // Human labels for the state policy, never the enum.
    const policies = await page.getByLabel('Progress and checkpoint').locator('option').allInnerTexts();
    expect(policies).toEqual(['Keep progress and checkpoint (resume)', 'Clear progress and checkpoint (start over)']);
    expect(await page.locator('body').innerText()).not.toContain('preserve_progress_and_checkpoint');

    await page.getByLabel('At most this many jobs').fill('2');
    await page.getByLabel('Reason (required, recorded on every job)').fill('relay back');
    await page.getByRole('button', { name: 'Requeue…' }).click();
    await page
      .locator('[data-testid=bulk-requeue-confirm]')
      .filter({ hasText: 'Requeue up to 2 dead-lettered jobs (type ui.mail) as new runs? Reason: “relay back”.' })
      .waitFor();
    await screenshot(page, 'dashboard-dead-letters.png');
    // Asked, not done.
    expect(await Promise.all(mail.map(jobStatus))).toEqual(['DEAD_LETTERED', 'DEAD_LETTERED', 'DEAD_LETTERED']);
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page
      .locator('[data-testid=bulk-result]')
      .filter({ hasText: /^Requeued 2 jobs as operation [0-9a-f-]{36}\. More still match/ })
      .waitFor();
    expect(await Promise.all([...mail, sms].map(jobStatus))).toEqual(['PENDING', 'PENDING', 'DEAD_LETTERED', 'DEAD_LETTERED']);
    await page.locator('[data-testid=dead-letter-count]').filter({ hasText: '1 dead-lettered job match' }).waitFor();
    await page.context().close();
  });

  it('cancels a run only with a reason and a confirmation, and Back leaves it running', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, workflow('ui.cancel').external('gate').build());
    const page = await openPage(`#/runs/${workflowRunId}`);
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    // The reason is required: the browser refuses the empty form, nothing is asked.
    expect(await page.locator('[data-testid=cancel-run-confirm]').isVisible()).toBe(false);
    await page.getByLabel('Reason (required)').fill('customer withdrew');
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await page.getByRole('button', { name: 'Back' }).click();
    expect((await getWorkflowRun(db.prisma, { scope: adminScope(), workflowRunId })).status).toBe('WAITING_FOR_EXTERNAL');
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await page.locator('[data-testid=cancel-run-confirm]').filter({ hasText: 'customer withdrew' }).waitFor();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('[data-testid=run-status]').filter({ hasText: 'canceled' }).waitFor();
    expect(await getWorkflowRun(db.prisma, { scope: adminScope(), workflowRunId })).toMatchObject({ status: 'CANCELED', statusReason: 'customer withdrew' });
    await page.context().close();
  });

  it('recovers a failed run from its page, failed steps only, and opens the new run', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('ui.recover').job('fetch', 'ui.fetch', {}).job('load', 'ui.load', {}).afterSuccess('load', ['fetch']).build(),
    );
    await runRunnableJobs(db.prisma, (job) => (job.jobType === 'ui.fetch' ? { ok: true, output: { rows: 3 } } : { ok: false }));
    const page = await openPage(`#/runs/${workflowRunId}`);
    await page.locator('[data-testid=run-status]').filter({ hasText: 'completed with errors' }).waitFor();
    expect(await page.getByLabel('Steps to run again').locator('option:checked').innerText()).toBe('Failed steps only (keep what succeeded)');
    await page.getByLabel('Reason (required)').fill('loader fixed');
    await page.getByRole('button', { name: 'Recover…' }).click();
    await page.locator('[data-testid=recover-run-confirm]').filter({ hasText: 'carrying the steps that succeeded' }).waitFor();
    await screenshot(page, 'dashboard-recover.png');
    const [before] = await db.prisma.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM runledger.workflow_recoveries WHERE source_run_id = ${workflowRunId}::uuid`;
    expect(before!.n).toBe(0);
    await page.getByRole('button', { name: 'Confirm' }).click();
    // The page moves to the new run.
    const title = page.locator('#run-title').filter({ hasNotText: workflowRunId });
    await title.waitFor();
    const recoveryRunId = (await title.locator('.mono').innerText()).trim();
    expect(page.url().endsWith(`#/runs/${recoveryRunId}`)).toBe(true);
    const [link] = await db.prisma.$queryRaw<{ recovery_run_id: string; mode: string }[]>`
      SELECT recovery_run_id::text, mode::text FROM runledger.workflow_recoveries WHERE source_run_id = ${workflowRunId}::uuid`;
    expect(link!.recovery_run_id).toBe(recoveryRunId);
    await page.locator('svg.dag [data-step-key="fetch"][data-status="SUCCEEDED"]').waitFor();
    await page.locator('svg.dag [data-step-key="load"][data-status="ENQUEUED"]').waitFor();
    await page.context().close();
  });

  it('flags a job type with runnable jobs and no live worker on the queues page, and shows the live worker on the workers page', async () => {
    await enqueueJob(db.prisma, { jobType: 'ui.orphan', payload: {} });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const busy = defineJob('ui.busy', z.object({}), async () => {
      await held;
      return null;
    });
    const worker = await startWorker({ handlers: [busy], workerId: 'ui-worker', concurrency: 2 });
    await enqueueJob(db.prisma, { jobType: 'ui.busy', payload: {} });

    const page = await openPage('#/queues');
    // (Types requeued by the tests above wait for a worker too, and are named with it.)
    await page
      .locator('[data-testid=unserved-warning]')
      .filter({ hasText: /^No live worker handles .*ui\.orphan/ })
      .waitFor();
    expect(await page.locator('[data-testid=unserved-warning]').innerText()).not.toContain('ui.busy');
    expect(await page.locator('tr[data-type="ui.orphan"]').getAttribute('class')).toBe('flagged');
    await page.locator('tr[data-type="ui.busy"] [data-col=workers]').filter({ hasText: /^1$/ }).waitFor();
    expect(await page.locator('tr[data-type="ui.busy"]').getAttribute('class')).toBeNull();
    await screenshot(page, 'dashboard-queues.png');

    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Workers' }).click();
    const row = page.locator('tr[data-worker="ui-worker"]');
    await row.waitFor();
    expect(await row.innerText()).toContain('ui.busy');
    expect(await row.locator('[data-col=in-flight]').innerText()).toMatch(/^\d+ \/ 2$/);
    await screenshot(page, 'dashboard-workers.png');
    release();
    await worker.stop();
    await page.reload();
    await page.getByText('No worker has registered.').waitFor();
    await page.context().close();
  });

  it('pauses and resumes a schedule and disables a job type from their pages; a tenant has no such links', async () => {
    await upsertSchedule(db.prisma, { key: 'ui-nightly', cron: '0 3 * * *', jobType: 'ui.report', payload: {}, enabled: true });
    await syncJobDefinitions(db.prisma, [defineJob('ui.report', z.object({}), async () => null)]);
    const page = await openPage('#/schedules');
    const schedule = page.locator('tr[data-schedule="ui-nightly"]');
    await schedule.locator('[data-col=state]').filter({ hasText: 'enabled' }).waitFor();
    await screenshot(page, 'dashboard-schedules.png');
    await schedule.getByRole('button', { name: 'Pause' }).click();
    await schedule.locator('[data-col=state]').filter({ hasText: 'paused' }).waitFor();
    const [paused] = await db.prisma.$queryRaw<{ enabled: boolean }[]>`SELECT enabled FROM runledger.job_schedules WHERE schedule_key = 'ui-nightly'`;
    expect(paused!.enabled).toBe(false);
    await schedule.getByRole('button', { name: 'Resume' }).click();
    await schedule.locator('[data-col=state]').filter({ hasText: 'enabled' }).waitFor();

    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Definitions' }).click();
    const definition = page.locator('tr[data-type="ui.report"]');
    await definition.getByRole('button', { name: 'Disable' }).click();
    await definition.locator('[data-col=state]').filter({ hasText: 'disabled' }).waitFor();
    const [row] = await db.prisma.$queryRaw<{ enabled: boolean }[]>`SELECT enabled FROM runledger.job_definitions WHERE job_type = 'ui.report'`;
    expect(row!.enabled).toBe(false);
    await page.context().close();

    const tenant = await openPage('#/queues', 'org:acme');
    await tenant.locator('#queues-title').waitFor();
    const links = await tenant.getByRole('navigation', { name: 'Dashboard' }).getByRole('link').allInnerTexts();
    expect(links).toEqual(['Overview', 'Jobs', 'Runs', 'Queues', 'Dead letters']);
    await tenant.context().close();
  });

  it('lists concurrency keys on the queues page, says why a keyed job waits, and changes a limit only after a confirmation', async () => {
    const key = 'ui-key/llm';
    const enqueue = () => enqueueJob(db.prisma, { jobType: 'ui.keyed', organizationId: 'acme', payload: {}, concurrency: { key, limit: 1 } });
    await enqueue();
    const { jobId: waiting } = await enqueue();
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['ui.keyed'], limit: 10, leaseSeconds: 60, markRunning: true });
    const limitRow = async () =>
      (await db.prisma.$queryRaw<{ max_leased: number; set_by: string }[]>`SELECT max_leased, set_by FROM runledger.concurrency_limits WHERE key = ${key}`)[0];

    const job = await openPage(`#/jobs/${waiting}`);
    await job.getByText(`waiting for a concurrency slot: key ${key}, 1 of 1 leased`).waitFor();
    await screenshot(job, 'dashboard-job-concurrency.png');
    await job.context().close();

    const page = await openPage('#/queues');
    const row = page.locator(`[data-testid=concurrency-keys] tr[data-key="${key}"]`);
    await row.locator('[data-col=waiting]').filter({ hasText: /^1$/ }).waitFor();
    expect(await row.locator('[data-col=limit]').innerText()).toBe('1');
    expect(await row.locator('[data-col=leased]').innerText()).toBe('1');
    expect(await row.locator('[data-col=set-by]').innerText()).toBe('enqueue');
    expect(await row.getAttribute('class')).toBe('flagged');
    await row.getByLabel('New limit').fill('3');
    await row.getByRole('button', { name: 'Set limit…' }).click();
    await row
      .locator('[data-testid=concurrency-0-confirm]')
      .filter({ hasText: `Set concurrency key ${key}'s limit to 3? It binds every organization's jobs of the key` })
      .waitFor();
    await screenshot(page, 'dashboard-concurrency-keys.png');
    // Asked, not done.
    expect(await limitRow()).toEqual({ max_leased: 1, set_by: 'enqueue' });
    await row.getByRole('button', { name: 'Confirm' }).click();
    await row.locator('[data-col=set-by]').filter({ hasText: 'operator (pinned)' }).waitFor();
    expect(await row.locator('[data-col=limit]').innerText()).toBe('3');
    expect(await limitRow()).toEqual({ max_leased: 3, set_by: 'operator' });
    await row.getByRole('button', { name: 'Give back…' }).click();
    await row.getByRole('button', { name: 'Confirm' }).click();
    await row
      .locator('[data-col=set-by]')
      .filter({ hasText: /^enqueue$/ })
      .waitFor();
    expect(await limitRow()).toEqual({ max_leased: 3, set_by: 'enqueue' });
    await page.context().close();

    // A tenant sees its keys, counted in its scope, and no way to change them.
    const tenant = await openPage('#/queues', 'org:acme');
    const mine = tenant.locator(`[data-testid=concurrency-keys] tr[data-key="${key}"]`);
    await mine.locator('[data-col=limit]').filter({ hasText: /^3$/ }).waitFor();
    expect(await mine.getByRole('button').count()).toBe(0);
    await tenant.context().close();
    const other = await openPage('#/queues', 'org:other');
    await other.locator('[data-testid=concurrency-keys]').getByText('No job has named a concurrency key.').waitFor();
    await other.context().close();
  });

  it('lists rate keys on the queues page, says why a rate-limited job waits, and changes a limit only after a confirmation', async () => {
    const key = 'ui-rate/stripe';
    const enqueue = () =>
      enqueueJob(db.prisma, { jobType: 'ui.rated', organizationId: 'acme', payload: {}, rateLimit: { key, limit: 1, periodMs: 3_600_000 } });
    await enqueue();
    const { jobId: waiting } = await enqueue();
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['ui.rated'], limit: 10, leaseSeconds: 60, markRunning: true });
    const rateRow = async () =>
      (
        await db.prisma.$queryRaw<{ max_starts: number; period_ms: number; burst: number; set_by: string }[]>`
          SELECT max_starts, period_ms, burst, set_by FROM runledger.rate_limits WHERE key = ${key}`
      )[0];

    const job = await openPage(`#/jobs/${waiting}`);
    const reason = job.locator('.wait-reason').filter({ hasText: `waiting for a rate-limit token: key ${key}, 0 of 1 tokens` });
    await reason.waitFor();
    expect(await reason.innerText()).toMatch(/\(1 per .+\), next in .+$/);
    await screenshot(job, 'dashboard-job-rate.png');
    await job.context().close();

    const page = await openPage('#/queues');
    const row = page.locator(`[data-testid=rate-keys] tr[data-key="${key}"]`);
    await row.locator('[data-col=waiting]').filter({ hasText: /^1$/ }).waitFor();
    expect(await row.locator('[data-col=limit]').innerText()).toBe('1');
    expect(await row.locator('[data-col=burst]').innerText()).toBe('1');
    expect(await row.locator('[data-col=tokens]').innerText()).toBe('0');
    expect(await row.locator('[data-col=set-by]').innerText()).toBe('enqueue');
    expect(await row.getAttribute('class')).toBe('flagged');
    await row.getByLabel('Starts').fill('10');
    await row.getByLabel('Per ms').fill('1000');
    await row.getByLabel('Burst').fill('5');
    await row.getByRole('button', { name: 'Set rate…' }).click();
    await row
      .locator('[data-testid=rate-0-confirm]')
      .filter({ hasText: `Set rate key ${key}'s limit to 10 per 1000 ms, burst 5? It binds every organization's jobs of the key` })
      .waitFor();
    await screenshot(page, 'dashboard-rate-keys.png');
    // Asked, not done.
    expect(await rateRow()).toEqual({ max_starts: 1, period_ms: 3_600_000, burst: 1, set_by: 'enqueue' });
    await row.getByRole('button', { name: 'Confirm' }).click();
    await row.locator('[data-col=set-by]').filter({ hasText: 'operator (pinned)' }).waitFor();
    expect(await row.locator('[data-col=limit]').innerText()).toBe('10');
    expect(await rateRow()).toEqual({ max_starts: 10, period_ms: 1000, burst: 5, set_by: 'operator' });
    await row.getByRole('button', { name: 'Give back…' }).click();
    await row.getByRole('button', { name: 'Confirm' }).click();
    await row
      .locator('[data-col=set-by]')
      .filter({ hasText: /^enqueue$/ })
      .waitFor();
    expect(await rateRow()).toEqual({ max_starts: 10, period_ms: 1000, burst: 5, set_by: 'enqueue' });
    await page.context().close();

    // A tenant sees its keys and no way to change them; another sees none.
    const tenant = await openPage('#/queues', 'org:acme');
    const mine = tenant.locator(`[data-testid=rate-keys] tr[data-key="${key}"]`);
    await mine.locator('[data-col=limit]').filter({ hasText: /^10$/ }).waitFor();
    expect(await mine.getByRole('button').count()).toBe(0);
    await tenant.context().close();
    const other = await openPage('#/queues', 'org:other');
    const none = other.locator('[data-testid=rate-keys]').getByText('No job has named a rate key.');
    await none.waitFor();
    expect(await none.isVisible()).toBe(true);
    await other.context().close();
  });

  it("shows a failed attempt's stack on its job page", async () => {
    const jobId = await deadLetter('ui.stacked', 'Error: relay refused\n    at sendMail (mailer.js:42:7)\n    at handler (jobs.js:9:3)');
    const page = await openPage(`#/jobs/${jobId}`);
    const stacks = page.locator('[data-testid=stacks]');
    await stacks.getByText('run 1, attempt 1 — smtp.down').waitFor();
    expect(await stacks.locator('pre').innerText()).toContain('at sendMail (mailer.js:42:7)');
    await screenshot(page, 'dashboard-job-stack.png');
    await page.context().close();

    const plain = await deadLetter('ui.unstacked');
    const other = await openPage(`#/jobs/${plain}`);
    await other.locator('[data-testid=attempts]').waitFor();
    expect(await other.locator('[data-testid=stacks]').count()).toBe(0);
    await other.context().close();
  });
});
