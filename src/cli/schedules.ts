/**
 * `runledger schedules list|run-now|pause|resume`: operate cron schedules.
 * Schedules are keyed globally (a schedule may make jobs for one
 * organization, but its key is not inside one), so --org and --without-org, which
 * would be silently ignored, are refused.
 */
import type { Command } from 'commander';
import { listSchedules, pauseSchedule, resumeSchedule } from '../schedules/crud.js';
import { runScheduleNow } from '../schedules/run-due.js';
import type { Schedule } from '../schedules/rows.js';
import { MAX_SCHEDULE_LIST_LIMIT } from '../schedules/inputs.js';
import { UsageError, type CliContext } from './context.js';
import { table } from './format.js';
import { integerOption, textOption } from './options.js';

function refuseScope(context: CliContext): void {
  const scope = context.scope;
  if (scope.kind !== 'admin') {
    throw new UsageError('schedules are not per organization; --org and --without-org do not apply.', {
      code: 'cli.scope_not_supported',
      field: scope.kind === 'no_organization' ? '--without-org' : '--org',
    });
  }
}

/** `job <type>` or `workflow <type>`: what each slot enqueues. */
function target(s: Schedule): string {
  return s.workflow ? `workflow ${s.workflow.workflowType}` : `job ${s.jobType ?? '?'}`;
}

function formatSchedules(schedules: readonly Schedule[]): string {
  if (schedules.length === 0) return 'No schedules.';
  return table([
    ['KEY', 'CRON', 'TIMEZONE', 'TARGET', 'ENABLED', 'NEXT RUN', 'LAST SLOT', 'LAST ERROR'],
    ...schedules.map((s) => [
      s.key,
      s.cron,
      s.timezone,
      target(s),
      s.enabled ? 'yes' : 'no',
      s.nextRunAt.toISOString(),
      s.lastSlotAt?.toISOString() ?? '-',
      s.lastError?.code ?? '-',
    ]),
  ]);
}

export function registerScheduleCommands(program: Command, context: CliContext): void {
  const schedules = program.command('schedules').description('list cron schedules, run one now, pause or resume one');
  schedules
    .command('list')
    .description('list schedules in key order')
    .option('--limit <n>', `schedules per page (1-${MAX_SCHEDULE_LIST_LIMIT}, default 50)`, integerOption({ min: 1, max: MAX_SCHEDULE_LIST_LIMIT }))
    .option('--cursor <key>', "the previous page's nextCursor (its last key)", textOption)
    .action(async (options: { limit?: number; cursor?: string }) => {
      refuseScope(context);
      const page = await listSchedules(context.db(), {
        ...(options.limit === undefined ? {} : { limit: options.limit }),
        ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      });
      const more = page.nextCursor ? `\nMore: --cursor ${page.nextCursor}` : '';
      context.print(`${formatSchedules(page.items)}${more}`, page);
    });
  schedules
    .command('run-now <key>')
    .description("enqueue the schedule's job or workflow run now (its next slot still runs)")
    .action(async (key: string) => {
      refuseScope(context);
      const result = await runScheduleNow(context.db(), { key });
      const made = result.workflowRunId ? `workflow run ${result.workflowRunId}` : `job ${result.jobId}`;
      context.print(`Enqueued ${made} from schedule ${key}.`, { key, ...result });
    });
  schedules
    .command('pause <key>')
    .description('stop the schedule from making jobs')
    .action(async (key: string) => {
      refuseScope(context);
      const schedule = await pauseSchedule(context.db(), { key });
      context.print(`Schedule ${key} paused.`, schedule);
    });
  schedules
    .command('resume <key>')
    .description('enable the schedule again from its next slot (slots missed while paused do not run)')
    .action(async (key: string) => {
      refuseScope(context);
      const schedule = await resumeSchedule(context.db(), { key });
      context.print(`Schedule ${key} resumed; next run ${schedule.nextRunAt.toISOString()}.`, schedule);
    });
}
