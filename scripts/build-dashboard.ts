/**
 * Bundles the dashboard page (ui/dashboard/) into the files the handler
 * serves: index.html, app.js (one minified ES module, dagre included: no CDN,
 * works offline), app.css and favicon.svg. `npm run build` writes them to
 * dist/dashboard/assets, beside the compiled handler; the tests call
 * `buildDashboardAssets()` to write them beside the source
 * (src/dashboard/assets, git-ignored), so `npm test` needs no prior build.
 *
 *   tsx scripts/build-dashboard.ts [outDir]   prints each file's size, raw and gzipped
 */
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const ui = path.join(root, 'ui', 'dashboard');
export const SOURCE_ASSETS_DIR = path.join(root, 'src', 'dashboard', 'assets');

export interface BuiltAsset {
  name: string;
  bytes: number;
  gzipBytes: number;
}

let building: Promise<BuiltAsset[]> | undefined;

/** Builds once per process per call site; concurrent callers share the build. */
export function buildDashboardAssets(outDir: string = SOURCE_ASSETS_DIR): Promise<BuiltAsset[]> {
  if (outDir === SOURCE_ASSETS_DIR) {
    building ??= buildInto(outDir);
    return building;
  }
  return buildInto(outDir);
}

async function buildInto(outDir: string): Promise<BuiltAsset[]> {
  await mkdir(outDir, { recursive: true });
  await build({
    entryPoints: [path.join(ui, 'main.ts')],
    outfile: path.join(outDir, 'app.js'),
    bundle: true,
    format: 'esm',
    minify: true,
    target: 'es2022',
    platform: 'browser',
    legalComments: 'none',
    logLevel: 'warning',
  });
  await copyFile(path.join(ui, 'index.html'), path.join(outDir, 'index.html'));
  await copyFile(path.join(ui, 'app.css'), path.join(outDir, 'app.css'));
  await copyFile(path.join(ui, 'favicon.svg'), path.join(outDir, 'favicon.svg'));
  return Promise.all(
    ['index.html', 'app.js', 'app.css', 'favicon.svg'].map(async (name) => {
      const content = await readFile(path.join(outDir, name));
      return { name, bytes: content.length, gzipBytes: gzipSync(content, { level: 9 }).length };
    }),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const outDir = path.resolve(process.argv[2] ?? SOURCE_ASSETS_DIR);
  const assets = await buildDashboardAssets(outDir);
  for (const asset of assets) process.stdout.write(`${path.relative(root, path.join(outDir, asset.name))}: ${asset.bytes} bytes, ${asset.gzipBytes} gzipped\n`);
  process.stdout.write(`total: ${assets.reduce((sum, a) => sum + a.gzipBytes, 0)} bytes gzipped\n`);
}
