/**
 * Regenerates the dashboard screenshots in docs/ (dashboard-*.png): builds the
 * dashboard and runs the Chromium tests that take them, with
 * RUNLEDGER_UPDATE_SCREENSHOTS=1 so each is copied from test-artifacts/ to
 * docs/. The pages are the tests' own (real runs through the library on a
 * fresh database), so a screenshot never shows a state the tests did not
 * check. Then, where Debian's `pngquant` is installed, each picture written is
 * quantized to 256 colours (about a third of the size; without it they are
 * kept as Chromium wrote them, and the script says so).
 *
 *   TEST_DATABASE_URL=... npx tsx scripts/dashboard-screenshots.ts
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const files = [
  'test/integration/dashboard-browser.test.ts',
  'test/integration/dashboard-views.test.ts',
  'test/integration/dashboard-attention-browser.test.ts',
  'test/integration/dashboard-timeline-browser.test.ts',
  'test/integration/dashboard-dead-letter-groups-browser.test.ts',
];
const started = Date.now();
const result = spawnSync('npx', ['vitest', 'run', ...files], { stdio: 'inherit', env: { ...process.env, RUNLEDGER_UPDATE_SCREENSHOTS: '1' } });
if (result.status !== 0) process.exit(result.status ?? 1);

const written = readdirSync('docs')
  .filter((name) => /^dashboard-.*\.png$/.test(name))
  .map((name) => path.join('docs', name))
  .filter((file) => statSync(file).mtimeMs >= started);
const pngquant = spawnSync('pngquant', ['--version'], { stdio: 'ignore' });
if (pngquant.status !== 0) {
  console.log(`wrote ${written.length} screenshots; pngquant is not installed (apt-get install pngquant), so they are not quantized`);
  process.exit(0);
}
for (const file of written) {
  const before = statSync(file).size;
  const quantized = spawnSync('pngquant', ['--force', '--skip-if-larger', '--strip', '--quality=70-95', '--output', file, '256', '--', file], {
    stdio: 'inherit',
  });
  // 98/99: the quality floor or --skip-if-larger kept the original, which is fine.
  if (quantized.status !== 0 && quantized.status !== 98 && quantized.status !== 99) process.exit(quantized.status ?? 1);
  console.log(`${file}: ${before} -> ${statSync(file).size} bytes`);
}
