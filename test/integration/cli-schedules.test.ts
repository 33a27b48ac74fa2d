/** `runledger schedules list|run-now|pause|resume`. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { getSchedule, upsertSchedule, workflow } from '../../src/index.js';
import { runCli } from '../harness/cli.js';
import { useTestDatabase } from '../harness/database.js';

const db = useTestDatabase();
const cli = (...args: string[]) => runCli(db.url, ...args);

afterEach(() => vi.restoreAllMocks());

describe('runledger schedules', () => {
  it('lists, pauses, resumes and runs a schedule now', async () => {
    await upsertSchedule(db.prisma, { key: 'cli.b', cron: '0 3 * * *', jobType: 'cli.job', payload: { n: 1 }, enabled: true });
    await upsertSchedule(db.prisma, { key: 'cli.a', cron: '*/5 * * * *', timezone: 'Europe/Berlin', jobType: 'cli.job', payload: {}, enabled: true });

    const listed = await cli('schedules', 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^KEY\s+CRON\s+TIMEZONE\s+TARGET\s+ENABLED/);
    expect(listed.stdout).toMatch(/cli\.a\s+\*\/5 \* \* \* \*\s+Europe\/Berlin\s+job cli\.job\s+yes/);
    const page = JSON.parse((await cli('--json', 'schedules', 'list', '--limit', '1')).stdout);
    expect(page.items.map((s: { key: string }) => s.key)).toEqual(['cli.a']);
    expect(page.nextCursor).toBe('cli.a');

    expect(await cli('schedules', 'pause', 'cli.b')).toMatchObject({ code: 0, stdout: 'Schedule cli.b paused.\n' });
    expect((await getSchedule(db.prisma, { key: 'cli.b' })).enabled).toBe(false);
    const resumed = await cli('--json', 'schedules', 'resume', 'cli.b');
    expect(JSON.parse(resumed.stdout)).toMatchObject({ key: 'cli.b', enabled: true });

    const ran = JSON.parse((await cli('--json', 'schedules', 'run-now', 'cli.b')).stdout);
    const [job] = await db.prisma.$queryRaw<
      { job_type: string; payload: unknown }[]
    >`SELECT job_type, payload FROM runledger.job_queue WHERE id = ${ran.jobId}::uuid`;
    expect(job).toEqual({ job_type: 'cli.job', payload: { n: 1 } });
  });

  it('shows a workflow target and runs it now', async () => {
    await upsertSchedule(db.prisma, { key: 'cli.wf', cron: '0 4 * * *', workflow: workflow('cli.flow').job('a', 'cli.step', {}).build(), enabled: true });
    expect((await cli('schedules', 'list')).stdout).toMatch(/cli\.wf\s+0 4 \* \* \*\s+UTC\s+workflow cli\.flow\s+yes/);
    const ran = await cli('schedules', 'run-now', 'cli.wf');
    expect(ran.stdout).toMatch(/^Enqueued workflow run [0-9a-f-]{36} from schedule cli\.wf\.\n$/);
  });

  it('exits 3 for an unknown schedule and 2 for a scope it would ignore', async () => {
    const missing = await cli('schedules', 'pause', 'cli.none');
    expect(missing).toMatchObject({ code: 3, stderr: 'schedule.not_found: The schedule does not exist.\n' });
    expect((await cli('--without-org', 'schedules', 'list')).code).toBe(2);
  });
});
