/**
 * The bench's pure parts: the median/min/max of repetitions, the README
 * section replacement, the ratio arithmetic of a rendered headline, and the
 * rule that the benchmarked peers stay out of the package's own install.
 * No timings are asserted: benchmarks only report.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { END_MARKER, START_MARKER, renderSection, replaceSection } from '../../bench/readme-section.js';
import { spread } from '../../bench/stats.js';
import type { BenchResults } from '../../bench/workloads/types.js';

const readJson = (path: string): Record<string, unknown> => JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')) as Record<string, unknown>;

describe('bench statistics', () => {
  it('reports the median of three runs with min and max', () => {
    expect(spread([30, 10, 20])).toEqual({ median: 20, min: 10, max: 30 });
  });

  it('takes the lower middle of an even count, so the median is always a measured value', () => {
    expect(spread([4, 1, 3, 2]).median).toBe(2);
  });
});

describe('README performance section', () => {
  const results: BenchResults = {
    date: '2026-12-01T00:00:00.000Z',
    quick: true,
    node: 'v20.20.2',
    cpus: 2,
    host: 'test',
    server: { kind: 'embedded', version: '18.4', settings: { synchronous_commit: 'on' } },
    config: { repeats: 1 } as BenchResults['config'],
    systems: [
      { key: 'runledger', label: 'runledger (hand loop)', peer: false, description: '' },
      { key: 'peer', label: 'peer', peer: true, description: '' },
    ],
    workloads: [
      {
        kind: 'throughput',
        key: 'chains',
        title: 'chains',
        size: '3 steps',
        unit: 'steps',
        notes: [],
        bestPeer: 'peer',
        rows: [
          { system: 'runledger', label: 'runledger (hand loop)', peer: false, reps: [], rate: { median: 300, min: 300, max: 300 }, commitsPerUnit: { median: 0.1, min: 0.1, max: 0.1 }, statementsPerUnit: null, ratioToBestPeer: 3 },
          { system: 'peer', label: 'peer', peer: true, reps: [], rate: { median: 100, min: 100, max: 100 }, commitsPerUnit: { median: 1, min: 1, max: 1 }, statementsPerUnit: null, ratioToBestPeer: null },
        ],
      },
    ],
    wallSeconds: 1,
  };

  it('replaces only the text between the markers', () => {
    const readme = `# title\n\nbefore\n${START_MARKER}\nstale figures\n${END_MARKER}\nafter\n`;
    const next = replaceSection(readme, renderSection(results));
    expect(next.startsWith('# title\n\nbefore\n')).toBe(true);
    expect(next.endsWith('\nafter\n')).toBe(true);
    expect(next).not.toContain('stale figures');
    expect(next).toContain('| chains | 300 steps/s (3.00x) | peer: 100 steps/s |');
    expect(replaceSection(next, renderSection(results))).toBe(next);
  });

  it('refuses a README without the markers instead of keeping stale figures', () => {
    expect(() => replaceSection('# no markers\n', renderSection(results))).toThrow(/no .* section/);
  });
});

describe('benchmarked peers', () => {
  it('are not in the package manifest or its lockfile', () => {
    const manifest = readJson('package.json');
    const lock = readJson('package-lock.json');
    const declared = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'].flatMap((field) => Object.keys((manifest[field] as Record<string, string> | undefined) ?? {}));
    expect(declared).not.toContain('pg-boss');
    expect(declared).not.toContain('graphile-worker');
    expect(Object.keys(lock.packages as Record<string, unknown>).filter((path) => /node_modules\/(pg-boss|graphile-worker)$/.test(path))).toEqual([]);
  });

  it('are pinned in bench/peers with their own lockfile', () => {
    const peers = readJson('bench/peers/package.json');
    const lock = readJson('bench/peers/package-lock.json');
    expect(Object.keys(peers.dependencies as Record<string, string>).sort()).toEqual(['graphile-worker', 'pg-boss']);
    const packages = lock.packages as Record<string, { version?: string }>;
    expect(packages['node_modules/graphile-worker']?.version).toBe('0.18.0');
    expect(packages['node_modules/pg-boss']?.version).toMatch(/^12\.38\./);
  });
});
