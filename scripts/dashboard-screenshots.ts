/**
 * Regenerates the dashboard screenshots in docs/ (dashboard-*.png): runs the
 * Chromium tests that take them, with RUNLEDGER_UPDATE_SCREENSHOTS=1 so each
 * is copied from test-artifacts/ to docs/. The pages are the tests' own
 * (real runs through the library on a fresh database), so a screenshot never
 * shows a state the tests did not check.
 *
 *   npx tsx scripts/dashboard-screenshots.ts
 */
import { spawnSync } from 'node:child_process';

const files = [
  'test/integration/dashboard-browser.test.ts',
  'test/integration/dashboard-views.test.ts',
  'test/integration/dashboard-attention-browser.test.ts',
  'test/integration/dashboard-timeline-browser.test.ts',
];
const result = spawnSync('npx', ['vitest', 'run', ...files], { stdio: 'inherit', env: { ...process.env, RUNLEDGER_UPDATE_SCREENSHOTS: '1' } });
process.exit(result.status ?? 1);
