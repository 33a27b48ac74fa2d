/**
 * Workflow schedules (a slot enqueues a whole run, exactly once per slot) and
 * failure isolation in runDueSchedules: one bad schedule is recorded and
 * skipped, the others of the same pass are materialised.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { getSchedule, listSchedules, runDueSchedules, runScheduleNow, upsertSchedule, workflow } from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier } from '../harness/workflow-helpers.js';
import { expectInvalid } from '../harness/errors.js';

const db = useTestDatabase();
const at = (iso: string) => new Date(iso);

// Each test's clock is later than the previous one's: earlier tests' schedules would fall due in its passes.
beforeEach(async () => {
  await db.prisma.$executeRaw`DELETE FROM runledger.job_schedules`;
});

const nightly = () =>
  workflow('etl.nightly', { source: 'warehouse' })
    .job('extract', 'etl.extract', { full: false })
    .job('load', 'etl.load', {})
    .afterSuccess('load', ['extract'])
    .resultStep('load')
    .build();

async function runsOf(key: string): Promise<{ id: string; idempotency_key: string; organization_id: string | null; steps: number }[]> {
  return db.prisma.$queryRaw`
    SELECT wr.id, wr.idempotency_key, wr.organization_id, (SELECT count(*)::int FROM runledger.workflow_steps ws WHERE ws.workflow_run_id = wr.id) AS steps
      FROM runledger.workflow_runs wr WHERE wr.idempotency_key LIKE ${`schedule:${key}:%`} ORDER BY wr.idempotency_key`;
}

describe('workflow schedules', () => {
  it('enqueues one run per slot with the slot key, in the schedule organization, and shows the target', async () => {
    const schedule = await upsertSchedule(db.prisma, {
      key: 'wf.nightly',
      cron: '0 2 * * *',
      workflow: nightly(),
      organizationId: 'org-wf',
      enabled: true,
      catchUp: { maxSlots: 3 },
      now: at('2027-01-01T00:00:00Z'),
    });
    expect(schedule).toMatchObject({ jobType: null, payload: null, workflow: { workflowType: 'etl.nightly' } });
    expect(schedule.workflow?.run.steps).toHaveLength(2);

    const pass = await runDueSchedules(db.prisma, { now: at('2027-01-03T02:00:00Z'), limit: 10 });
    expect(pass.failed).toEqual([]);
    expect(pass.jobs.map((j) => [j.slot.toISOString(), j.jobId, j.disposition])).toEqual([
      ['2027-01-01T02:00:00.000Z', null, 'inserted'],
      ['2027-01-02T02:00:00.000Z', null, 'inserted'],
      ['2027-01-03T02:00:00.000Z', null, 'inserted'],
    ]);
    const runs = await runsOf('wf.nightly');
    expect(runs.map((r) => [r.idempotency_key, r.organization_id, r.steps])).toEqual([
      ['schedule:wf.nightly:2027-01-01T02:00:00.000Z', 'org-wf', 2],
      ['schedule:wf.nightly:2027-01-02T02:00:00.000Z', 'org-wf', 2],
      ['schedule:wf.nightly:2027-01-03T02:00:00.000Z', 'org-wf', 2],
    ]);
    expect((await getSchedule(db.prisma, { key: 'wf.nightly' })).lastWorkflowRunId).toBe(runs[2]!.id);
    // run-now makes one more run, without a key.
    const now = await runScheduleNow(db.prisma, { key: 'wf.nightly' });
    expect(now.jobId).toBeNull();
    expect(now.workflowRunId).toEqual(expect.any(String));
  });

  it('makes each slot run exactly once across 4 concurrent schedulers', async () => {
    await upsertSchedule(db.prisma, {
      key: 'wf.race',
      cron: '* * * * *',
      workflow: nightly(),
      enabled: true,
      catchUp: { maxSlots: 1000 },
      now: at('2027-02-01T00:00:00Z'),
    });
    const ready = barrier(4);
    const passes = await Promise.all(
      Array.from({ length: 4 }, async () => {
        await ready();
        return runDueSchedules(db.prisma, { now: at('2027-02-01T01:40:00Z'), limit: 10 });
      }),
    );
    expect(passes.flatMap((p) => p.failed)).toEqual([]);
    expect(await runsOf('wf.race')).toHaveLength(100);
  });

  it('refuses a bad target, naming the field, and writes nothing', async () => {
    const base = { key: 'wf.bad', cron: '0 * * * *', enabled: true };
    await expectInvalid(upsertSchedule(db.prisma, { ...base }), 'schedule.invalid_input', 'jobType');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, jobType: 'x.job' }), 'schedule.invalid_input', 'payload');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, jobType: 'x.job', payload: {}, workflow: nightly() }), 'schedule.invalid_input', 'jobType');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, workflow: nightly(), payload: {} }), 'schedule.invalid_input', 'payload');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, workflow: nightly(), maxAttempts: 3 }), 'schedule.invalid_input', 'maxAttempts');
    await expectInvalid(
      upsertSchedule(db.prisma, { ...base, workflow: { ...nightly(), organizationId: 'o' } }),
      'schedule.invalid_input',
      'workflow.organizationId',
    );
    await expectInvalid(
      upsertSchedule(db.prisma, { ...base, workflow: { ...nightly(), idempotencyKey: 'k' } }),
      'schedule.invalid_input',
      'workflow.idempotencyKey',
    );
    const cyclic = {
      workflowType: 'w',
      steps: [
        { key: 'a', kind: 'job' as const, jobType: 't', payload: {}, dependsOn: [{ step: 'b' }] },
        { key: 'b', kind: 'job' as const, jobType: 't', payload: {}, dependsOn: [{ step: 'a' }] },
      ],
    };
    await expectInvalid(upsertSchedule(db.prisma, { ...base, workflow: cyclic }), 'schedule.invalid_input', 'workflow.steps.1.dependsOn');
    expect((await listSchedules(db.prisma, {})).items.map((s) => s.key)).not.toContain('wf.bad');
  });
});

describe('one bad schedule in a pass', () => {
  it('records the error on that schedule, skips its slot, and materialises the others; a later good slot clears it', async () => {
    const now = at('2027-03-01T00:00:00Z');
    for (const key of ['iso.a', 'iso.c', 'iso.e'])
      await upsertSchedule(db.prisma, { key, cron: '0 * * * *', jobType: 'iso.job', payload: { key }, enabled: true, now });
    await upsertSchedule(db.prisma, { key: 'iso.b', cron: '0 * * * *', jobType: 'iso.job', payload: {}, enabled: true, now });
    await upsertSchedule(db.prisma, { key: 'iso.d', cron: '0 * * * *', workflow: nightly(), enabled: true, now });
    // Break two schedules behind the API's back: b's job now violates a job_queue constraint (a blank organization),
    // d's stored workflow no longer validates (a step depending on a missing one).
    await db.prisma.$executeRaw`UPDATE runledger.job_schedules SET organization_id = '' WHERE schedule_key = 'iso.b'`;
    await db.prisma.$executeRaw`
      UPDATE runledger.job_schedules SET workflow_run = jsonb_set(workflow_run, '{steps,1,dependsOn,0,step}', '"missing"') WHERE schedule_key = 'iso.d'`;

    const pass = await runDueSchedules(db.prisma, { now: at('2027-03-01T01:00:00Z'), limit: 10 });
    expect(pass.schedules).toBe(5);
    expect(pass.jobs.map((j) => j.scheduleKey).sort()).toEqual(['iso.a', 'iso.c', 'iso.e']);
    expect(pass.failed.map((f) => [f.scheduleKey, f.code]).sort()).toEqual([
      ['iso.b', 'database.error'],
      ['iso.d', 'workflow.unknown_prerequisite'],
    ]);
    const b = await getSchedule(db.prisma, { key: 'iso.b' });
    expect(b.lastError).toMatchObject({ code: 'database.error', at: at('2027-03-01T01:00:00Z') });
    expect(b.lastError?.message).not.toMatch(/job_queue|constraint|INSERT/i);
    expect(b.lastSlotAt).toBeNull();
    // Its cursor moved on: a broken schedule cannot stay at the head of the due order.
    expect(b.nextRunAt).toEqual(at('2027-03-01T02:00:00Z'));
    expect((await getSchedule(db.prisma, { key: 'iso.d' })).lastError?.code).toBe('workflow.unknown_prerequisite');
    expect((await getSchedule(db.prisma, { key: 'iso.a' })).lastError).toBeNull();

    // Repaired, the next slot succeeds and clears the error.
    await db.prisma.$executeRaw`UPDATE runledger.job_schedules SET organization_id = NULL WHERE schedule_key = 'iso.b'`;
    const next = await runDueSchedules(db.prisma, { now: at('2027-03-01T02:00:00Z'), limit: 10 });
    expect(next.failed.map((f) => f.scheduleKey)).toEqual(['iso.d']);
    const repaired = await getSchedule(db.prisma, { key: 'iso.b' });
    expect(repaired.lastError).toBeNull();
    expect(repaired.lastSlotAt).toEqual(at('2027-03-01T02:00:00Z'));
  });

  it('keeps the pass inside a host transaction: the savepoints leave the good schedules in it', async () => {
    const now = at('2027-04-01T00:00:00Z');
    await upsertSchedule(db.prisma, { key: 'tx.good', cron: '0 * * * *', jobType: 'tx.job', payload: {}, enabled: true, now });
    await upsertSchedule(db.prisma, { key: 'tx.bad', cron: '0 * * * *', jobType: 'tx.job', payload: {}, enabled: true, now });
    await db.prisma.$executeRaw`UPDATE runledger.job_schedules SET organization_id = '' WHERE schedule_key = 'tx.bad'`;
    const pass = await db.prisma.$transaction((tx) => runDueSchedules(tx, { now: at('2027-04-01T01:00:00Z'), limit: 10 }));
    expect(pass.jobs.map((j) => j.scheduleKey)).toEqual(['tx.good']);
    expect(pass.failed.map((f) => f.scheduleKey)).toEqual(['tx.bad']);
    const [row] = await db.prisma.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM runledger.job_queue WHERE idempotency_key LIKE 'schedule:tx.good:%'`;
    expect(row!.n).toBe(1);
  });
});
