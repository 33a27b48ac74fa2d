import { upsertSchedule, listSchedules, pauseSchedule, resumeSchedule, runScheduleNow, deleteSchedule, type PrismaClientLike } from 'runledger';

export async function nightlyReport(prisma: PrismaClientLike) {
  await upsertSchedule(prisma, {
    key: 'nightly-report',
    cron: '30 2 * * *', // 5 fields, or 6 with leading seconds; @daily etc.
    timezone: 'Europe/Berlin', // IANA name; default 'UTC'
    jobType: 'report.build',
    payload: { kind: 'daily' },
    enabled: true,
    // optional: organizationId, priority, maxAttempts, timeoutSeconds, resource,
    catchUp: { maxSlots: 3 }, // after downtime, run the latest 3 missed slots (default 1)
  });
  const { items, nextCursor } = await listSchedules(prisma, { limit: 50 }); // key order; pass nextCursor as `cursor`
  await pauseSchedule(prisma, { key: 'nightly-report' });
  await resumeSchedule(prisma, { key: 'nightly-report' }); // from the next slot; slots missed while paused do not run
  await runScheduleNow(prisma, { key: 'nightly-report' }); // one extra job now; the next slot still runs
  await deleteSchedule(prisma, { key: 'nightly-report' });
  return { items, nextCursor };
}
