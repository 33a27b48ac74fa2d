/**
 * The Node versions package.json promises (`engines`) are ones every runtime
 * dependency of the published package accepts; the dev-only packages that want
 * more (each an EBADENGINE warning on `npm ci` in a clone) are named in the
 * docs' install page (docs/guide/install.md, "Node versions"); and the Node running this suite (CI's) is one we promise.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// semver comes with npm's own tree here (a transitive dev dependency); no types are installed for it.
const semver = createRequire(import.meta.url)('semver') as { satisfies(version: string, range: string): boolean };

const root = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(`${root}package-lock.json`, 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; dev?: boolean; devOptional?: boolean }>;
};
const installPage = readFileSync(`${root}docs/guide/install.md`, 'utf8');

/** Node versions from 18.0 to 26.30, the ones our `engines` range admits. */
const promised: string[] = [];
for (let major = 18; major <= 26; major += 1) {
  for (let minor = 0; minor <= 30; minor += 1) {
    const version = `${major}.${minor}.0`;
    if (semver.satisfies(version, manifest.engines.node)) promised.push(version);
  }
}

interface Wanting {
  name: string;
  range: string;
  runtime: boolean;
  refuses: string[];
}

/** Every locked package whose engines refuse a Node version we promise. */
const wanting: Wanting[] = Object.entries(lock.packages).flatMap(([path, entry]) => {
  const range = !Array.isArray(entry.engines) ? entry.engines?.node : undefined;
  if (!path || !range) return [];
  const refuses = promised.filter((version) => !semver.satisfies(version, range));
  if (refuses.length === 0) return [];
  const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  return [{ name: `${name}@${entry.version}`, range, runtime: !entry.dev && !entry.devOptional, refuses }];
});

describe('Node versions', () => {
  it('promises only versions every runtime dependency accepts', () => {
    expect(promised.length).toBeGreaterThan(0);
    expect(wanting.filter((entry) => entry.runtime)).toEqual([]);
  });

  it('names on the docs install page each dev-only package that refuses the lowest Node we promise (an EBADENGINE warning from `npm ci` in a clone)', () => {
    const lowest = promised[0]!;
    const warned = wanting.filter((entry) => entry.refuses.includes(lowest));
    const names = warned.map((entry) => entry.name.replace(/@[^@]+$/, ''));
    expect([...names].sort()).toEqual(['@prisma/streams-local', 'cookie']);
    for (const [index, name] of names.entries()) {
      const escaped = name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
      expect(installPage, `${warned[index]!.name} (engines ${warned[index]!.range})`).toMatch(new RegExp(`\`${escaped}(@|\`)`));
    }
  });

  it('runs on a Node version it promises', () => {
    expect(semver.satisfies(process.versions.node, manifest.engines.node), `${process.versions.node} vs ${manifest.engines.node}`).toBe(true);
  });
});
