/**
 * The dashboard's accessibility, checked in Chromium on every page with data
 * in it: text contrast (WCAG AA: 4.5:1, 3:1 for large text) computed from the
 * rendered colours, an accessible name on every control, and the keyboard
 * path (Tab reaches the navigation, every control and every node of the
 * graph, each with a visible focus ring).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { z } from 'zod';
import { claimJobs, defineJob, enqueueJob, enqueueWorkflowRun, failJob, syncJobDefinitions, upsertSchedule, workflow } from '../../src/index.js';
import { heartbeatWorkerRegistration } from '../../src/worker/registry.js';
import { buildDashboardAssets } from '../../scripts/build-dashboard.js';
import { useTestDatabase } from '../harness/database.js';
import { chromiumAvailable, launchChromium } from '../harness/browser.js';
import { serveDashboard, type ServedDashboard } from '../harness/dashboard.js';

const db = useTestDatabase();
const hasChromium = chromiumAvailable('dashboard accessibility tests');

// Browser-side code as strings: this file compiles without the DOM library.

/** Every visible text run whose contrast with what is behind it is below WCAG AA, as "text: ratio". */
const LOW_CONTRAST = `(() => {
  const parse = (value) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(value || '');
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, bottom) => ({ r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a), b: top.b * top.a + bottom.b * (1 - top.a), a: 1 });
  const luminance = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const behind = (el) => {
    const node = el instanceof SVGElement ? el.closest('g.node') : null;
    if (node) return parse(getComputedStyle(node.querySelector('rect')).fill);
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    return layers.reverse().reduce((acc, layer) => over(layer, acc), { r: 255, g: 255, b: 255, a: 1 });
  };
  const failures = [];
  for (const el of document.querySelectorAll('body *')) {
    const text = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
    if (!text || el.closest('[hidden], [aria-hidden="true"], option') || el.getClientRects().length === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility !== 'visible' || el.disabled) continue;
    const fg = parse(el instanceof SVGElement ? style.fill : style.color);
    const bg = behind(el);
    const a = luminance(over(fg, bg)), b = luminance(bg);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const needed = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
    if (ratio < needed) failures.push(text.slice(0, 40) + ': ' + ratio.toFixed(2));
  }
  return failures;
})()`;

/** Every focusable control without an accessible name, as its outer HTML's start. */
const UNNAMED = `(() => {
  const name = (el) => {
    const labelledBy = (el.getAttribute('aria-labelledby') || '').split(' ').map((id) => document.getElementById(id)?.textContent || '').join('').trim();
    return (el.getAttribute('aria-label') || labelledBy || [...(el.labels || [])].map((l) => l.textContent).join('') || el.textContent || el.getAttribute('title') || '').trim();
  };
  return [...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
    .filter((el) => el.getClientRects().length > 0 && el.getAttribute('tabindex') !== '-1' && !name(el))
    .map((el) => el.outerHTML.slice(0, 80));
})()`;

