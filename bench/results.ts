/**
 * Writes a run's results under bench/results/: one JSON and one markdown file
 * per run, plus latest.json/latest.md for a complete full-size run (the
 * README is generated from those) or latest-quick.json/latest-quick.md for a
 * complete BENCH_QUICK smoke run. A run narrowed by BENCH_WORKLOADS or
 * BENCH_SYSTEMS writes only its own files (named "-partial"), so neither a
 * smoke run nor a partial one replaces the published figures.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderMarkdown } from './report.js';
import type { BenchResults } from './workloads/types.js';

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export async function writeResults(results: BenchResults): Promise<{ json: string; markdown: string; latest: string }> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const partial = results.config.workloads !== null || results.config.systems !== null;
  const stem = `${results.date.replace(/[:.]/g, '-')}${results.quick ? '-quick' : ''}${partial ? '-partial' : ''}`;
  const json = `${JSON.stringify(results, null, 2)}\n`;
  const markdown = renderMarkdown(results);
  const files = { json: `${RESULTS_DIR}${stem}.json`, markdown: `${RESULTS_DIR}${stem}.md` };
  await writeFile(files.json, json);
  await writeFile(files.markdown, markdown);
  if (partial) return { ...files, latest: 'no latest.* file (a partial run)' };
  const latest = results.quick ? 'latest-quick' : 'latest';
  await writeFile(`${RESULTS_DIR}${latest}.json`, json);
  await writeFile(`${RESULTS_DIR}${latest}.md`, markdown);
  return { ...files, latest: `${RESULTS_DIR}${latest}.{json,md}` };
}
