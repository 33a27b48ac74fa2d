/**
 * The code lists in src/errors/codes.ts are complete and current: every
 * dotted code literal in src is listed (the compiler already refuses an
 * unlisted code passed to an error constructor; this also catches codes kept
 * in plain string constants), and every listed code is used somewhere.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ERROR_CODES, JOB_OUTCOME_CODES, isRunledgerError, type ErrorCode } from '../../src/index.js';

const SRC = new URL('../../src/', import.meta.url).pathname;
/** Dotted literals in src that are not codes: job and workflow types in examples, file names, property paths. */
const NOT_CODES = new Set([
  'billing.capture',
  'email.send',
  'migration.sql',
  'outcome.output',
  'profiles.crawl',
  'profiles.persist',
  'profiles.refresh',
  'profiles.score',
  'x.a',
]);
/** Codes a handler's example throws as its own (RetryableError/TerminalError), not runledger's. */
const HOST_CODES = new Set(['billing.customer_missing', 'billing.rate_limited', 'billing.declined']);
/** The integrity checker's violation kinds (src/integrity/violations.ts): reported, never thrown or recorded. */
const VIOLATION_KINDS = new Set([
  'job.lease_columns',
  'job.lease_row_missing',
  'job.output_not_succeeded',
  'job.finished_at',
  'job.step_link_mismatch',
  'job.run_number_mismatch',
  'job.resource_mismatch',
  'job.backoff_mismatch',
  'job.attempt_open_count',
  'job.attempt_lease_mismatch',
  'job.attempt_history',
  'job.finished_before_started',
]);
const PREFIXES = /^(cli|client|database|job|listen|migrate|scope|testing|worker|workflow)\./;

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.parentPath.includes('generated')).map((e) => join(e.parentPath, e.name));
}

async function literalsInSource(): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const file of await sourceFiles(SRC)) {
    if (file.endsWith(join('errors', 'codes.ts'))) continue;
    const text = await readFile(file, 'utf8');
    for (const match of text.matchAll(/'([a-z][a-z_]*\.[a-z][a-z_]*)'/g)) {
      const list = found.get(match[1]!) ?? [];
      list.push(file.slice(SRC.length));
      found.set(match[1]!, list);
    }
  }
  return found;
}

describe('error codes', () => {
  it('lists every code literal used in src', async () => {
    const known = new Set<string>([...ERROR_CODES, ...JOB_OUTCOME_CODES]);
    const unlisted = [...(await literalsInSource()).entries()]
      .filter(
        ([literal]) => PREFIXES.test(literal) && !known.has(literal) && !NOT_CODES.has(literal) && !HOST_CODES.has(literal) && !VIOLATION_KINDS.has(literal),
      )
      .map(([literal, files]) => `${literal} (${files.join(', ')})`);
    expect(unlisted).toEqual([]);
  });

  it('lists no code that src no longer uses', async () => {
    const used = await literalsInSource();
    const unused = [...ERROR_CODES, ...JOB_OUTCOME_CODES].filter((code) => !used.has(code));
    expect(unused).toEqual([]);
  });

  it('keeps the two lists apart and free of duplicates', () => {
    const all = [...ERROR_CODES, ...JOB_OUTCOME_CODES];
    expect(new Set(all).size).toBe(all.length);
  });

  it('types isRunledgerError by code, so a misspelled code fails to compile', () => {
    expectTypeOf(isRunledgerError).parameter(1).toEqualTypeOf<ErrorCode | undefined>();
    const check = (e: unknown) => {
      // @ts-expect-error 'job.lease_owner_mismach' is not an ErrorCode
      isRunledgerError(e, 'job.lease_owner_mismach');
      return isRunledgerError(e, 'job.lease_owner_mismatch');
    };
    expect(check(new Error('plain'))).toBe(false);
  });
});
