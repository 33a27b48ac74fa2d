/** `runledger limits list|set` and `limits rate list|set`: concurrency and rate keys' limits (src/cli/limits.ts, rate-limits.ts). */
import { describe, expect, it } from 'vitest';
import { claimJobs, enqueueJob } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

async function keyRow(key: string): Promise<{ max_leased: number; set_by: string } | undefined> {
  const [row] = await db.prisma.$queryRaw<{ max_leased: number; set_by: string }[]>`
    SELECT max_leased, set_by FROM runledger.concurrency_limits WHERE key = ${key}`;
  return row;
}

async function rateRow(key: string): Promise<{ max_starts: number; period_ms: number; burst: number; set_by: string } | undefined> {
  const [row] = await db.prisma.$queryRaw<{ max_starts: number; period_ms: number; burst: number; set_by: string }[]>`
    SELECT max_starts, period_ms, burst, set_by FROM runledger.rate_limits WHERE key = ${key}`;
  return row;
}

const rated = (key: string, organizationId?: string, limit = 2) =>
  enqueueJob(db.prisma, { jobType: 'cli.rated', payload: {}, ...(organizationId ? { organizationId } : {}), rateLimit: { key, limit, periodMs: 3_600_000 } });

describe('runledger limits', () => {
  it('lists keys with their limits, leases and waiting jobs, in the scope, a page at a time', async () => {
    for (const organizationId of ['acme', 'acme', 'acme', 'globex']) {
      await enqueueJob(db.prisma, { jobType: 'cli.keyed', organizationId, payload: {}, concurrency: { key: 'cli-llm', limit: 2 } });
    }
    await enqueueJob(db.prisma, { jobType: 'cli.keyed', organizationId: 'globex', payload: {}, concurrency: { key: 'cli-mail', limit: 1 } });
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['cli.keyed'], limit: 1, leaseSeconds: 60, markRunning: true });

    const listed = await cli('limits', 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^KEY\s+LIMIT\s+LEASED\s+WAITING\s+SET BY\s+UPDATED/);
    expect(listed.stdout).toMatch(/cli-llm\s+2\s+1\s+3\s+enqueue/);
    expect(listed.stdout).toMatch(/cli-mail\s+1\s+0\s+1\s+enqueue/);

    const json = JSON.parse((await cli('--json', 'limits', 'list')).stdout);
    expect(json.items.map((k: { key: string }) => k.key)).toEqual(['cli-llm', 'cli-mail']);
    expect(json.nextAfter).toBeNull();

    const first = await cli('limits', 'list', '--limit', '1');
    expect(first.stdout).toContain('More: --after "cli-llm"');
    const second = JSON.parse((await cli('--json', 'limits', 'list', '--after', 'cli-llm')).stdout);
    expect(second.items.map((k: { key: string }) => k.key)).toEqual(['cli-mail']);

    // An organization sees its keys and counts its own jobs.
    const acme = JSON.parse((await cli('--json', '--org', 'acme', 'limits', 'list')).stdout);
    expect(acme.items).toEqual([expect.objectContaining({ key: 'cli-llm', limit: 2 })]);
    expect(acme.items[0].leased + acme.items[0].waiting).toBe(3);
    expect(JSON.parse((await cli('--json', '--org', 'nobody', 'limits', 'list')).stdout).items).toEqual([]);
  });

  it('pins a limit and gives it back to enqueues', async () => {
    await enqueueJob(db.prisma, { jobType: 'cli.keyed', payload: {}, concurrency: { key: 'cli-set', limit: 2 } });
    expect(await cli('limits', 'set', '--key', 'cli-set', '--limit', '7')).toMatchObject({
      code: 0,
      stdout: 'Concurrency key cli-set: limit 7, pinned (0 leased, 1 waiting).\n',
    });
    expect(await keyRow('cli-set')).toEqual({ max_leased: 7, set_by: 'operator' });
    // An enqueue no longer changes a pinned limit.
    await enqueueJob(db.prisma, { jobType: 'cli.keyed', payload: {}, concurrency: { key: 'cli-set', limit: 3 } });
    expect(await keyRow('cli-set')).toEqual({ max_leased: 7, set_by: 'operator' });
    const cleared = JSON.parse((await cli('--json', 'limits', 'set', '--key', 'cli-set', '--clear')).stdout);
    expect(cleared).toMatchObject({ key: 'cli-set', limit: 7, setBy: 'enqueue', waiting: 2 });
    await enqueueJob(db.prisma, { jobType: 'cli.keyed', payload: {}, concurrency: { key: 'cli-set', limit: 3 } });
    expect(await keyRow('cli-set')).toEqual({ max_leased: 3, set_by: 'enqueue' });
    // A key no job named can be pinned ahead of its jobs; one with no row cannot be given back.
    expect((await cli('limits', 'set', '--key', 'cli-new', '--limit', '4')).code).toBe(0);
    expect(await keyRow('cli-new')).toEqual({ max_leased: 4, set_by: 'operator' });
    expect(await cli('limits', 'set', '--key', 'cli-none', '--clear')).toMatchObject({
      code: 3,
      stderr: 'job.concurrency_key_not_found: No job has named this concurrency key.\n',
    });
  });

  it('refuses bad or missing options with a coded usage error naming the option, and changes nothing', async () => {
    await enqueueJob(db.prisma, { jobType: 'cli.keyed', payload: {}, concurrency: { key: 'cli-strict', limit: 2 } });
    const cases: [string[], string, string][] = [
      [['limits', 'set', '--key', 'cli-strict'], 'cli.missing_argument', '--limit'],
      [['limits', 'set', '--key', 'cli-strict', '--limit', '3', '--clear'], 'cli.conflicting_options', '--clear'],
      [['limits', 'set', '--key', 'cli-strict', '--limit', '0'], 'cli.invalid_argument', '--limit'],
      [['limits', 'set', '--key', 'cli-strict', '--limit', '1.5'], 'cli.invalid_argument', '--limit'],
      [['limits', 'set', '--key', 'cli-strict', '--limit', '100001'], 'cli.invalid_argument', '--limit'],
      [['limits', 'set', '--key', 'cli-strict', '--limit', ''], 'cli.invalid_argument', '--limit'],
      [['limits', 'set', '--key', '', '--limit', '3'], 'cli.invalid_argument', '--key'],
      [['limits', 'set', '--key', '  ', '--clear'], 'cli.invalid_argument', '--key'],
      [['limits', 'set', '--limit', '3'], 'cli.missing_mandatory_option_value', '--key'],
      [['limits', 'list', '--after', ' '], 'cli.invalid_argument', '--after'],
      [['limits', 'list', '--limit', '501'], 'cli.invalid_argument', '--limit'],
      [['--org', 'acme', 'limits', 'set', '--key', 'cli-strict', '--limit', '3'], 'cli.scope_not_supported', '--org'],
      [['--without-org', 'limits', 'set', '--key', 'cli-strict', '--clear'], 'cli.scope_not_supported', '--without-org'],
    ];
    for (const [args, code, field] of cases) {
      const result = await cli('--json', ...args);
      const error = JSON.parse(result.stderr);
      expect([args.join(' '), result.code, error.code, error.details.field]).toEqual([args.join(' '), 2, code, field]);
    }
    expect(await keyRow('cli-strict')).toEqual({ max_leased: 2, set_by: 'enqueue' });
  });
});

