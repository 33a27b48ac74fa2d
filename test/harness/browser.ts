/**
 * Debian's Chromium (package `chromium`, installed by .ci/run when missing)
 * driven by playwright-core, which downloads nothing. Without Chromium a test
 * file says why and skips itself, visibly, except in CI (required-tools.ts),
 * where the file fails.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { DashboardOptions } from '../../src/index.js';
import { buildDashboardAssets } from '../../scripts/build-dashboard.js';
import { SCOPE_HEADER, serveDashboard, type ServedDashboard } from './dashboard.js';
import type { TestDatabase } from './database.js';
import { toolRequired } from './required-tools.js';

/** CHROMIUM_PATH, else `chromium` on the PATH (Debian installs /usr/bin/chromium). */
function findChromium(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin'];
  return dirs.map((dir) => path.join(dir, 'chromium')).find((candidate) => existsSync(candidate)) ?? '/usr/bin/chromium';
}

export const CHROMIUM = findChromium();

/**
 * True when Chromium is there. Otherwise, in CI, throws (the file fails: a green run must have run it);
 * elsewhere prints, once per file, why `what` is skipped.
 */
export function chromiumAvailable(what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  const why = `no Chromium at ${CHROMIUM} (install Debian's \`chromium\` package, or set CHROMIUM_PATH)`;
  if (toolRequired('RUNLEDGER_REQUIRE_BROWSER')) throw new Error(`${what} cannot run in CI: ${why}`);
  console.warn(`${what} SKIPPED: ${why}`);
  return false;
}

export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  // Root in CI: Chromium's sandbox needs an unprivileged user.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** The dashboard served on a test file's database, with Chromium to open its pages (useDashboardInChromium). */
export interface DashboardInChromium {
  readonly browser: Browser;
  readonly served: ServedDashboard;
  /** A page in a new context, sending `scope` as the test scope header; its script errors fail the test that opened it. */
  openPage(hash: string, scope?: string, options?: BrowserContextOptions): Promise<Page>;
  /** Counts a page opened some other way in the check after each test: its script errors fail the test. */
  watchErrors(page: Page, label: string): void;
}

/**
 * Call inside a `describe`: builds the dashboard's assets (no prior `npm run build`), launches Chromium and
 * serves the dashboard on the file's database (LISTEN on its URL), closing the browser after the block. After
 * each test, the script errors of the pages it opened must be none.
 */
export function useDashboardInChromium(
  db: TestDatabase,
  options: { viewport?: { width: number; height: number }; dashboard?: Partial<DashboardOptions> } = {},
): DashboardInChromium {
  let browser: Browser | undefined;
  let served: ServedDashboard | undefined;
  const pageErrors: string[] = [];
  const viewport = options.viewport ?? { width: 1280, height: 860 };

  beforeAll(async () => {
    await buildDashboardAssets();
    browser = await launchChromium();
    served = await serveDashboard(db.prisma, { listenConnectionString: db.url, ...options.dashboard });
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([]);
  });
  const watchErrors = (page: Page, label: string): void => {
    page.on('pageerror', (error) => pageErrors.push(`${label}: ${error.message}`));
  };

  return {
    get browser() {
      return browser!;
    },
    get served() {
      return served!;
    },
    watchErrors,
    async openPage(hash, scope = 'admin', contextOptions = {}) {
      const context = await browser!.newContext({ viewport, extraHTTPHeaders: { [SCOPE_HEADER]: scope }, ...contextOptions });
      const page = await context.newPage();
      watchErrors(page, hash);
      await page.goto(`${served!.url}/${hash}`);
      return page;
    },
  };
}

/**
 * A screenshot to test-artifacts/ (git-ignored); with RUNLEDGER_UPDATE_SCREENSHOTS=1 also to docs/, where the
 * README's images live (unless `forReadme` is false). Returns the artifact's path.
 */
export async function screenshot(page: Page, name: string, { fullPage = true, forReadme = true } = {}): Promise<string> {
  const artifacts = path.resolve('test-artifacts');
  await mkdir(artifacts, { recursive: true });
  const file = path.join(artifacts, name);
  await page.screenshot({ path: file, fullPage });
  if (forReadme && process.env.RUNLEDGER_UPDATE_SCREENSHOTS === '1') {
    await mkdir(path.resolve('docs'), { recursive: true });
    await copyFile(file, path.resolve('docs', name));
  }
  return file;
}
