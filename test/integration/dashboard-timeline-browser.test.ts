/**
 * The run page's timeline and large groups in Chromium: the critical path of
 * a diamond, a long external wait drawn narrow with its true length, zoom,
 * failures first, a 200-step fan-out's failures one click from its folded
 * node and its expanded grid, and what a refresh must not take away (the
 * timeline's scroll, an opened stack trace).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { claimJobs, completeExternalWorkflowStep, completeJob, enqueueJob, enqueueWorkflowRun, failJob, adminScope, workflow } from '../../src/index.js';
import { chromiumAvailable, screenshot, useDashboardInChromium } from '../harness/browser.js';
import { useTestDatabase } from '../harness/database.js';
import { runRunnableJobs } from '../harness/workflow-helpers.js';

const hasChromium = chromiumAvailable('dashboard timeline tests');

const db = useTestDatabase();

/** Resolves after the page has refreshed `times` more times (main.ts stamps each successful refresh). */
async function refreshed(page: Page, times = 1): Promise<void> {
  for (let i = 0; i < times; i += 1) {
    const before = await page.evaluate('document.body.dataset.refreshedAt');
    await page.waitForFunction(
      (was) => (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset.refreshedAt !== was,
      before,
      {
        timeout: 15_000,
      },
    );
  }
}

/** Boxes of the elements matching `selector`, in document order. */
async function boxes(page: Page, selector: string): Promise<{ x: number; y: number; width: number; height: number }[]> {
  return page.locator(selector).evaluateAll((all) =>
    all.map((el) => {
      const r = el.getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: r.height };
    }),
  );
}

