/**
 * Writes the dashboard bundle's size into docs/operate/dashboard.md from the
 * build itself: builds the assets into a temporary folder, gzips each (level
 * 9, as build-dashboard.ts reports them) and replaces the text between the
 * `dashboard-size` markers. test/unit/dashboard-size.test.ts fails when the
 * docs' figure and the build drift apart by more than DRIFT_KIB.
 *
 *   npx tsx scripts/dashboard-size.ts          rewrite the figure
 *   npx tsx scripts/dashboard-size.ts --check  exit 1 when it is stale
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDashboardAssets, type BuiltAsset } from './build-dashboard.js';

const root = fileURLToPath(new URL('..', import.meta.url));
export const SIZE_DOC = path.join(root, 'docs', 'operate', 'dashboard.md');
export const MARKERS = /<!-- dashboard-size:start[^>]*-->([\s\S]*?)<!-- dashboard-size:end -->/;
/** How far the documented total may be from the built one before the unit test fails. */
export const DRIFT_KIB = 1;

const kib = (bytes: number) => (bytes / 1024).toFixed(1);

/** The built assets' sizes, from a fresh build in a temporary folder. */
export async function measureDashboard(): Promise<BuiltAsset[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'runledger-dashboard-size-'));
  try {
    return await buildDashboardAssets(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function sizeSentence(assets: BuiltAsset[]): string {
  const gz = (name: string) => kib(assets.find((asset) => asset.name === name)?.gzipBytes ?? 0);
  const total = assets.reduce((sum, asset) => sum + asset.gzipBytes, 0);
  return `**${kib(total)} KiB gzipped** in all (app.js ${gz('app.js')} KiB, with dagre; app.css ${gz('app.css')} KiB; index.html ${gz('index.html')} KiB; favicon.svg ${gz('favicon.svg')} KiB)`;
}

/** The total the docs state, in KiB. */
export function documentedTotalKib(doc: string): number | null {
  const inside = MARKERS.exec(doc)?.[1] ?? '';
  const match = /\*\*([0-9]+(?:\.[0-9])?) KiB gzipped\*\*/.exec(inside);
  return match ? Number(match[1]) : null;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const assets = await measureDashboard();
  const doc = await readFile(SIZE_DOC, 'utf8');
  if (!MARKERS.test(doc)) throw new Error(`${SIZE_DOC} has no dashboard-size markers`);
  const next = doc.replace(
    MARKERS,
    `<!-- dashboard-size:start (written by scripts/dashboard-size.ts from the build) -->${sizeSentence(assets)}<!-- dashboard-size:end -->`,
  );
  if (process.argv.includes('--check')) {
    if (next !== doc) {
      process.stderr.write(`stale: ${sizeSentence(assets)}\n`);
      process.exit(1);
    }
  } else {
    await writeFile(SIZE_DOC, next);
  }
  process.stdout.write(`${sizeSentence(assets)}\n`);
}
