/**
 * `npm run bench:readme`: regenerates the README's performance figures from
 * bench/results/latest.json, between the markers below (the text around them
 * is written by hand). Fails when latest.json or the markers are missing, so
 * a stale section is never silently kept.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderSection, replaceSection } from './readme-section.js';
import { RESULTS_DIR } from './results.js';
import type { BenchResults } from './workloads/types.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));

async function main(): Promise<void> {
  const results = JSON.parse(await readFile(`${RESULTS_DIR}latest.json`, 'utf8')) as BenchResults;
  const readme = await readFile(README, 'utf8');
  const next = replaceSection(readme, renderSection(results));
  if (next === readme) {
    console.log('README.md performance section is up to date');
    return;
  }
  await writeFile(README, next);
  console.log(`README.md performance section regenerated from the run of ${results.date}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
