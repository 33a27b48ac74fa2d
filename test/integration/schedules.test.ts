/** Cron schedules: definitions, validation, and exactly-once materialisation of due slots with an injected clock. */
import { describe, expect, it } from 'vitest';
import {
  deleteSchedule,
  getSchedule,
  isRunledgerError,
  listJobEvents,
  listSchedules,
  pauseSchedule,
  resumeSchedule,
  runDueSchedules,
  runScheduleNow,
  upsertSchedule,
  adminScope,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { barrier } from '../harness/workflow-helpers.js';
import { expectInvalid } from '../harness/errors.js';

const db = useTestDatabase();
const at = (iso: string) => new Date(iso);
const MINUTE = 60_000;

/** Jobs made by one schedule, in slot order: [slot ISO, job id]. */
async function scheduleJobs(key: string): Promise<{ idempotency_key: string; id: string; payload: unknown; organization_id: string | null }[]> {
  return db.prisma.$queryRaw`
    SELECT idempotency_key, id, payload, organization_id::text AS organization_id FROM runledger.job_queue
     WHERE idempotency_key LIKE ${`schedule:${key}:%`} ORDER BY idempotency_key`;
}

describe('schedule definitions', () => {
  it('creates a schedule whose cursor is the first slot after now, and keeps it when re-declared unchanged', async () => {
    const created = await upsertSchedule(db.prisma, {
      key: 'def.a',
      cron: '*/15 * * * *',
      jobType: 'def.job',
      payload: { n: 1 },
      enabled: true,
      now: at('2027-01-01T00:07:00Z'),
    });
    expect(created).toMatchObject({
      key: 'def.a',
      timezone: 'UTC',
      enabled: true,
      priority: 0,
      maxAttempts: 5,
      timeoutSeconds: 300,
      catchUp: { maxSlots: 1 },
      nextRunAt: at('2027-01-01T00:15:00Z'),
    });
    const again = await upsertSchedule(db.prisma, {
      key: 'def.a',
      cron: '*/15 * * * *',
      jobType: 'def.job',
      payload: { n: 2 },
      enabled: true,
      now: at('2027-01-01T05:00:00Z'),
    });
    expect(again).toMatchObject({ id: created.id, payload: { n: 2 }, nextRunAt: at('2027-01-01T00:15:00Z') });
    const changed = await upsertSchedule(db.prisma, {
      key: 'def.a',
      cron: '0 * * * *',
      jobType: 'def.job',
      payload: {},
      enabled: true,
      now: at('2027-01-01T05:00:00Z'),
    });
    expect(changed.nextRunAt).toEqual(at('2027-01-01T06:00:00Z'));
    expect(await getSchedule(db.prisma, { key: 'def.a' })).toEqual(changed);
  });

  it('refuses a bad cron expression, timezone or field, naming it, and writes nothing', async () => {
    const base = { key: 'def.bad', cron: '0 * * * *', jobType: 'def.job', payload: {}, enabled: true };
    await expectInvalid(upsertSchedule(db.prisma, { ...base, cron: 'every minute' }), 'schedule.invalid_input', 'cron');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, cron: '61 * * * *' }), 'schedule.invalid_input', 'cron');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, cron: '0 0 30 2 *' }), 'schedule.invalid_input', 'cron');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, timezone: 'Mars/Olympus' }), 'schedule.invalid_input', 'timezone');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, jobType: ' ' }), 'schedule.invalid_input', 'jobType');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, key: 'é'.repeat(101) }), 'schedule.invalid_input', 'key');
    await expectInvalid(upsertSchedule(db.prisma, { ...base, catchUp: { maxSlots: 0 } }), 'schedule.invalid_input', 'catchUp.maxSlots');
    await expectInvalid(runDueSchedules(db.prisma, { limit: 0 }), 'schedule.invalid_input', 'limit');
    const error = await getSchedule(db.prisma, { key: 'def.bad' }).catch((e: unknown) => e);
    expect(isRunledgerError(error, 'schedule.not_found')).toBe(true);
  });

  it('lists schedules in key order a page at a time, and deletes one', async () => {
    for (const key of ['list.c', 'list.a', 'list.b']) {
      await upsertSchedule(db.prisma, { key, cron: '0 0 * * *', jobType: 'list.job', payload: {}, enabled: key !== 'list.b' });
    }
    const first = await listSchedules(db.prisma, { jobType: 'list.job', limit: 2 });
    expect(first.items.map((s) => s.key)).toEqual(['list.a', 'list.b']);
    const second = await listSchedules(db.prisma, { jobType: 'list.job', limit: 2, cursor: first.nextCursor! });
    expect(second).toMatchObject({ nextCursor: null });
    expect(second.items.map((s) => s.key)).toEqual(['list.c']);
    expect((await listSchedules(db.prisma, { jobType: 'list.job', enabled: false })).items.map((s) => s.key)).toEqual(['list.b']);
    expect(await deleteSchedule(db.prisma, { key: 'list.c' })).toBe(true);
    expect(await deleteSchedule(db.prisma, { key: 'list.c' })).toBe(false);
  });
});

