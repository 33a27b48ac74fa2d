/**
 * Schedules declared in worker options (`declareSchedules`) and with
 * `declareSchedules()`: written at start, idempotent, safe with workers
 * starting together, and pruned only when asked, only for their owner.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createWorker,
  declareSchedules,
  defineJob,
  defineSchedule,
  getSchedule,
  isRunledgerError,
  listSchedules,
  silentLogger,
  upsertSchedule,
  workflow,
} from '../../src/index.js';
import { useTestDatabase } from '../harness/database.js';
import { useWorkers } from '../harness/workers.js';
import { barrier } from '../harness/workflow-helpers.js';

const db = useTestDatabase();
const startWorker = useWorkers(db);

const digest = defineJob('digest.send', z.object({ audience: z.enum(['all', 'admins']) }), async () => undefined, { timeoutSeconds: 30 });
const T0 = new Date('2029-01-01T00:00:30Z');
const declared = [
  defineSchedule({ key: 'decl.digest', cron: '0 8 * * *', job: digest, payload: { audience: 'all' }, enabled: true, now: T0 }),
  defineSchedule({ key: 'decl.flow', cron: '*/10 * * * *', workflow: workflow('decl.flow').job('a', 'decl.step', {}).build(), enabled: true, now: T0 }),
];

async function keys(): Promise<string[]> {
  return (await listSchedules(db.prisma, { limit: 100 })).items.map((s) => s.key);
}

beforeEach(async () => {
  await db.prisma.$executeRaw`DELETE FROM runledger.job_schedules`;
});

describe('declared schedules', () => {
  it('four workers starting at once with the same declaration: no error, one row per schedule', async () => {
    const workers = await Promise.all(
      Array.from({ length: 4 }, () => startWorker({ handlers: [digest], schedules: false, declareSchedules: { owner: 'svc', schedules: declared } })),
    );
    expect(workers).toHaveLength(4);
    expect(await keys()).toEqual(['decl.digest', 'decl.flow']);
    const schedule = await getSchedule(db.prisma, { key: 'decl.digest' });
    // The definition's type and timeout; the declaring owner's tag.
    expect(schedule).toMatchObject({
      jobType: 'digest.send',
      payload: { audience: 'all' },
      timeoutSeconds: 30,
      declaredBy: 'svc',
      nextRunAt: new Date('2029-01-01T08:00:00Z'),
    });
  });

  it('concurrent declarations (barrier) of overlapping and pruning sets all succeed and leave the last one standing', async () => {
    const ready = barrier(4);
    const sets = [declared, declared.slice(0, 1), declared, declared.slice(1)];
    const results = await Promise.all(
      sets.map(async (schedules) => {
        await ready();
        return declareSchedules(db.prisma, { owner: 'svc', prune: true, schedules });
      }),
    );
    expect(results).toHaveLength(4);
    const left = await keys();
    // Serialised: whatever the order, the result is exactly one of the declared sets.
    expect(sets.map((s) => s.map((d) => d.key).sort())).toContainEqual(left);
  });

  it('re-declaring an unchanged schedule keeps its cursor', async () => {
    await declareSchedules(db.prisma, { schedules: declared });
    await db.prisma.$executeRaw`UPDATE runledger.job_schedules SET next_run_at = '2029-01-01T00:10:00Z' WHERE schedule_key = 'decl.flow'`;
    await declareSchedules(db.prisma, { schedules: declared });
    expect((await getSchedule(db.prisma, { key: 'decl.flow' })).nextRunAt).toEqual(new Date('2029-01-01T00:10:00Z'));
  });

  it("keeps schedules dropped from the declaration unless prune is set, and prunes only the owner's", async () => {
    await upsertSchedule(db.prisma, { key: 'decl.manual', cron: '0 * * * *', jobType: 'm.job', payload: {}, enabled: true });
    await declareSchedules(db.prisma, { owner: 'other', schedules: [{ key: 'decl.other', cron: '0 * * * *', jobType: 'o.job', payload: {}, enabled: true }] });
    await declareSchedules(db.prisma, { owner: 'svc', schedules: declared });

    await declareSchedules(db.prisma, { owner: 'svc', schedules: declared.slice(0, 1) });
    expect(await keys()).toEqual(['decl.digest', 'decl.flow', 'decl.manual', 'decl.other']);

    const result = await declareSchedules(db.prisma, { owner: 'svc', prune: true, schedules: declared.slice(0, 1) });
    expect(result.pruned).toEqual(['decl.flow']);
    expect(await keys()).toEqual(['decl.digest', 'decl.manual', 'decl.other']);
  });

  it('refuses prune without an owner, a key declared twice, and a bad schedule, at createWorker, naming the field', async () => {
    const fieldOf = (declareSchedules: unknown) => {
      try {
        createWorker({ db: db.prisma, handlers: [digest], logger: silentLogger, declareSchedules: declareSchedules as never });
      } catch (error) {
        expect(isRunledgerError(error, 'worker.invalid_options')).toBe(true);
        return (error as { field: string }).field;
      }
      return 'accepted';
    };
    expect(fieldOf({ prune: true, schedules: declared })).toBe('declareSchedules.owner');
    expect(fieldOf({ schedules: [declared[0], declared[0]] })).toBe('declareSchedules.schedules.1.key');
    expect(fieldOf({ schedules: [{ ...declared[0], cron: 'nope' }] })).toBe('declareSchedules.schedules.0.cron');
    expect(await keys()).toEqual([]);
  });

  it('types the payload of a schedule by its job definition', () => {
    // Refused by the compiler, and at run time by the definition's schema (for a JavaScript caller).
    // @ts-expect-error -- 'nobody' is not an audience of digest.send
    expect(() => defineSchedule({ key: 'decl.typed', cron: '0 8 * * *', job: digest, payload: { audience: 'nobody' }, enabled: true })).toThrow(
      expect.objectContaining({ code: 'schedule.invalid_input', field: 'payload.audience' }),
    );
    expect(defineSchedule({ key: 'decl.typed', cron: '0 8 * * *', job: digest, payload: { audience: 'admins' }, enabled: true })).toMatchObject({
      jobType: 'digest.send',
    });
  });
});
