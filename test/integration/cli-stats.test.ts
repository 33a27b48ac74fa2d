/** `runledger stats [--json]`: the queue metrics, human and JSON, within the CLI's scope. */
import { describe, expect, it } from 'vitest';
import { claimJobs, completeJob, enqueueJob } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

describe('runledger stats', () => {
  it('prints the metrics as a table and as JSON, scoped by --org', async () => {
    await enqueueJob(db.prisma, { jobType: 'cli.stats.a', payload: {} });
    await enqueueJob(db.prisma, { jobType: 'cli.stats.a', payload: {}, organizationId: 'org-s' });
    await enqueueJob(db.prisma, { jobType: 'cli.stats.b', payload: {} });
    const [lease] = await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['cli.stats.b'], limit: 1, leaseSeconds: 60, markRunning: true });
    await completeJob(db.prisma, { ...lease!, output: null });

    const human = await cli('stats');
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('pending 2 (runnable 2), leased 0');
    expect(human.stdout).toContain('last hour: succeeded 1, dead-lettered 0, canceled 0');
    expect(human.stdout).toMatch(/cli\.stats\.a\s+direct\s+2\s+2\s+0\s+0\s+0\s+0/);
    expect(human.stdout).toMatch(/run \(start to finish\), last hour: p50 \d+ ms, p95 \d+ ms \(1 job\(s\)\)/);

    const json = await cli('--json', '--org', 'org-s', 'stats');
    expect(json.code).toBe(0);
    const metrics = JSON.parse(json.stdout);
    expect(metrics.jobs).toEqual({ pending: 1, runnable: 1, leased: 0, debounceWaiting: 0, finishedRecently: { succeeded: 0, deadLettered: 0, canceled: 0 } });
    expect(metrics.byType).toHaveLength(1);
    expect(typeof metrics.asOf).toBe('string');
  });

  it('prints the concurrency keys with waiting or leased jobs', async () => {
    expect((await cli('stats')).stdout).not.toContain('Concurrency keys');
    for (let i = 0; i < 3; i += 1) {
      await enqueueJob(db.prisma, { jobType: 'cli.stats.keyed', payload: {}, organizationId: 'org-k', concurrency: { key: 'cli-stats-key', limit: 1 } });
    }
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['cli.stats.keyed'], limit: 3, leaseSeconds: 60, markRunning: true });
    const human = await cli('stats');
    expect(human.stdout).toContain('Concurrency keys: 2 due job(s) waiting over 1 key(s)');
    expect(human.stdout).toMatch(/KEY\s+LIMIT\s+LEASED\s+WAITING\s+SET BY\n\s*cli-stats-key\s+1\s+1\s+2\s+enqueue/);
    const other = JSON.parse((await cli('--json', '--org', 'org-s', 'stats')).stdout);
    expect(other.concurrency).toEqual({ waiting: 0, keyCount: 0, keys: [] });
  });

  it('prints the rate keys with waiting jobs', async () => {
    expect((await cli('stats')).stdout).not.toContain('Rate keys');
    for (let i = 0; i < 3; i += 1) {
      await enqueueJob(db.prisma, {
        jobType: 'cli.stats.rated',
        payload: {},
        organizationId: 'org-r',
        rateLimit: { key: 'cli-stats-rate', limit: 1, periodMs: 60_000 },
      });
    }
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['cli.stats.rated'], limit: 3, leaseSeconds: 60, markRunning: true });
    const human = await cli('stats');
    expect(human.stdout).toContain('Rate keys: 2 due job(s) waiting over 1 key(s)');
    expect(human.stdout).toMatch(/KEY\s+LIMIT\s+PER\s+BURST\s+TOKENS\s+WAITING\s+SET BY\n\s*cli-stats-rate\s+1\s+60\.0 s\s+1\s+0\s+2\s+enqueue/);
    const other = JSON.parse((await cli('--json', '--org', 'org-s', 'stats')).stdout);
    expect(other.rateLimits).toEqual({ waiting: 0, keyCount: 0, keys: [] });
  });
});
