/**
 * Recovery lineage on the run pages, in Chromium: a recovered run links to its
 * recovery and offers no recovery form (only an explicit "Recover again"), the
 * recovery links back, and another tab open on the source follows by itself.
 * (A stale submit's refusal over HTTP: dashboard-operations.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { enqueueWorkflowRun, workflow } from '../../src/index.js';
import { chromiumAvailable, useDashboardInChromium } from '../harness/browser.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const hasChromium = chromiumAvailable('dashboard recovery browser tests');
const db = useTestDatabase();

async function recoveries(sourceRunId: string): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ id: string }[]>`
    SELECT recovery_run_id::text AS id FROM runledger.workflow_recoveries WHERE source_run_id = ${sourceRunId}::uuid ORDER BY created_at`;
  return rows.map((row) => row.id);
}

describe.skipIf(!hasChromium)('recovery lineage in Chromium', () => {
  const { openPage } = useDashboardInChromium(db);

  it('links both runs, folds the form into "Recover again" once recovered, and another open tab follows', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('ui.lineage').job('fetch', 'ui.lin.fetch', {}).job('load', 'ui.lin.load', {}).afterSuccess('load', ['fetch']).build(),
    );
    await runRunnableJobs(db.prisma, (job) => (job.jobType === 'ui.lin.fetch' ? { ok: true, output: {} } : { ok: false }));
    // Two tabs on the same failed run: the second keeps the form the first one uses.
    const stale = await openPage(`#/runs/${workflowRunId}`);
    await stale.getByRole('button', { name: 'Recover…' }).waitFor();
    const page = await openPage(`#/runs/${workflowRunId}`);
    await page.getByLabel('Reason (required)').fill('loader fixed');
    await page.getByRole('button', { name: 'Recover…' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    const title = page.locator('#run-title').filter({ hasNotText: workflowRunId });
    await title.waitFor();
    const [recoveryRunId] = await recoveries(workflowRunId);
    // The recovery's page links back to its source.
    await page.locator('[data-testid=recovered-from]').filter({ hasText: workflowRunId }).waitFor();
    expect(await page.locator('[data-testid=run-lineage]').innerText()).toContain('reason: loader fixed');

    // The source's page now names its recovery and offers no recovery form, only "Recover again".
    await page.locator('[data-testid=recovered-from]').click();
    await page.locator('[data-testid=recovered-by]').filter({ hasText: recoveryRunId! }).waitFor();
    expect(await page.getByRole('button', { name: 'Recover…' }).count()).toBe(0);
    const again = page.locator('[data-testid=recover-again]');
    expect(await again.getAttribute('open')).toBeNull();
    expect(await page.getByRole('button', { name: 'Recover again…' }).isVisible()).toBe(false);

    // The other tab, open on the source all along, follows by itself (live): it names the recovery and drops the form.
    await stale.locator('[data-testid=recovered-by]').filter({ hasText: recoveryRunId! }).waitFor();
    expect(await stale.getByRole('button', { name: 'Recover…' }).count()).toBe(0);
    expect(await recoveries(workflowRunId)).toEqual([recoveryRunId]);
    await stale.context().close();

    // Asked explicitly, it recovers again and opens the new run.
    await again.locator('summary').click();
    await page.getByLabel('Reason (required)').fill('once more');
    await page.getByRole('button', { name: 'Recover again…' }).click();
    await page
      .locator('[data-testid=recover-again-confirm]')
      .filter({ hasText: `already recovered as run ${recoveryRunId}` })
      .waitFor();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('#run-title').filter({ hasNotText: workflowRunId }).waitFor();
    const both = await recoveries(workflowRunId);
    expect(both).toHaveLength(2);
    expect(await page.locator('#run-title .mono').innerText()).toBe(both[1]);
    await page.context().close();
  });
});
