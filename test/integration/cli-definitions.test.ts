/** `runledger definitions sync|list|enable|disable`. */
import { describe, expect, it } from 'vitest';
import { listJobDefinitions } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

describe('runledger definitions', () => {
  it('syncs a handlers module, lists, disables and enables a type', async () => {
    const synced = await cli('--json', 'definitions', 'sync', '--handlers', 'test/fixtures/cli/handlers.ts');
    expect(synced.code).toBe(0);
    expect(JSON.parse(synced.stdout)).toEqual({ inserted: ['cli.greet'], updated: [], unchanged: [] });
    expect((await cli('definitions', 'sync', '--handlers', 'test/fixtures/cli/handlers.ts')).stdout).toBe('0 inserted, 0 updated, 1 unchanged.\n');

    const listed = await cli('definitions', 'list');
    expect(listed.stdout.split('\n')[0]).toMatch(/^JOB TYPE\s+ENABLED\s+PRIORITY\s+MAX ATTEMPTS/);
    expect(listed.stdout).toMatch(/cli\.greet\s+yes\s+0\s+5\s+300/);

    expect(await cli('definitions', 'disable', 'cli.greet')).toMatchObject({ code: 0, stdout: 'Job type cli.greet disabled.\n' });
    expect((await listJobDefinitions(db.prisma, {})).items[0]).toMatchObject({ jobType: 'cli.greet', enabled: false });
    expect(JSON.parse((await cli('--json', 'definitions', 'enable', 'cli.greet')).stdout)).toMatchObject({ jobType: 'cli.greet', enabled: true });
  });

  it('exits 3 for an unknown type and 2 for a scope it would ignore', async () => {
    expect(await cli('definitions', 'disable', 'cli.none')).toMatchObject({ code: 3, stderr: 'job.definition_not_found: The job type has no definition.\n' });
    expect((await cli('--org', 'o1', 'definitions', 'list')).code).toBe(2);
  });
});