describe('materialising due slots', () => {
  it('makes one job per slot with the schedule settings, recording schedule and slot on the ENQUEUED event', async () => {
    const org = '0190a0b0-0000-7000-8000-000000000001';
    await upsertSchedule(db.prisma, {
      key: 'due.settings',
      cron: '0 * * * *',
      jobType: 'due.job',
      payload: { report: 'x' },
      organizationId: org,
      enabled: true,
      priority: 7,
      maxAttempts: 2,
      timeoutSeconds: 9,
      resource: 'due-resource',
      now: at('2027-02-01T00:30:00Z'),
    });
    const early = await runDueSchedules(db.prisma, { now: at('2027-02-01T00:59:59Z'), limit: 10 });
    expect(early.jobs.filter((j) => j.scheduleKey === 'due.settings')).toEqual([]);
    const result = await runDueSchedules(db.prisma, { now: at('2027-02-01T01:00:00Z'), limit: 10 });
    const [made] = result.jobs.filter((j) => j.scheduleKey === 'due.settings');
    expect(made).toMatchObject({ slot: at('2027-02-01T01:00:00Z'), disposition: 'inserted' });
    const [job] = await db.prisma.$queryRaw<Record<string, unknown>[]>`
      SELECT job_type, organization_id::text AS organization_id, payload, priority, max_attempts, timeout_seconds, resource_key, status, idempotency_key
        FROM runledger.job_queue WHERE id = ${made!.jobId}::uuid`;
    expect(job).toEqual({
      job_type: 'due.job',
      organization_id: org,
      payload: { report: 'x' },
      priority: 7,
      max_attempts: 2,
      timeout_seconds: 9,
      resource_key: 'due-resource',
      status: 'PENDING',
      idempotency_key: 'schedule:due.settings:2027-02-01T01:00:00.000Z',
    });
    const { items: events } = await listJobEvents(db.prisma, { scope: adminScope(), jobId: made!.jobId! });
    expect(events[0]).toMatchObject({
      eventType: 'ENQUEUED',
      payload: { schedule: { key: 'due.settings', trigger: 'slot', slot: '2027-02-01T01:00:00.000Z' } },
    });
    expect(await getSchedule(db.prisma, { key: 'due.settings' })).toMatchObject({
      nextRunAt: at('2027-02-01T02:00:00Z'),
      lastSlotAt: at('2027-02-01T01:00:00Z'),
      lastJobId: made!.jobId,
    });
  });

  it('four concurrent schedulers over 100 slots make exactly 100 jobs, each slot once', async () => {
    const start = at('2027-03-01T00:00:30Z');
    const keys = ['race.a', 'race.b', 'race.c', 'race.d'];
    for (const key of keys) await upsertSchedule(db.prisma, { key, cron: '* * * * *', jobType: 'race.job', payload: { key }, enabled: true, now: start });
    // Four schedulers, each with its own connection pool, so their transactions really overlap.
    const schedulers = [0, 1, 2, 3].map(() => db.newClient({ max: 2 }));
    const ticks = 25; // 4 schedules x 25 one-minute slots = 100 slots
    const results = [];
    for (let tick = 1; tick <= ticks; tick += 1) {
      const now = new Date(start.getTime() + tick * MINUTE);
      const arrive = barrier(schedulers.length);
      results.push(
        ...(await Promise.all(
          schedulers.map(async (client) => {
            await arrive();
            return runDueSchedules(client, { now, limit: 2 });
          }),
        )),
      );
    }
    const made = results.flatMap((r) => r.jobs).filter((j) => keys.includes(j.scheduleKey));
    expect(made.every((j) => j.disposition === 'inserted')).toBe(true);
    expect(made).toHaveLength(100);
    const rows = (await Promise.all(keys.map(scheduleJobs))).flat();
    expect(rows).toHaveLength(100);
    expect(new Set(rows.map((r) => r.idempotency_key)).size).toBe(100);
    for (const key of keys) {
      const slots = (await scheduleJobs(key)).map((r) => r.idempotency_key);
      expect(slots).toEqual(
        Array.from({ length: ticks }, (_, i) => `schedule:${key}:${new Date(at('2027-03-01T00:01:00Z').getTime() + i * MINUTE).toISOString()}`),
      );
    }
    // A pass takes at most 2 schedules, so every tick's 4 slots were shared by at least two schedulers.
    for (let tick = 0; tick < ticks; tick += 1) {
      const passes = results.slice(tick * 4, tick * 4 + 4);
      expect(passes.filter((r) => r.jobs.some((j) => keys.includes(j.scheduleKey))).length).toBeGreaterThanOrEqual(2);
    }
  });

  it('after downtime runs only the latest missed slot by default, and the latest N with catchUp', async () => {
    await upsertSchedule(db.prisma, {
      key: 'miss.default',
      cron: '0 * * * *',
      jobType: 'miss.job',
      payload: {},
      enabled: true,
      now: at('2027-04-01T00:30:00Z'),
    });
    await upsertSchedule(db.prisma, {
      key: 'miss.catchup',
      cron: '0 * * * *',
      jobType: 'miss.job',
      payload: {},
      enabled: true,
      catchUp: { maxSlots: 3 },
      now: at('2027-04-01T00:30:00Z'),
    });
    await upsertSchedule(db.prisma, {
      key: 'miss.short',
      cron: '0 * * * *',
      jobType: 'miss.job',
      payload: {},
      enabled: true,
      catchUp: { maxSlots: 50 },
      now: at('2027-04-01T00:30:00Z'),
    });
    // Down from 00:30 to 10:20: slots 01:00 .. 10:00 (ten of them) were missed.
    await runDueSchedules(db.prisma, { now: at('2027-04-01T10:20:00Z'), limit: 10 });
    const slotsOf = async (key: string) => (await scheduleJobs(key)).map((r) => r.idempotency_key.slice(`schedule:${key}:`.length));
    expect(await slotsOf('miss.default')).toEqual(['2027-04-01T10:00:00.000Z']);
    expect(await slotsOf('miss.catchup')).toEqual(['2027-04-01T08:00:00.000Z', '2027-04-01T09:00:00.000Z', '2027-04-01T10:00:00.000Z']);
    expect(await slotsOf('miss.short')).toHaveLength(10);
    for (const key of ['miss.default', 'miss.catchup', 'miss.short'])
      expect((await getSchedule(db.prisma, { key })).nextRunAt).toEqual(at('2027-04-01T11:00:00Z'));
  });

  it('a disabled schedule makes no job; resuming skips the slots that fell while it was paused', async () => {
    await upsertSchedule(db.prisma, { key: 'pause.a', cron: '0 * * * *', jobType: 'pause.job', payload: {}, enabled: false, now: at('2027-05-01T00:30:00Z') });
    await runDueSchedules(db.prisma, { now: at('2027-05-01T03:00:00Z'), limit: 10 });
    expect(await scheduleJobs('pause.a')).toEqual([]);
    const resumed = await resumeSchedule(db.prisma, { key: 'pause.a', now: at('2027-05-01T03:10:00Z') });
    expect(resumed).toMatchObject({ enabled: true, nextRunAt: at('2027-05-01T04:00:00Z') });
    await runDueSchedules(db.prisma, { now: at('2027-05-01T04:00:00Z'), limit: 10 });
    expect((await scheduleJobs('pause.a')).map((r) => r.idempotency_key)).toEqual(['schedule:pause.a:2027-05-01T04:00:00.000Z']);
    expect(await pauseSchedule(db.prisma, { key: 'pause.a' })).toMatchObject({ enabled: false, nextRunAt: at('2027-05-01T05:00:00Z') });
    await runDueSchedules(db.prisma, { now: at('2027-05-01T06:00:00Z'), limit: 10 });
    expect(await scheduleJobs('pause.a')).toHaveLength(1);
    const missing = await pauseSchedule(db.prisma, { key: 'pause.none' }).catch((e: unknown) => e);
    expect(isRunledgerError(missing, 'schedule.not_found')).toBe(true);
  });

  it('Europe/Berlin daily 02:30 runs once on the spring-forward day (at 03:00 local) and once on the fall-back day', async () => {
    await upsertSchedule(db.prisma, {
      key: 'tz.berlin',
      cron: '30 2 * * *',
      timezone: 'Europe/Berlin',
      jobType: 'tz.job',
      payload: {},
      enabled: true,
      now: at('2027-03-26T12:00:00Z'),
    });
    // Spring forward: 2027-03-28, 02:00 CET -> 03:00 CEST; 02:30 does not exist that day.
    const hourly = (from: string, hours: number) => Array.from({ length: hours }, (_, i) => new Date(at(from).getTime() + (i + 1) * 60 * MINUTE));
    for (const now of hourly('2027-03-26T12:00:00Z', 72)) await runDueSchedules(db.prisma, { now, limit: 10 });
    // Fall back: 2027-10-31, 03:00 CEST -> 02:00 CET; 02:30 happens twice that day.
    await upsertSchedule(db.prisma, { key: 'tz.berlin', cron: '30 2 * * *', timezone: 'Europe/Berlin', jobType: 'tz.job', payload: {}, enabled: false });
    await resumeSchedule(db.prisma, { key: 'tz.berlin', now: at('2027-10-29T12:00:00Z') });
    for (const now of hourly('2027-10-29T12:00:00Z', 72)) await runDueSchedules(db.prisma, { now, limit: 10 });
    expect((await scheduleJobs('tz.berlin')).map((r) => r.idempotency_key.slice('schedule:tz.berlin:'.length))).toEqual([
      '2027-03-27T01:30:00.000Z', // 02:30 CET
      '2027-03-28T01:00:00.000Z', // 03:00 CEST: the first valid time after the gap
      '2027-03-29T00:30:00.000Z', // 02:30 CEST
      '2027-10-30T00:30:00.000Z', // 02:30 CEST
      '2027-10-31T00:30:00.000Z', // the first 02:30 (CEST) only
      '2027-11-01T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('run-now enqueues a job without moving the cursor; a clock moved back cannot repeat a slot', async () => {
    await upsertSchedule(db.prisma, { key: 'now.a', cron: '0 * * * *', jobType: 'now.job', payload: { x: 1 }, enabled: true, now: at('2027-06-01T00:30:00Z') });
    const { jobId } = await runScheduleNow(db.prisma, { key: 'now.a' });
    const { items: events } = await listJobEvents(db.prisma, { scope: adminScope(), jobId: jobId! });
    expect(events[0]?.payload).toEqual({ schedule: { key: 'now.a', trigger: 'manual' } });
    expect((await getSchedule(db.prisma, { key: 'now.a' })).nextRunAt).toEqual(at('2027-06-01T01:00:00Z'));
    const first = await runDueSchedules(db.prisma, { now: at('2027-06-01T01:00:00Z'), limit: 10 });
    // Force the cursor back onto the slot just materialised (as a clock moved back would): the key holds.
    await db.prisma.$executeRaw`UPDATE runledger.job_schedules SET next_run_at = '2027-06-01T01:00:00Z' WHERE schedule_key = 'now.a'`;
    const second = await runDueSchedules(db.prisma, { now: at('2027-06-01T01:00:00Z'), limit: 10 });
    const mine = (r: typeof first) => r.jobs.filter((j) => j.scheduleKey === 'now.a');
    expect(mine(second)).toEqual([{ ...mine(first)[0], disposition: 'existing' }]);
    expect(await scheduleJobs('now.a')).toHaveLength(1);
    const missing = await runScheduleNow(db.prisma, { key: 'now.none' }).catch((e: unknown) => e);
    expect(isRunledgerError(missing, 'schedule.not_found')).toBe(true);
  });

  it('refuses a joined transaction that is not READ COMMITTED before writing anything', async () => {
    const error = await db.prisma
      .$transaction((tx) => runDueSchedules(tx, { now: at('2030-01-01T00:00:00Z'), limit: 10 }), { isolationLevel: 'RepeatableRead' })
      .catch((e: unknown) => e);
    expect(isRunledgerError(error, 'schedule.unsupported_isolation')).toBe(true);
  });
});
