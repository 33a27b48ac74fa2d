/**
 * Writes a run's results under bench/results/: one JSON and one markdown file
 * per run, plus latest.json/latest.md for a full-size run (the README is
 * generated from those) or latest-quick.json/latest-quick.md for a
 * BENCH_QUICK smoke run, so a smoke run never replaces the published figures.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderMarkdown } from './report.js';
import type { BenchResults } from './workloads/types.js';

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export async function writeResults(results: BenchResults): Promise<{ json: string; markdown: string; latest: string }> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const stem = `${results.date.replace(/[:.]/g, '-')}${results.quick ? '-quick' : ''}`;
  const json = `${JSON.stringify(results, null, 2)}\n`;
  const markdown = renderMarkdown(results);
  const files = { json: `${RESULTS_DIR}${stem}.json`, markdown: `${RESULTS_DIR}${stem}.md` };
  await writeFile(files.json, json);
  await writeFile(files.markdown, markdown);
  const latest = results.quick ? 'latest-quick' : 'latest';
  await writeFile(`${RESULTS_DIR}${latest}.json`, json);
  await writeFile(`${RESULTS_DIR}${latest}.md`, markdown);
  return { ...files, latest: `${RESULTS_DIR}${latest}.{json,md}` };
}
