/**
 * The dead-letters page as a list, in Chromium: 30 dead letters over 3 types
 * and 2 error codes make 6 groups with the right counts; "Requeue this group"
 * requeues that group only; a type no live worker handles is flagged and its
 * confirmation warns; a tenant sees its own groups only.
 */
import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob, failJob } from '../../src/index.js';
import { heartbeatWorkerRegistration } from '../../src/worker/registry.js';
import { chromiumAvailable, screenshot, useDashboardInChromium } from '../harness/browser.js';
import { useTestDatabase } from '../harness/database.js';

const hasChromium = chromiumAvailable('dashboard dead-letter groups browser tests');
const db = useTestDatabase();

/** `n` dead letters of `jobType` whose last error is `code`, messages `${code} #1..n` (the last is the newest). */
async function plant(jobType: string, code: string, n: number, organizationId?: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 1; i <= n; i += 1) {
    const { jobId } = await enqueueJob(db.prisma, { jobType, payload: { i }, ...(organizationId ? { organizationId } : {}) });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: [jobType], limit: 1, leaseSeconds: 60, markRunning: true });
    await failJob(db.prisma, { ...lease!, error: { code, message: `${code} #${i}: the relay said no` }, retryable: false });
    ids.push(jobId);
  }
  return ids;
}

const planted = new Map<string, string[]>();

/** Each planted group's jobs by status now (a requeue clears the last error, so groups are known by their ids). */
async function statuses(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [group, ids] of planted) {
    const rows = await db.prisma.$queryRaw<{ status: string; n: number }[]>`
      SELECT status::text, count(*)::int AS n FROM runledger.job_queue WHERE id = ANY(${ids}::uuid[]) GROUP BY 1 ORDER BY 1`;
    out[group] = rows.map((row) => `${row.n} ${row.status}`).join(', ');
  }
  return out;
}

const PLAN: [string, string, number][] = [
  ['dl.mail', 'smtp.down', 8],
  ['dl.mail', 'rate.limited', 4],
  ['dl.sms', 'smtp.down', 3],
  ['dl.sms', 'rate.limited', 6],
  ['dl.push', 'smtp.down', 5],
  ['dl.push', 'rate.limited', 4],
];

describe.skipIf(!hasChromium)('dead letters grouped in Chromium', () => {
  const { openPage } = useDashboardInChromium(db);

  it('groups 30 dead letters by type and code, requeues one group only, and warns for a type no live worker serves', async () => {
    for (const [type, code, n] of PLAN) planted.set(`${type} ${code}`, await plant(type, code, n));
    await plant('dl.tenant', 'smtp.down', 2, 'acme');
    // Live workers for mail and sms; none handles dl.push.
    await heartbeatWorkerRegistration(db.prisma, { workerId: 'dl-worker', jobTypes: ['dl.mail', 'dl.sms'], concurrency: 2, inFlight: 0, ttlMs: 600_000 });

    const page = await openPage('#/dead-letters');
    const rows = page.locator('[data-testid=dead-letter-groups] tbody tr');
    await rows.first().waitFor();
    const listed = await rows.evaluateAll((trs) =>
      trs.map((tr) => [tr.getAttribute('data-type'), tr.getAttribute('data-error-code'), tr.querySelector('[data-col=count]')?.textContent]),
    );
    // Largest first; every planted group, and the tenant's too (admin scope).
    expect(listed).toEqual([
      ['dl.mail', 'smtp.down', '8'],
      ['dl.sms', 'rate.limited', '6'],
      ['dl.push', 'smtp.down', '5'],
      ['dl.mail', 'rate.limited', '4'],
      ['dl.push', 'rate.limited', '4'],
      ['dl.sms', 'smtp.down', '3'],
      ['dl.tenant', 'smtp.down', '2'],
    ]);
    const row = (type: string, code: string) => page.locator(`tr[data-type="${type}"][data-error-code="${code}"]`);
    // The newest message is the sample, shown whole on hover (title).
    expect(await row('dl.mail', 'smtp.down').locator('[data-col=message] .truncate').getAttribute('title')).toBe('smtp.down #8: the relay said no');
    // Flagged: no live worker handles dl.push; mail is served.
    expect(await row('dl.push', 'smtp.down').getAttribute('class')).toBe('flagged');
    expect(await row('dl.push', 'smtp.down').locator('[data-col=workers]').innerText()).toBe('0 — no worker');
    expect(await row('dl.mail', 'smtp.down').getAttribute('class')).toBe('');
    expect(await row('dl.mail', 'smtp.down').locator('[data-col=workers]').innerText()).toBe('1');

    // The warning, before anything is requeued: in the open form and in the confirmation.
    const push = row('dl.push', 'smtp.down');
    await push.locator('summary').click();
    await push.locator('[data-testid=group-unserved-warning]').filter({ hasText: 'No live worker handles dl.push' }).waitFor();
    await push.getByLabel('Reason for this group (required, recorded on every job)').fill('push gateway back');
    await push.getByRole('button', { name: 'Requeue group…' }).click();
    await push
      .locator('.confirm')
      .filter({ hasText: 'Warning: No live worker handles dl.push: requeued, these jobs wait until one starts. Requeue 5 dead-lettered dl.push jobs' })
      .waitFor();
    await push.getByRole('button', { name: 'Back' }).click();
    const mail = row('dl.mail', 'rate.limited');
    await mail.locator('summary').click();
    expect(await mail.locator('[data-testid=group-unserved-warning]').isVisible()).toBe(false);
    await screenshot(page, 'dashboard-dead-letter-groups.png', { fullPage: false });

    // Requeue one group: only its 4 jobs move.
    await mail.getByLabel('Reason for this group (required, recorded on every job)').fill('rate limit raised');
    await mail.getByRole('button', { name: 'Requeue group…' }).click();
    const confirm = mail.locator('.confirm');
    await confirm.filter({ hasText: 'Requeue 4 dead-lettered dl.mail jobs (last error rate.limited) as new runs?' }).waitFor();
    expect(await confirm.innerText()).not.toContain('Warning');
    await mail.getByRole('button', { name: 'Confirm' }).click();
    await page
      .locator('[data-testid=group-result]')
      .filter({ hasText: /^Requeued 4 dl\.mail jobs \(rate\.limited\) as operation [0-9a-f-]{36}\.$/ })
      .waitFor();
    expect(await statuses()).toEqual({
      'dl.mail smtp.down': '8 DEAD_LETTERED',
      'dl.mail rate.limited': '4 PENDING',
      'dl.sms smtp.down': '3 DEAD_LETTERED',
      'dl.sms rate.limited': '6 DEAD_LETTERED',
      'dl.push smtp.down': '5 DEAD_LETTERED',
      'dl.push rate.limited': '4 DEAD_LETTERED',
    });
    await row('dl.mail', 'rate.limited').waitFor({ state: 'detached' });
    expect(await rows.count()).toBe(6);
    await page.context().close();

    // A tenant sees its own group only.
    const tenant = await openPage('#/dead-letters', 'org:acme');
    await tenant.locator('[data-testid=dead-letter-groups] tbody tr').first().waitFor();
    expect(await tenant.locator('[data-testid=dead-letter-groups] tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-type')))).toEqual([
      'dl.tenant',
    ]);
    await tenant.context().close();
  });
});