describe('runledger limits rate', () => {
  it('lists rate keys with their limits, tokens and waiting jobs, in the scope, a page at a time', async () => {
    for (const organizationId of ['acme', 'acme', 'acme', 'globex']) await rated('cli-rate-api', organizationId);
    await rated('cli-rate-mail', 'globex', 1);
    // One start of cli-rate-api takes one of its 2 tokens.
    await claimJobs(db.prisma, { workerId: 'w', jobTypes: ['cli.rated'], limit: 1, leaseSeconds: 60, markRunning: true });

    const listed = await cli('limits', 'rate', 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^KEY\s+LIMIT\s+PERIOD MS\s+BURST\s+TOKENS\s+WAITING\s+SET BY\s+UPDATED/);
    expect(listed.stdout).toMatch(/cli-rate-api\s+2\s+3600000\s+2\s+1\s+3\s+enqueue/);
    expect(listed.stdout).toMatch(/cli-rate-mail\s+1\s+3600000\s+1\s+1\s+1\s+enqueue/);

    const first = await cli('limits', 'rate', 'list', '--limit', '1');
    expect(first.stdout).toContain('More: --after "cli-rate-api"');
    const second = JSON.parse((await cli('--json', 'limits', 'rate', 'list', '--after', 'cli-rate-api')).stdout);
    expect(second.items.map((k: { key: string }) => k.key)).toEqual(['cli-rate-mail']);
    expect(second.nextAfter).toBeNull();

    // An organization sees its keys and counts its own jobs.
    const acme = JSON.parse((await cli('--json', '--org', 'acme', 'limits', 'rate', 'list')).stdout);
    expect(acme.items).toEqual([expect.objectContaining({ key: 'cli-rate-api', limit: 2, periodMs: 3_600_000, burst: 2 })]);
    expect(acme.items[0].waiting).toBeGreaterThanOrEqual(2);
    expect(JSON.parse((await cli('--json', '--org', 'nobody', 'limits', 'rate', 'list')).stdout).items).toEqual([]);
  });

  it('pins a rate limit and gives it back to enqueues', async () => {
    await rated('cli-rate-set');
    expect(await cli('limits', 'rate', 'set', '--key', 'cli-rate-set', '--limit', '7', '--period-ms', '1000', '--burst', '3')).toMatchObject({
      code: 0,
      stdout: 'Rate key cli-rate-set: 7 per 1000 ms, burst 3, pinned (2 token(s), 1 waiting).\n',
    });
    expect(await rateRow('cli-rate-set')).toEqual({ max_starts: 7, period_ms: 1000, burst: 3, set_by: 'operator' });
    // An enqueue no longer changes a pinned limit.
    await rated('cli-rate-set', undefined, 5);
    expect(await rateRow('cli-rate-set')).toEqual({ max_starts: 7, period_ms: 1000, burst: 3, set_by: 'operator' });
    const cleared = JSON.parse((await cli('--json', 'limits', 'rate', 'set', '--key', 'cli-rate-set', '--clear')).stdout);
    expect(cleared).toMatchObject({ key: 'cli-rate-set', limit: 7, periodMs: 1000, burst: 3, setBy: 'enqueue', waiting: 2 });
    await rated('cli-rate-set', undefined, 5);
    expect(await rateRow('cli-rate-set')).toEqual({ max_starts: 5, period_ms: 3_600_000, burst: 5, set_by: 'enqueue' });
    // burst defaults to the limit; a key no job named can be pinned ahead of its jobs; one with no row cannot be given back.
    expect((await cli('limits', 'rate', 'set', '--key', 'cli-rate-new', '--limit', '4', '--period-ms', '60000')).code).toBe(0);
    expect(await rateRow('cli-rate-new')).toEqual({ max_starts: 4, period_ms: 60_000, burst: 4, set_by: 'operator' });
    expect(await cli('limits', 'rate', 'set', '--key', 'cli-rate-none', '--clear')).toMatchObject({
      code: 3,
      stderr: 'job.rate_key_not_found: No job has named this rate key.\n',
    });
  });

  it('refuses bad or missing options with a coded usage error naming the option, and changes nothing', async () => {
    await rated('cli-rate-strict');
    const set = ['limits', 'rate', 'set', '--key', 'cli-rate-strict'];
    const cases: [string[], string, string][] = [
      [set, 'cli.missing_argument', '--limit'],
      [[...set, '--limit', '3'], 'cli.missing_argument', '--period-ms'],
      [[...set, '--period-ms', '1000'], 'cli.missing_argument', '--limit'],
      [[...set, '--limit', '3', '--period-ms', '1000', '--clear'], 'cli.conflicting_options', '--clear'],
      [[...set, '--burst', '3', '--clear'], 'cli.conflicting_options', '--clear'],
      [[...set, '--limit', '0', '--period-ms', '1000'], 'cli.invalid_argument', '--limit'],
      [[...set, '--limit', '1.5', '--period-ms', '1000'], 'cli.invalid_argument', '--limit'],
      [[...set, '--limit', '', '--period-ms', '1000'], 'cli.invalid_argument', '--limit'],
      [[...set, '--limit', '3', '--period-ms', '604800001'], 'cli.invalid_argument', '--period-ms'],
      [[...set, '--limit', '3', '--period-ms', '1e3'], 'cli.invalid_argument', '--period-ms'],
      [[...set, '--limit', '3', '--period-ms', '1000', '--burst', '0'], 'cli.invalid_argument', '--burst'],
      [[...set, '--limit', '3', '--period-ms', '1000', '--burst', '1000001'], 'cli.invalid_argument', '--burst'],
      [['limits', 'rate', 'set', '--key', ' ', '--clear'], 'cli.invalid_argument', '--key'],
      [['limits', 'rate', 'set', '--limit', '3', '--period-ms', '1000'], 'cli.missing_mandatory_option_value', '--key'],
      [['limits', 'rate', 'list', '--after', ' '], 'cli.invalid_argument', '--after'],
      [['limits', 'rate', 'list', '--limit', '501'], 'cli.invalid_argument', '--limit'],
      [['--org', 'acme', ...set, '--limit', '3', '--period-ms', '1000'], 'cli.scope_not_supported', '--org'],
      [['--without-org', ...set, '--clear'], 'cli.scope_not_supported', '--without-org'],
    ];
    for (const [args, code, field] of cases) {
      const result = await cli('--json', ...args);
      const error = JSON.parse(result.stderr);
      expect([args.join(' '), result.code, error.code, error.details.field]).toEqual([args.join(' '), 2, code, field]);
    }
    expect(await rateRow('cli-rate-strict')).toEqual({ max_starts: 2, period_ms: 3_600_000, burst: 2, set_by: 'enqueue' });
  });
});
