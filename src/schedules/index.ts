/** Cron schedules: the public surface (docs/guide/schedules.md). */
export { upsertSchedule, deleteSchedule, findSchedule, getSchedule, listSchedules, pauseSchedule, resumeSchedule, type SchedulePage } from './crud.js';
export { runDueSchedules, runScheduleNow, slotIdempotencyKey, type RunDueSchedulesResult, type MaterialisedSlot, type FailedSchedule } from './run-due.js';
export type { Schedule, ScheduledWorkflow } from './rows.js';
export type { UpsertScheduleInput, ScheduleRef, SetScheduleEnabledInput, ListSchedulesInput, RunDueSchedulesInput } from './inputs.js';
export { declareSchedules, type DeclareSchedulesInput, type DeclareSchedulesResult } from './declare.js';
export { defineSchedule } from './define-schedule.js';
