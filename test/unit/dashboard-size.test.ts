/** The dashboard bundle size the docs state comes from the build: this fails when the two drift apart. */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { documentedTotalKib, DRIFT_KIB, measureDashboard, SIZE_DOC, sizeSentence } from '../../scripts/dashboard-size.js';

describe('the dashboard size in the docs', () => {
  it('is within 1 KiB of the built bundle, gzipped (npx tsx scripts/dashboard-size.ts rewrites it)', async () => {
    const assets = await measureDashboard();
    const builtKib = assets.reduce((sum, asset) => sum + asset.gzipBytes, 0) / 1024;
    const documented = documentedTotalKib(await readFile(SIZE_DOC, 'utf8'));
    expect(documented, `docs/operate/dashboard.md: no figure between the dashboard-size markers; run npx tsx scripts/dashboard-size.ts`).not.toBeNull();
    expect(
      Math.abs(documented! - builtKib),
      `docs say ${documented} KiB, the build is ${builtKib.toFixed(1)} KiB: run npx tsx scripts/dashboard-size.ts (${sizeSentence(assets)})`,
    ).toBeLessThanOrEqual(DRIFT_KIB);
  });

  it('reads the figure only between the markers', () => {
    expect(documentedTotalKib('**30.1 KiB gzipped**')).toBeNull();
    expect(documentedTotalKib('a <!-- dashboard-size:start (x) -->**43.0 KiB gzipped** in all<!-- dashboard-size:end --> b')).toBe(43);
  });
});
