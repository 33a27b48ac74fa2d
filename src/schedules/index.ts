/** Cron schedules: the public surface (see README "Cron schedules"). */
export { upsertSchedule, deleteSchedule, findSchedule, getSchedule, listSchedules, pauseSchedule, resumeSchedule, type SchedulePage } from './crud.js';
export { runDueSchedules, runScheduleNow, slotIdempotencyKey, type RunDueSchedulesResult, type MaterialisedSlot } from './run-due.js';
export type { Schedule } from './rows.js';
export type { UpsertScheduleInput, ScheduleRef, SetScheduleEnabledInput, ListSchedulesInput, RunDueSchedulesInput } from './schemas.js';
