/**
 * SQL facts written once, and one place for the statements that write
 * job_queue (ARCHITECTURE.md, "SQL"). A second spelling of the lease fence,
 * the quiescence predicate or the terminal run statuses, or a job_queue write
 * outside src/queue/statements/, fails here with the file that holds it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(join(root, 'src')).map((path) => ({ file: relative(root, path), text: readFileSync(path, 'utf8') }));

/** The files (outside `allowed`) whose text matches `pattern`. */
function spelledIn(pattern: RegExp, allowed: readonly string[]): string[] {
  return files.filter(({ file, text }) => !allowed.includes(file) && pattern.test(text)).map(({ file }) => file);
}

describe('SQL written once', () => {
  it('spells the lease fence only in src/db/fragments.ts', () => {
    expect(spelledIn(/jq\.lease_owner\s*=/, ['src/db/fragments.ts'])).toEqual([]);
    expect(spelledIn(/'LEASED'\s+AND\s+\w+\.lease_expires_at\s*>/, ['src/db/fragments.ts'])).toEqual([]);
  });

  it('spells "a canceled job of the run still holds its lease" only in src/db/fragments.ts', () => {
    expect(spelledIn(/status\s*=\s*'CANCELED'\s+AND\s+\w+\.lease_expires_at\s*>/, ['src/db/fragments.ts'])).toEqual([]);
  });

  it('spells the terminal run statuses in SQL nowhere (the fragment builds them from TERMINAL_RUN_STATUSES)', () => {
    expect(spelledIn(/IN\s*\(\s*'SUCCEEDED',\s*'COMPLETED_WITH_ERRORS',\s*'CANCELED'\s*\)/, [])).toEqual([]);
  });

  it('writes job_queue only from src/queue/statements/ (and the release cascade and function wake, below the queue)', () => {
    const writers = files
      .filter(({ text }) => /(UPDATE|INSERT INTO|DELETE FROM)\s+runledger\.job_queue\b/.test(text))
      .map(({ file }) => file)
      .filter((file) => !file.startsWith('src/queue/statements/'));
    expect(writers).toEqual(['src/coordination/dependency-release.ts', 'src/coordination/function-wake.ts']);
  });

  it('writes job_leases only from src/queue/statements/lease-rows.ts, and every job_queue lifecycle write that moves a lease uses it', () => {
    const writers = files.filter(({ text }) => /(UPDATE|INSERT INTO|DELETE FROM)\s+runledger\.job_leases\b/.test(text)).map(({ file }) => file);
    expect(writers).toEqual(['src/queue/statements/lease-rows.ts']);
    // The statements that take a job into or out of LEASED, or move its expiry, each carry the lease row's write.
    const users = files.filter(({ text }) => /from '\.\/lease-rows\.js'/.test(text)).map(({ file }) => file);
    expect(users.sort()).toEqual(
      [
        'src/queue/statements/cancel-job.ts',
        'src/queue/statements/cancel-run-jobs.ts',
        'src/queue/statements/claim-writes.ts',
        'src/queue/statements/complete-jobs.ts',
        'src/queue/statements/continue-jobs.ts',
        'src/queue/statements/fail-job.ts',
        'src/queue/statements/lease-writes.ts',
        'src/queue/statements/reap-expired-leases.ts',
        'src/queue/statements/release-job.ts',
      ].sort(),
    );
  });

  it('finds a spelling it is looking for', () => {
    // The patterns above match the text they guard against (so an empty list means absent, not mistyped).
    expect(/jq\.lease_owner\s*=/.test('AND jq.lease_owner = i.worker_id')).toBe(true);
    expect(/'LEASED'\s+AND\s+\w+\.lease_expires_at\s*>/.test("jq.status::text = 'LEASED' AND jq.lease_expires_at > c.at")).toBe(true);
    expect(/status\s*=\s*'CANCELED'\s+AND\s+\w+\.lease_expires_at\s*>/.test("jq.status = 'CANCELED' AND jq.lease_expires_at > clock_timestamp()")).toBe(true);
    expect(/IN\s*\(\s*'SUCCEEDED',\s*'COMPLETED_WITH_ERRORS',\s*'CANCELED'\s*\)/.test("wr.status IN ('SUCCEEDED', 'COMPLETED_WITH_ERRORS', 'CANCELED')")).toBe(
      true,
    );
    expect(spelledIn(/UPDATE\s+runledger\.job_queue\b/, []).length).toBeGreaterThan(0);
    expect(spelledIn(/DELETE FROM\s+runledger\.job_leases\b/, []).length).toBeGreaterThan(0);
  });
});
