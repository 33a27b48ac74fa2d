/** `runledger doctor`: exit 0 on a database the engine wrote, 4 with the violations listed when it is corrupted. */
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../harness/database.js';
import { runCli } from '../harness/cli.js';
import { runIntegrityWorkload, type Workload } from '../harness/integrity-workload.js';
import { stepsByKey } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
let workload: Workload;

beforeAll(async () => {
  workload = await runIntegrityWorkload(db.prisma);
});

describe('runledger doctor', () => {
  it('exits 0 and says so on a clean database', async () => {
    const human = await runCli(db.url, 'doctor');
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toMatch(/^No violations: checked 5 run\(s\) and \d+ job\(s\)\.\n$/);
    const json = await runCli(db.url, '--json', 'doctor', '--page-size', '2');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ clean: true, violations: [], truncated: false, checked: { runs: 5 } });
  });

  it('exits 4 and lists each violation with its ids and expected vs found', async () => {
    const steps = await stepsByKey(db.prisma, workload.waiting);
    await db.prisma.$executeRaw`UPDATE runledger.workflow_steps SET dependency_count_pending = 0 WHERE id = ${steps.publish!.id}::uuid`;
    await db.prisma.$executeRaw`UPDATE runledger.workflow_runs SET status = 'COMPLETED_WITH_ERRORS', finished_at = now() WHERE id = ${workload.waiting}::uuid`;

    const human = await runCli(db.url, 'doctor');
    expect(human.code).toBe(4);
    expect(human.stdout).toContain('2 violation(s)');
    expect(human.stdout).toContain(`run.status_mismatch  run ${workload.waiting}`);
    expect(human.stdout).toContain(`step.dependency_counters  run ${workload.waiting}  step ${steps.publish!.id} (publish)`);
    expect(human.stdout).toContain('expected {"status":"RUNNING"}');

    const json = await runCli(db.url, '--json', 'doctor', '--run', workload.waiting, workload.report);
    expect(json.code).toBe(4);
    const report = JSON.parse(json.stdout);
    expect(report.violations.map((v: { kind: string }) => v.kind).sort()).toEqual(['run.status_mismatch', 'step.dependency_counters']);
    expect(report.checked.runs).toBe(2);

    // Other runs are clean, and a bad option is a usage error (2), not a violation.
    expect((await runCli(db.url, 'doctor', '--run', workload.report)).code).toBe(0);
    expect((await runCli(db.url, 'doctor', '--page-size', '0')).code).toBe(2);
    expect((await runCli(db.url, 'doctor', '--run', 'not-a-uuid')).code).toBe(2);
  });
});
