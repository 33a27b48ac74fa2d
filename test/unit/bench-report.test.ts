/**
 * The bench's pure parts: the median/min/max of repetitions, the README
 * section replacement, the ratio arithmetic of a rendered headline, and the
 * rule that the benchmarked peers stay out of the package's own install.
 * No timings are asserted: benchmarks only report.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { END_MARKER, START_MARKER, renderSection, replaceSection } from '../../bench/readme-section.js';
import { renderMarkdown, rowWritesTable } from '../../bench/report.js';
import { spread } from '../../bench/stats.js';
import { rowsWritten, sumTuples, tupleDelta } from '../../bench/tuples.js';
import type { BenchResults } from '../../bench/workloads/types.js';

const readJson = (path: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')) as Record<string, unknown>;

describe('bench statistics', () => {
  it('reports the median of three runs with min and max', () => {
    expect(spread([30, 10, 20])).toEqual({ median: 20, min: 10, max: 30 });
  });

  it('takes the lower middle of an even count, so the median is always a measured value', () => {
    expect(spread([4, 1, 3, 2]).median).toBe(2);
  });
});

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
        {
          system: 'runledger',
          label: 'runledger (hand loop)',
          peer: false,
          reps: [],
          rate: { median: 300, min: 300, max: 300 },
          commitsPerUnit: { median: 0.1, min: 0.1, max: 0.1 },
          statementsPerUnit: null,
          rowsWrittenPerUnit: { median: 14.25, min: 14, max: 15 },
          hotUpdatesPerUnit: { median: 1.5, min: 1, max: 2 },
          indexEntriesPerUnit: { median: 9.5, min: 9, max: 10 },
          rowsWrittenWithSeedPerUnit: { median: 17, min: 16.75, max: 17.75 },
          ratioToBestPeer: 3,
        },
        // Written before the bench counted rows: no rowsWrittenPerUnit / hotUpdatesPerUnit.
        {
          system: 'peer',
          label: 'peer',
          peer: true,
          reps: [],
          rate: { median: 100, min: 100, max: 100 },
          commitsPerUnit: { median: 1, min: 1, max: 1 },
          statementsPerUnit: null,
          ratioToBestPeer: null,
        },
      ],
    },
  ],
  wallSeconds: 1,
};

describe('README performance section', () => {
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

describe('rows written', () => {
  it('are the per-table delta of inserted + updated + deleted tuples, HOT updates apart, new tables counted from 0', () => {
    const before = {
      'runledger.job_queue': { inserted: 10, updated: 5, deleted: 0, hotUpdated: 1 },
      'runledger.job_events': { inserted: 20, updated: 0, deleted: 0, hotUpdated: 0 },
    };
    const after = {
      'runledger.job_queue': { inserted: 10, updated: 9, deleted: 2, hotUpdated: 3 },
      'runledger.job_events': { inserted: 20, updated: 0, deleted: 0, hotUpdated: 0 },
      'public.bench_fan_counter': { inserted: 0, updated: 4, deleted: 0, hotUpdated: 4 },
    };
    const delta = tupleDelta(before, after);
    expect(delta).toEqual({
      'runledger.job_queue': { inserted: 0, updated: 4, deleted: 2, hotUpdated: 2 },
      'public.bench_fan_counter': { inserted: 0, updated: 4, deleted: 0, hotUpdated: 4 },
    });
    expect(sumTuples(delta)).toEqual({ inserted: 0, updated: 8, deleted: 2, hotUpdated: 6 });
    expect(rowsWritten(sumTuples(delta))).toBe(10);
  });

  it('get a column in each throughput table and a summary table per system, n/a for results without them', () => {
    const markdown = renderMarkdown(results);
    expect(markdown).toContain(
      '| system | steps/s (median) | min-max | commits/step | statements/step | rows written/step | HOT updates/step | index entries/step | ratio to best peer |',
    );
    // Index entries too (bench/wal.ts): the runledger row has them, the peer's result predates them.
    expect(markdown).toContain('| runledger (hand loop) | 300 | 300-300 | 0.100 | n/a | 14.25 | 1.50 | 9.50 | 3.00x |');
    expect(markdown).toContain('| peer (best peer) | 100 | 100-100 | 1.000 | n/a | n/a | n/a | n/a | - |');
    expect(rowWritesTable(results)).toBe(
      ['| workload | per | runledger (hand loop) | peer |', '| --- | ---: | ---: | ---: |', '| chains | step | 14.25 (17.00) | n/a |'].join('\n'),
    );
    expect(markdown).toContain(rowWritesTable(results));
  });
});

describe('benchmarked peers', () => {
  it('are not in the package manifest or its lockfile', () => {
    const manifest = readJson('package.json');
    const lock = readJson('package-lock.json');
    const declared = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'].flatMap((field) =>
      Object.keys((manifest[field] as Record<string, string> | undefined) ?? {}),
    );
    expect(declared).not.toContain('pg-boss');
    expect(declared).not.toContain('graphile-worker');
    expect(declared).not.toContain('@dbos-inc/dbos-sdk');
    expect(
      Object.keys(lock.packages as Record<string, unknown>).filter((path) => /node_modules\/(pg-boss|graphile-worker|@dbos-inc\/[^/]+)$/.test(path)),
    ).toEqual([]);
  });

  it('are pinned in bench/peers with their own lockfile', () => {
    const peers = readJson('bench/peers/package.json');
    const lock = readJson('bench/peers/package-lock.json');
    expect(peers.dependencies).toEqual({ '@dbos-inc/dbos-sdk': '5.3.0', 'graphile-worker': '0.18.0', 'pg-boss': '~12.38.0' });
    const packages = lock.packages as Record<string, { version?: string }>;
    expect(packages['node_modules/graphile-worker']?.version).toBe('0.18.0');
    expect(packages['node_modules/pg-boss']?.version).toMatch(/^12\.38\./);
    expect(packages['node_modules/@dbos-inc/dbos-sdk']?.version).toBe('5.3.0');
  });
});