describe.skipIf(!hasChromium)('dashboard timeline and large groups in Chromium', () => {
  const ui = useDashboardInChromium(db, { viewport: { width: 1440, height: 900 } });
  const { openPage } = ui;

  it('computes and marks the critical path of a diamond: the arm that finished last', async () => {
    // a -> (b, c) -> d; b is completed before c, so d waited for c.
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('timeline.diamond')
        .job('a', 'diamond.a', {})
        .job('b', 'diamond.b', {})
        .job('c', 'diamond.c', {})
        .job('d', 'diamond.d', {})
        .afterSuccess('b', ['a'])
        .afterSuccess('c', ['a'])
        .afterSuccess('d', ['b', 'c'])
        .build(),
    );
    const settle = async (type: string) => {
      const [job] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: [type], markRunning: true });
      await completeJob(db.prisma, { ...job!, output: null });
    };
    await settle('diamond.a');
    const [c] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['diamond.c'], markRunning: true });
    await settle('diamond.b');
    await completeJob(db.prisma, { ...c!, output: null });
    await settle('diamond.d');

    const page = await openPage(`#/runs/${workflowRunId}`);
    await page.locator('[data-testid=run-status]').filter({ hasText: 'succeeded' }).waitFor();
    await page.locator('[data-testid=critical-path]').waitFor();
    expect(await page.locator('[data-testid=critical-path] button').allInnerTexts()).toEqual(['a', 'c', 'd']);
    const critical = await page
      .locator('[data-testid=timeline] .tl-row[data-critical]')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-step-key')));
    expect(critical.sort()).toEqual(['a', 'c', 'd']);
    expect(await page.locator('.tl-row[data-step-key=c] button').getAttribute('aria-label')).toContain('on the critical path');
    expect(await page.locator('.tl-row[data-step-key=b] button').getAttribute('aria-label')).not.toContain('critical');
    // The graph: the same three nodes and the two edges between them, and nothing else.
    const criticalNodes = await page.locator('svg.dag .node.critical').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-step-key')));
    expect(criticalNodes.sort()).toEqual(['a', 'c', 'd']);
    const criticalEdges = await page.locator('svg.dag path.edge.critical').evaluateAll((paths) => paths.map((path) => path.getAttribute('data-edge')));
    expect(criticalEdges.sort()).toEqual(['a->c', 'c->d']);
    // The highlight is drawn: a critical node's border is not a plain one's.
    const stroke = (key: string) =>
      page
        .locator(`svg.dag [data-step-key=${key}] > rect`)
        .evaluate((rect) => (globalThis as unknown as { getComputedStyle(e: unknown): { stroke: string } }).getComputedStyle(rect).stroke);
    expect(await stroke('c')).not.toBe(await stroke('b'));
    // Axis ticks, from 0.
    const offsets = await page
      .locator('[data-testid=tl-axis] .tl-tick')
      .evaluateAll((ticks) => ticks.map((tick) => Number(tick.getAttribute('data-offset-ms'))));
    expect(offsets[0]).toBe(0);
    expect(offsets.length).toBeGreaterThan(2);
    await page.context().close();
  });

  it('draws an 8-minute external wait narrow, labelled with its true length, so the job bars stay wide; zooms and pans', async () => {
    const { workflowRunId } = await enqueueWorkflowRun(
      db.prisma,
      workflow('timeline.wait')
        .job('prepare', 'wait.prepare', {})
        .external('approve')
        .afterSuccess('approve', ['prepare'])
        .job('ship', 'wait.ship', {})
        .afterSuccess('ship', ['approve'])
        .build(),
    );
    await runRunnableJobs(db.prisma);
    await completeExternalWorkflowStep(db.prisma, { scope: adminScope(), workflowRunId, stepKey: 'approve', outcome: { status: 'succeeded', output: {} } });
    await runRunnableJobs(db.prisma);
    // Eight minutes of waiting for a person: everything before the approval moved eight minutes back, as written
    // by the engine (the rows the API reads), so the wait between the two jobs is 8 min plus what the test took.
    const run = workflowRunId;
    await db.prisma.$executeRaw`UPDATE runledger.workflow_runs SET created_at = created_at - interval '8 minutes' WHERE id = ${run}::uuid`;
    // prepare ran eight minutes earlier; approve was released then (and completed now); ship was created then.
    await db.prisma.$executeRaw`
      UPDATE runledger.workflow_steps
         SET created_at = created_at - interval '8 minutes',
             released_at = CASE WHEN step_key = 'ship' THEN released_at ELSE released_at - interval '8 minutes' END,
             started_at = CASE WHEN step_key = 'prepare' THEN started_at - interval '8 minutes' ELSE started_at END,
             finished_at = CASE WHEN step_key = 'prepare' THEN finished_at - interval '8 minutes' ELSE finished_at END
       WHERE workflow_run_id = ${run}::uuid`;
    await db.prisma.$executeRaw`
      UPDATE runledger.job_queue j
         SET created_at = j.created_at - interval '8 minutes', started_at = j.started_at - interval '8 minutes',
             finished_at = j.finished_at - interval '8 minutes', attempt_started_at = j.attempt_started_at - interval '8 minutes',
             attempt_running_at = j.attempt_running_at - interval '8 minutes'
        FROM runledger.workflow_steps s
       WHERE s.job_id = j.id AND s.workflow_run_id = ${run}::uuid AND s.step_key = 'prepare'`;

    const page = await openPage(`#/runs/${workflowRunId}`);
    const gap = page.locator('[data-testid=tl-gap]');
    await gap.waitFor();
    expect(await gap.count()).toBe(1);
    const ms = Number(await gap.getAttribute('data-ms'));
    expect(ms).toBeGreaterThanOrEqual(8 * 60_000);
    expect(ms).toBeLessThan(9 * 60_000);
    expect(await gap.innerText()).toMatch(/^≈ 8 min( \d+ s)?$/);
    expect(await page.locator('.tl-axis').innerText()).toContain('drawn narrow');
    // The job bars: each a real share of the track, not 1-3 px (to scale, a sub-second job is under 0.2% of 8 minutes).
    // Measured in one turn of the page's event loop, so a refresh cannot rebuild the rows between two reads.
    await page.locator('.tl-row[data-step-key=ship] .tl-seg[data-phase=attempt]').waitFor();
    const { track, prepare, ship, wait } = (await page.evaluate(`(() => {
      const width = (selector) => document.querySelector(selector)?.getBoundingClientRect().width ?? -1;
      return {
        track: { width: width('.tl-row[data-step-key=prepare] .tl-track') },
        prepare: { width: width('.tl-row[data-step-key=prepare] .tl-seg[data-phase=attempt]') },
        ship: { width: width('.tl-row[data-step-key=ship] .tl-seg[data-phase=attempt]') },
        wait: { width: width('.tl-row[data-step-key=approve] .tl-seg[data-phase=waiting]') },
      };
    })()`)) as Record<'track' | 'prepare' | 'ship' | 'wait', { width: number }>;
    expect(track.width).toBeGreaterThan(0);
    expect(prepare.width).toBeGreaterThan(track.width * 0.02);
    expect(ship.width).toBeGreaterThan(track.width * 0.02);
    // The wait itself is drawn across the break, no wider than its compressed share plus the bits either side.
    expect(wait.width).toBeLessThan(track.width * 0.5);
    expect(await page.locator('.tl-row[data-step-key=approve] .tl-seg[data-phase=waiting]').getAttribute('title')).toMatch(
      /waiting for external completion 8 min/,
    );
    await page.locator('.tl-section').evaluate((section) => section.scrollIntoView());
    await screenshot(page, 'dashboard-timeline-wait.png', { fullPage: false });

    // Zoom in twice and pan to the start: the axis shows a quarter, every bar is four times as wide (its box is
    // not clipped, the track is), the ticks are finer, and the last job is out of the window.
    const queued = page.locator('.tl-row[data-step-key=prepare] .tl-seg[data-phase=queued]');
    const width = () => queued.evaluate((el) => Number.parseFloat((el as unknown as { style: { width: string } }).style.width));
    const whole = await width();
    const firstTicks = await page.locator('[data-testid=tl-axis] .tl-tick').count();
    await page.getByRole('button', { name: 'Zoom the timeline in' }).click();
    await page.getByRole('button', { name: 'Zoom the timeline in' }).click();
    const earlier = page.getByRole('button', { name: 'Show earlier' });
    for (let i = 0; i < 10 && (await earlier.isEnabled()); i += 1) await earlier.click();
    expect(await earlier.isEnabled()).toBe(false);
    expect(await page.locator('.tl-axis').innerText()).toContain('showing 25.0% of it');
    expect(await width()).toBeCloseTo(whole * 4, 1);
    expect(await page.locator('.tl-row[data-step-key=ship] .tl-seg[data-phase=attempt]').count()).toBe(0);
    const zoomedTicks = await page
      .locator('[data-testid=tl-axis] .tl-tick')
      .evaluateAll((all) => all.map((tick) => Number(tick.getAttribute('data-offset-ms'))));
    expect(zoomedTicks[0]).toBe(0);
    expect(zoomedTicks.length).toBeGreaterThan(2);
    // Zoom and pan survive a refresh.
    await refreshed(page);
    expect(await page.locator('.tl-axis').innerText()).toContain('showing 25.0% of it');
    expect(await width()).toBeCloseTo(whole * 4, 1);
    await page.getByRole('button', { name: 'Show the whole run' }).click();
    expect(await width()).toBeCloseTo(whole, 2);
    expect(await page.locator('[data-testid=tl-axis] .tl-tick').count()).toBe(firstTicks);
    await page.context().close();
  });

  it("reaches a folded 200-step fan-out's failures in one click, lays it out as a grid, keeps the timeline's scroll across refreshes and puts failures first", async () => {
    let builder = workflow('timeline.wide').job('root', 'wide.root', {});
    for (let i = 0; i < 198; i += 1) builder = builder.job(`part-${i}`, 'wide.part', { i }).afterSuccess(`part-${i}`, ['root']);
    const parts = Array.from({ length: 198 }, (_, i) => `part-${i}`);
    const { workflowRunId } = await enqueueWorkflowRun(db.prisma, builder.job('merge', 'wide.merge', {}).afterTerminal('merge', parts).build());
    await runRunnableJobs(db.prisma, (job) => {
      const i = (job.payload as { i?: number }).i;
      return i === 61 || i === 170 ? { ok: false, code: 'wide.bad_input' } : { ok: true };
    });
    const page = await openPage(`#/runs/${workflowRunId}`);
    const group = page.locator('svg.dag .node.group[data-group-size="198"]');
    await group.waitFor();
    await expect.poll(async () => JSON.parse((await group.getAttribute('data-counts')) ?? '{}')).toEqual({ SUCCEEDED: 196, FAILED: 2 });

    // The failed share as its own target: a pill at least 16 px high, its count in words.
    const pill = page.locator('svg.dag [data-testid=group-pill][data-status=FAILED]');
    expect(await pill.getAttribute('data-count')).toBe('2');
    expect(await pill.getAttribute('aria-label')).toContain('2 failed steps');
    const pillBox = (await pill.boundingBox())!;
    expect(pillBox.height).toBeGreaterThanOrEqual(8);
    expect(pillBox.width).toBeGreaterThan(pillBox.height);
    // One click: the two failed steps, named, with their error code.
    await pill.click();
    const list = page.locator('[data-testid=group-members]');
    await list.waitFor();
    expect(await list.locator('li button').allInnerTexts()).toEqual(['part-61', 'part-170']);
    expect(await list.locator('li').first().innerText()).toContain('wide.bad_input');
    await screenshot(page, 'dashboard-dag-group-failures.png', { fullPage: false });
    // A second click opens the step.
    await list.getByRole('button', { name: 'part-170' }).click();
    await page.locator('.step-panel h2').filter({ hasText: 'Step part-170' }).waitFor();
    // Selecting it expanded the group: 200 nodes, as a grid in key order, none overlapping, the frame about as wide as the panel's shape.
    await expect.poll(() => page.locator('svg.dag .node').count()).toBe(200);
    await page.getByRole('button', { name: 'Fit the whole run' }).click();
    const cells = await boxes(page, 'svg.dag .node[data-step-key^="part-"]');
    expect(cells).toHaveLength(198);
    const columns = new Set(cells.map((b) => Math.round(b.x))).size;
    const rows = new Set(cells.map((b) => Math.round(b.y))).size;
    expect(columns).toBeGreaterThanOrEqual(8);
    expect(rows).toBeLessThanOrEqual(Math.ceil(198 / 8));
    for (let i = 0; i < cells.length; i += 1) {
      for (let j = i + 1; j < cells.length; j += 1) {
        const [a, b] = [cells[i]!, cells[j]!];
        const overlap = a.x < b.x + b.width - 0.5 && b.x < a.x + a.width - 0.5 && a.y < b.y + b.height - 0.5 && b.y < a.y + a.height - 0.5;
        if (overlap) throw new Error(`part nodes ${i} and ${j} overlap`);
      }
    }
    const frame = (await page.locator('svg.dag .frame').boundingBox())!;
    const panel = (await page.locator('svg.dag').boundingBox())!;
    expect(frame.width).toBeLessThanOrEqual(panel.width);
    expect(frame.height).toBeLessThanOrEqual(panel.height);
    expect(frame.width / frame.height).toBeGreaterThan(1);
    // Reading order: part-1 right of part-0 in the first row; a later row below.
    const at = async (key: string) => (await page.locator(`svg.dag [data-step-key="${key}"]`).boundingBox())!;
    expect((await at('part-1')).x).toBeGreaterThan((await at('part-0')).x);
    expect(Math.round((await at('part-1')).y)).toBe(Math.round((await at('part-0')).y));
    expect((await at('part-197')).y).toBeGreaterThan((await at('part-0')).y);
    await screenshot(page, 'dashboard-dag-grid.png', { fullPage: false });

    // The timeline's list scrolled: a refresh keeps it there (it was rebuilt, the marker proves it).
    const list200 = page.locator('ol.tl-rows');
    await list200.evaluate((ol) => {
      ol.scrollTop = 1_500;
      (ol as unknown as { marked: boolean }).marked = true;
    });
    await expect.poll(() => list200.evaluate((ol) => ol.scrollTop)).toBe(1_500);
    await refreshed(page, 2);
    expect(await list200.evaluate((ol) => (ol as unknown as { marked?: boolean }).marked ?? false)).toBe(false);
    expect(await list200.evaluate((ol) => ol.scrollTop)).toBe(1_500);

    // Failures first: the two failed steps on top, in release order; off again, release order.
    await page.getByRole('button', { name: 'Failures first' }).click();
    expect(await page.getByRole('button', { name: 'Failures first' }).getAttribute('aria-pressed')).toBe('true');
    const firstRows = () =>
      page.locator('[data-testid=timeline] .tl-row').evaluateAll((rows) => rows.slice(0, 3).map((row) => row.getAttribute('data-step-key')));
    expect((await firstRows()).slice(0, 2).sort()).toEqual(['part-170', 'part-61']);
    await refreshed(page);
    expect((await firstRows()).slice(0, 2).sort()).toEqual(['part-170', 'part-61']);
    await page.getByRole('button', { name: 'Failures first' }).click();
    expect((await firstRows())[0]).toBe('root');
    await page.context().close();
  }, 180_000);

  it('keeps an opened stack trace open across refreshes, and a closed one closed', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'timeline.stack', payload: {}, maxAttempts: 5 });
    for (let n = 1; n <= 2; n += 1) {
      const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['timeline.stack'], markRunning: true });
      await failJob(db.prisma, {
        ...lease!,
        error: { code: 'timeline.crash', message: `boom ${n}`, stack: `Error: boom ${n}\n    at handler (/app/jobs/crash.ts:${n}:9)` },
        retryable: true,
      });
      await db.prisma.$executeRaw`UPDATE runledger.job_queue SET next_run_at = now() WHERE id = ${jobId}::uuid`;
    }
    const page = await openPage(`#/jobs/${jobId}`);
    const stacks = page.locator('[data-testid=stacks] details');
    await stacks.first().waitFor();
    expect(await stacks.count()).toBe(2);
    // The newest is open by default; the operator opens the older one and closes the newest.
    await stacks.nth(1).locator('summary').click();
    await stacks.nth(0).locator('summary').click();
    const state = () => stacks.evaluateAll((all) => all.map((d) => (d as unknown as { open: boolean }).open));
    await expect.poll(state).toEqual([false, true]);
    await stacks.nth(1).evaluate((d) => {
      (d as unknown as { marked: boolean }).marked = true;
    });
    await refreshed(page, 2);
    // Rebuilt (the marked element is gone), and still as the operator left it.
    expect(await stacks.nth(1).evaluate((d) => (d as unknown as { marked?: boolean }).marked ?? false)).toBe(false);
    expect(await state()).toEqual([false, true]);
    // A third failure adds a stack on top: the one opened keeps its summary's state, the new one opens as new ones do.
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', limit: 1, leaseSeconds: 60, jobTypes: ['timeline.stack'], markRunning: true });
    await failJob(db.prisma, { ...lease!, error: { code: 'timeline.crash', message: 'boom 3', stack: 'Error: boom 3' }, retryable: true });
    await expect.poll(() => stacks.count(), { timeout: 15_000 }).toBe(3);
    await expect.poll(state).toEqual([true, false, true]);
    await page.context().close();
  });
});
