/** `runledger jobs show` in text: the payload and output a person came to read, not only with --json. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { enqueueJob } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

describe('runledger jobs show', () => {
  it("prints the job's payload and, once it succeeded, its output", async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.greet', payload: { name: 'ops' }, organizationId: 'org_a' });
    const pending = await cli('--org', 'org_a', 'jobs', 'show', jobId);
    expect(pending.stdout).toContain('  payload: {"name":"ops"}');
    expect(pending.stdout).toContain('  organization: org_a');
    expect(pending.stdout).not.toContain('output:');

    expect((await cli('--org', 'org_a', 'worker', '--handlers', 'test/fixtures/cli/handlers.ts', '--until-idle')).code).toBe(0);
    const done = await cli('--org', 'org_a', 'jobs', 'show', jobId);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('  output: {"greeting":"hello ops"}');
  });

  it('says which debounce or throttle window a job is the job of', async () => {
    const { jobId } = await enqueueJob(db.prisma, {
      jobType: 'cli.debounced',
      payload: {},
      debounce: { key: 'customer 7', windowMs: 60_000, maxWaitMs: 120_000 },
    });
    const shown = await cli('jobs', 'show', jobId);
    expect(shown.stdout).toMatch(/ {2}debounce key: "customer 7" {2}runs by: \d{4}-/);
    expect(JSON.parse((await cli('--json', 'jobs', 'show', jobId)).stdout).job.enqueueWindow).toMatchObject({ kind: 'debounce', key: 'customer 7' });
  });

  it('cuts a long payload, pointing at --json for all of it', async () => {
    const { jobId } = await enqueueJob(db.prisma, { jobType: 'cli.long', payload: { text: 'x'.repeat(5_000) } });
    const shown = await cli('jobs', 'show', jobId);
    expect(shown.stdout).toMatch(/ {2}payload: \{"text":"x+… \(3011 more characters: --json shows all\)/);
    expect(JSON.parse((await cli('--json', 'jobs', 'show', jobId)).stdout).job.payload.text).toHaveLength(5_000);
  });
});