/** What has the focus: a short stable description, and whether a focus ring is drawn. */
const FOCUSED = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return { id: 'body', ring: false };
  const style = getComputedStyle(el);
  const ring = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
  const id = el.dataset.stepKey ? 'step:' + el.dataset.stepKey : el.tagName.toLowerCase() + ':' + (el.getAttribute('aria-label') || el.textContent || el.getAttribute('name') || '').trim().slice(0, 30);
  return { id, ring };
})()`;

describe.skipIf(!hasChromium)('dashboard accessibility in Chromium', () => {
  let browser: Browser;
  let served: ServedDashboard;
  let runId: string;
  let jobId: string;

  beforeAll(async () => {
    await buildDashboardAssets();
    browser = await launchChromium();
    served = await serveDashboard(db.prisma, { listenConnectionString: db.url });
    runId = (
      await enqueueWorkflowRun(
        db.prisma,
        workflow('a11y.review')
          .job('draft', 'a11y.draft', {})
          .external('approve')
          .job('publish', 'a11y.publish', {})
          .afterSuccess('publish', ['draft', 'approve'])
          .build(),
      )
    ).workflowRunId;
    // One job of every colour a list shows: pending, leased, dead-lettered.
    jobId = (await enqueueJob(db.prisma, { jobType: 'a11y.mail', payload: { to: 'ana' }, maxAttempts: 1 })).jobId;
    await enqueueJob(db.prisma, { jobType: 'a11y.mail', payload: { to: 'bo' } });
    const claimed = await claimJobs(db.prisma, { workerId: 'a11y-worker', jobTypes: ['a11y.mail'], limit: 1, leaseSeconds: 60, markRunning: true });
    await failJob(db.prisma, {
      ...claimed[0]!,
      error: { code: 'a11y.bounced', message: 'mailbox full', stack: 'Error: mailbox full\n    at send (mail.js:1:1)' },
      retryable: false,
    });
    // Rows for the operator pages: a schedule, a definition, a live worker.
    await upsertSchedule(db.prisma, { key: 'a11y-nightly', cron: '0 3 * * *', jobType: 'a11y.mail', payload: {}, enabled: true });
    await syncJobDefinitions(db.prisma, [defineJob('a11y.mail', z.object({}), async () => null)]);
    await heartbeatWorkerRegistration(db.prisma, { workerId: 'a11y-worker', jobTypes: ['a11y.mail'], concurrency: 2, inFlight: 1, ttlMs: 600_000 });
  });

  afterAll(async () => {
    await browser?.close();
  });

  async function open(hash: string, ready: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
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
    ['queues', '#/queues', 'tr[data-type="a11y.mail"]'],
    ['dead letters', '#/dead-letters', 'text=/dead-lettered jobs? match/'],
    ['workers', '#/workers', 'tr[data-worker="a11y-worker"]'],
    ['schedules', '#/schedules', 'tr[data-schedule="a11y-nightly"]'],
    ['definitions', '#/definitions', 'tr[data-type="a11y.mail"]'],
  ];

  it('keeps every text at WCAG AA contrast, and every control named, on every page', async () => {
    for (const [name, hash, ready] of pages()) {
      const page = await open(hash, ready);
      if (name === 'run') {
        // The external step's form is part of the page too.
        await page.locator('svg.dag [data-step-key="approve"]').click();
        await page.getByRole('button', { name: 'Complete step' }).waitFor();
      }
      expect({ page: name, lowContrast: await page.evaluate(LOW_CONTRAST) }).toEqual({ page: name, lowContrast: [] });
      expect({ page: name, unnamed: await page.evaluate(UNNAMED) }).toEqual({ page: name, unnamed: [] });
      await page.context().close();
    }
  });

  it('has checks that catch what they look for (a faint text, an unnamed button)', async () => {
    const page = await open('#/', '[data-testid=pending-total]');
    await page.evaluate(`(() => {
      const faint = document.createElement('p');
      faint.style.color = '#aaaaaa';
      faint.textContent = 'faint text';
      const bare = document.createElement('button');
      document.getElementById('main').append(faint, bare);
    })()`);
    expect(await page.evaluate(LOW_CONTRAST)).toEqual([expect.stringMatching(/^faint text: 2\.[0-9]{2}$/)]);
    expect(await page.evaluate(UNNAMED)).toEqual(['<button></button>']);
    await page.context().close();
  });

  it('reaches the navigation, every graph node and the step form with Tab alone, each with a visible focus ring', async () => {
    const page = await open(`#/runs/${runId}`, 'svg.dag [data-step-key="publish"]');
    const seen: { id: string; ring: boolean }[] = [];
    for (let i = 0; i < 40; i += 1) {
      await page.keyboard.press('Tab');
      seen.push((await page.evaluate(FOCUSED)) as { id: string; ring: boolean });
    }
    const ids = seen.map((focus) => focus.id);
    expect(ids).toEqual(expect.arrayContaining(['a:Overview', 'a:Jobs', 'a:Runs', 'step:draft', 'step:approve', 'step:publish']));
    expect(seen.filter((focus) => focus.id !== 'body' && !focus.ring)).toEqual([]);

    // Enter on the focused external step opens its form; Tab then walks into the form's fields.
    await page.locator('svg.dag [data-step-key="approve"]').focus();
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Complete step' }).waitFor();
    const outcome = page.getByLabel('Outcome');
    const focused = () => outcome.evaluate((el) => el === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement);
    for (let i = 0; i < 40 && !(await focused()); i += 1) await page.keyboard.press('Tab');
    expect(await focused()).toBe(true);
    await page.context().close();
  });
});
