/**
 * The layer rule (.dependency-cruiser.cjs): imports in src/ only go down the
 * floors, no module cycle, no folder outside the floors. Also checked by
 * `npm run lint:layers` in CI; here so `npm test` alone catches it, with a
 * fixture tree proving each rule can fail, and ARCHITECTURE.md's diagram held
 * equal to the rule.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
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

/**
 * Names another module defines, exported again from a module that is not an entry point or a folder's
 * index.ts: `export { x } from './y.js'`, or `import { x } ...; export { x };`. Each is a second place to
 * import the fact from; importers take it from the module that defines it.
 */
function passThroughs(file: string, text: string): string[] {
  const imported = new Set(
    [...text.matchAll(/^import (?:type )?\{([^}]*)\} from/gm)].flatMap((m) =>
      m[1]!.split(',').map(
        (s) =>
          s
            .replace(/^\s*type\s+/, '')
            .trim()
            .split(/\s+as\s+/)
            .pop()!,
      ),
    ),
  );
  const reexports = [...text.matchAll(/^export (?:type )?(?:\*|\{[^}]*\}) from '[^']+'/gm)].map((m) => m[0].replace(/\s+/g, ' '));
  const local = [...text.matchAll(/^export (?:type )?\{([^}]*)\};/gm)]
    .flatMap((m) =>
      m[1]!.split(',').map(
        (s) =>
          s
            .replace(/^\s*type\s+/, '')
            .trim()
            .split(/\s+as\s+/)[0]!,
      ),
    )
    .filter((name) => imported.has(name))
    .map((name) => `export { ${name} } (imported)`);
  return [...reexports, ...local].map((what) => `${file}: ${what}`);
}

/** The TypeScript files of src/ we write (not the generated Prisma client), as `src/...` paths. */
function sourceFiles(): string[] {
  return readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' })
    .map((f) => `src/${f.split(path.sep).join('/')}`)
    .filter((f) => f.endsWith('.ts') && !f.startsWith('src/generated/'));
}

// Left to the worker's rewrite (issue 33): remove from here once src/worker/ no longer re-exports them.
const KNOWN_PASS_THROUGHS = new Set([
  'src/worker/options.ts: export { DEFAULT_LEASE_SECONDS } (imported)',
  'src/worker/options.ts: export { DEFAULT_BATCH_SIZE_PER_HANDLER_SLOT } (imported)',
  'src/worker/timing.ts: export { MAX_TIMER_MS } (imported)',
]);

describe('one definition per fact', () => {
  it('no module of src/ re-exports what another defines, except the entry points and folder index.ts files', () => {
    const files = sourceFiles().filter((f) => f !== 'src/index.ts' && !/^src\/[^/]+\/index\.ts$/.test(f));
    const found = files.flatMap((f) => passThroughs(f, readFileSync(path.join(root, f), 'utf8'))).filter((p) => !KNOWN_PASS_THROUGHS.has(p));
    expect(found).toEqual([]);
  });

  it('writes the UUID pattern once, in validation/primitives.ts', () => {
    expect(sourceFiles().filter((f) => readFileSync(path.join(root, f), 'utf8').includes('{8}-'))).toEqual(['src/validation/primitives.ts']);
  });
});
