/**
 * Debian's Chromium (package `chromium`, installed by .ci/run when missing)
 * driven by playwright-core, which downloads nothing. Without Chromium a test
 * file says why and skips itself, visibly.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';

/** CHROMIUM_PATH, else `chromium` on the PATH (Debian installs /usr/bin/chromium). */
function findChromium(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin'];
  return dirs.map((dir) => path.join(dir, 'chromium')).find((candidate) => existsSync(candidate)) ?? '/usr/bin/chromium';
}

export const CHROMIUM = findChromium();

/** True when Chromium is there; otherwise prints, once per file, why `what` is skipped. */
export function chromiumAvailable(what: string): boolean {
  const found = existsSync(CHROMIUM);
  if (!found) console.warn(`${what} SKIPPED: no Chromium at ${CHROMIUM} (install Debian's \`chromium\` package, or set CHROMIUM_PATH)`);
  return found;
}

export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  // Root in CI: Chromium's sandbox needs an unprivileged user.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
