/** `runledger worker --until-idle --wait-due`: jobs due later, waited for within a bound. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { enqueueJob, getJob, noOrganizationScope } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);
const worker = (...args: string[]) => cli('--json', 'worker', '--handlers', 'test/fixtures/cli/handlers.ts', '--until-idle', ...args);
const statusOf = async (jobId: string) => (await getJob(db.prisma, { scope: noOrganizationScope(), jobId })).status;

afterEach(() => vi.restoreAllMocks());

describe('runledger worker --until-idle with jobs due later', () => {
  it('exits leaving a job due later PENDING, and with --wait-due waits for it and runs it', async () => {
    const soon = await enqueueJob(db.prisma, { jobType: 'cli.greet', payload: { name: 'soon' }, delayMs: 1_000 });
    const tomorrow = await enqueueJob(db.prisma, { jobType: 'cli.greet', payload: { name: 'tomorrow' }, delayMs: 86_400_000 });
    const plain = await worker();
    expect(plain.code).toBe(0);
    expect(await statusOf(soon.jobId)).toBe('PENDING');

    const waited = await worker('--wait-due', '60000');
    expect(waited.code).toBe(0);
    expect(JSON.parse(waited.stdout).stats).toMatchObject({ succeeded: 1 });
    expect(await statusOf(soon.jobId)).toBe('SUCCEEDED');
    // Beyond the bound: left for a later run.
    expect(await statusOf(tomorrow.jobId)).toBe('PENDING');
  });

  it('refuses --wait-due without --until-idle', async () => {
    const result = await cli('--json', 'worker', '--handlers', 'test/fixtures/cli/handlers.ts', '--wait-due', '1000');
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stderr)).toMatchObject({ code: 'cli.conflicting_options', message: expect.stringContaining('--wait-due') });
  });
});
