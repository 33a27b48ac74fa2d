/**
 * The layer rule (.dependency-cruiser.cjs): imports in src/ only go down the
 * floors, no module cycle, no folder outside the floors. Also checked by
 * `npm run lint:layers` in CI; here so `npm test` alone catches it, with a
 * fixture tree proving each rule can fail, and ARCHITECTURE.md's diagram held
 * equal to the rule.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';
import { floorsMarkdown, floorsSection } from '../../scripts/architecture-floors.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs');

async function violations(baseDir: string): Promise<string[]> {
  const reported = await cruise(['src'], { ...config.options, ruleSet: { forbidden: config.forbidden }, validate: true, baseDir });
  const output = reported.output as ICruiseResult;
  return output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

describe('the layer rule', () => {
  it('holds for src/: no import goes up a floor, no cycle, no folder off the floors', async () => {
    expect(await violations(root)).toEqual([]);
  });

  it('fails a tree with an upward import, a cycle and a stray folder', async () => {
    const found = await violations(fileURLToPath(new URL('../fixtures/layers', import.meta.url)));
    expect(found).toContain('floor-model-no-import-up: src/model/status.ts -> src/queue/claim.ts');
    expect(found.some((v) => v.startsWith('no-circular: src/job/'))).toBe(true);
    expect(found).toContain('no-unknown-folder: src/stray/loose.ts -> src/queue/claim.ts');
    expect(found.filter((v) => v.includes('src/coordination/peer.ts'))).toEqual([]);
  }, 60_000);

  it('ARCHITECTURE.md shows the floors the rule enforces', () => {
    const text = readFileSync(new URL('../../ARCHITECTURE.md', import.meta.url), 'utf8');
    expect(floorsSection(text), 'run `npx tsx scripts/architecture.ts`').toBe(floorsMarkdown());
  });
});
