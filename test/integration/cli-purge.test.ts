/** `runledger purge --older-than <age> [--dry-run]`. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { claimJobs, completeJob, enqueueJob } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';
import { backdateJobs } from '../harness/finished-history.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

/** A succeeded job whose finish (and id: purge reads jobs in id order) is backdated by `daysAgo` days. */
async function succeeded(daysAgo: number): Promise<string> {
  const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.purge', payload: {} });
  const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['cli.purge'], limit: 1, leaseSeconds: 60, markRunning: true });
  await completeJob(db.prisma, { ...lease!, output: null });
  const [backdated] = await backdateJobs(db.prisma, [jobId], new Date(Date.now() - daysAgo * 86_400_000));
  return backdated!;
}

async function left(ids: string[]): Promise<number> {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM runledger.job_queue WHERE id = ANY(${ids}::uuid[])`;
  return row!.n;
}

describe('runledger purge', () => {
  it('counts with --dry-run, then deletes only what finished before the age', async () => {
    const old = [await succeeded(40), await succeeded(31)];
    const young = await succeeded(5);
    const dry = await cli('--json', 'purge', '--older-than', '30d', '--dry-run');
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ jobs: 2, workflowRuns: 0, dryRun: true });
    expect(await left([...old, young])).toBe(3);

    const real = await cli('purge', '--older-than', '30d', '--batch-size', '1');
    expect(real.code).toBe(0);
    expect(real.stdout).toMatch(/^Deleted 2 job\(s\) and 0 workflow run\(s\) \(0 step job\(s\)\) finished before \d{4}-/);
    expect(await left(old)).toBe(0);
    expect(await left([young])).toBe(1);
  });

  it('refuses a malformed age or status and a scope it would ignore (exit 2), deleting nothing', async () => {
    const young = await succeeded(1);
    for (const args of [
      ['purge', '--older-than', '30'],
      ['purge', '--older-than', '-1d'],
      ['purge', '--older-than', '1d', '--statuses', 'PENDING'],
      // An unset variable: never read as the default (every status) or no age.
      ['purge', '--older-than', '1d', '--statuses', ''],
      ['purge', '--older-than', '1d', '--statuses', 'SUCCEEDED,'],
      ['purge', '--older-than', ''],
      ['--without-org', 'purge', '--older-than', '1m'],
    ]) {
      expect((await cli(...args)).code).toBe(2);
    }
    expect(await left([young])).toBe(1);
  });
});
