/**
 * The concurrency_keys workload's pure parts (bench/workloads/concurrency-keys.ts): its sizes from the
 * environment, and its table: the ratio to the drain without keys, the most leased of one key, the violations
 * and the headline. No timings are asserted.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readConfig } from '../../bench/config.js';
import { concurrencyKeysTable, readConcurrencyKeySizes, type KeyedDrainMeasure } from '../../bench/workloads/concurrency-keys.js';

const sizes = { jobs: 20_000, keys: 1_000, limit: 3, processes: 8, concurrency: 10, repeats: 2 };

const plain = (rate: number): KeyedDrainMeasure => ({
  keyed: false,
  wallMs: 20_000_000 / rate,
  rate,
  statementsPerJob: 0.5,
  ledgerMax: null,
  ledgerViolations: null,
  unplaced: null,
  sampledMax: 0,
  countsWrong: null,
});
const keyed = (rate: number, over: Partial<KeyedDrainMeasure> = {}): KeyedDrainMeasure => ({
  ...plain(rate),
  keyed: true,
  statementsPerJob: 0.6,
  ledgerMax: 3,
  ledgerViolations: 0,
  unplaced: 0,
  sampledMax: 3,
  countsWrong: 0,
  ...over,
});

describe('concurrency_keys table', () => {
  it('gives the keyed drain as a ratio of the drain without keys, with the most leased of one key', () => {
    const table = concurrencyKeysTable(sizes, [plain(1_000), keyed(900), keyed(850), plain(1_100)]);
    const row = table.rows[1]!;
    // Medians of two: the lower middle (bench/stats.ts), 1,000 and 850.
    expect(row[2]).toBe('0.85x');
    expect(row[3]).toBe('3 / 3');
    expect(row[4]).toBe(0);
    expect(table.headlineBySystem?.runledger).toBe('0.85x the unkeyed drain, at most 3 leased per key (limit 3), 0 violations');
    expect(table.title).toContain('1,000 keys of limit 3, 8 worker processes x concurrency 10');
  });

  it('counts the keys over the limit and the slot counts left wrong, across runs', () => {
    const table = concurrencyKeysTable(sizes, [
      plain(1_000),
      keyed(900, { ledgerMax: 4, ledgerViolations: 2, countsWrong: 1, unplaced: 5 }),
      keyed(900, { ledgerViolations: 1 }),
    ]);
    const row = table.rows[1]!;
    expect(row[3]).toBe('4 / 3');
    expect(row[4]).toBe(3);
    expect(row[5]).toBe(1);
    expect(table.headlineBySystem?.runledger).toMatch(/at most 4 leased per key \(limit 3\), 3 violations$/);
    expect(table.notes.join('\n')).toContain('5 attempts the ledger could not place');
  });
});

describe('concurrency_keys sizes', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('are 20,000 jobs over 1,000 keys of limit 3 and 8 processes at full size, smaller when quick', () => {
    vi.stubEnv('BENCH_QUICK', '');
    expect(readConcurrencyKeySizes(readConfig())).toMatchObject({ jobs: 20_000, keys: 1_000, limit: 3, processes: 8, concurrency: 10 });
    vi.stubEnv('BENCH_QUICK', '1');
    expect(readConcurrencyKeySizes(readConfig())).toMatchObject({ jobs: 2_000, keys: 100, limit: 3, processes: 8 });
  });

  it('take the environment, and refuse what is not a positive integer', () => {
    vi.stubEnv('BENCH_CK_JOBS', '5000');
    vi.stubEnv('BENCH_CK_PROCESSES', '4');
    expect(readConcurrencyKeySizes(readConfig())).toMatchObject({ jobs: 5_000, processes: 4 });
    vi.stubEnv('BENCH_CK_POLL_MS', '50');
    expect(readConcurrencyKeySizes(readConfig()).pollMs).toBe(50);
    vi.stubEnv('BENCH_CK_LIMIT', '0');
    expect(() => readConcurrencyKeySizes(readConfig())).toThrow(/BENCH_CK_LIMIT/);
  });
});
