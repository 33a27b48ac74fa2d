/**
 * The page's static files, bundled by `npm run build` (scripts/build-dashboard.ts)
 * into `assets/` beside this module: dist/dashboard/assets in the package. No
 * CDN, nothing fetched at run time. Read once, then served from memory.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { UnavailableError } from '../errors/runledger-error.js';
import type { BodyAnswer } from './exchange.js';

/** Where the built assets live, relative to this module. */
export const DASHBOARD_ASSETS_DIR = fileURLToPath(new URL('./assets/', import.meta.url));

export const ASSET_FILES = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
} as const;
export type AssetName = keyof typeof ASSET_FILES;

/** The page loads only its own script and style, talks only to its own origin, and cannot be framed. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

export class AssetStore {
  private readonly cache = new Map<AssetName, Promise<Buffer>>();

  constructor(private readonly dir: string = DASHBOARD_ASSETS_DIR) {}

  private load(name: AssetName): Promise<Buffer> {
    let loading = this.cache.get(name);
    if (!loading) {
      loading = readFile(path.join(this.dir, name)).catch((cause: unknown) => {
        this.cache.delete(name);
        throw new UnavailableError('dashboard.assets_missing', 'The dashboard page is not built; run `npm run build`.', {
          cause,
          internalMessage: `missing ${path.join(this.dir, name)}`,
        });
      });
      this.cache.set(name, loading);
    }
    return loading;
  }

  async answer(name: AssetName): Promise<BodyAnswer> {
    const body = await this.load(name);
    const headers = {
      ...SECURITY_HEADERS,
      'content-type': ASSET_FILES[name],
      'content-length': String(body.length),
      // The HTML names the script and style without a hash: revalidate rather than cache stale copies across upgrades.
      'cache-control': 'no-cache',
    };
    return { kind: 'body', status: 200, headers, body };
  }
}
