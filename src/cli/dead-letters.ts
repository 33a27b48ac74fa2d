/**
 * `runledger jobs requeue-dead-letters`: the dashboard's bulk requeue from the
 * shell (src/replay/bulk-requeue.ts). `--dry-run` only counts; otherwise a
 * `--limit` and a `--reason` are required, so the cap and the audit text are
 * always the operator's own.
 */
import type { Command } from 'commander';
import { countDeadLetteredJobs, MAX_BULK_REQUEUE, requeueDeadLetteredJobs, type DeadLetterFilter } from '../replay/bulk-requeue.js';
import { UsageError, type CliContext } from './context.js';
import { integerOption, isoTimeOption, textOption } from './options.js';

interface Options {
  type?: string;
  errorCode?: string;
  after?: Date;
  before?: Date;
  limit?: number;
  reason?: string;
  resetState: boolean;
  dryRun: boolean;
}

/** Every option given is a condition (the parsers refused blank ones); only an option left out is no condition. */
function filterOf(options: Options): DeadLetterFilter {
  return {
    ...(options.type === undefined ? {} : { jobType: options.type }),
    ...(options.errorCode === undefined ? {} : { errorCode: options.errorCode }),
    ...(options.after === undefined ? {} : { finishedAfter: options.after }),
    ...(options.before === undefined ? {} : { finishedBefore: options.before }),
  };
}

export function registerDeadLetterCommands(jobs: Command, context: CliContext): void {
  jobs
    .command('requeue-dead-letters')
    .description(`start a new run of every DEAD_LETTERED direct job matching the filter, up to --limit (at most ${MAX_BULK_REQUEUE}), as one audited operation`)
    .option('--type <jobType>', 'only this job type', textOption)
    .option('--error-code <code>', 'only jobs whose last error has this code', textOption)
    .option('--after <time>', 'only jobs dead-lettered at or after this ISO 8601 time', isoTimeOption)
    .option('--before <time>', 'only jobs dead-lettered before this ISO 8601 time', isoTimeOption)
    .option('--limit <n>', `requeue at most this many (1 to ${MAX_BULK_REQUEUE})`, integerOption({ min: 1, max: MAX_BULK_REQUEUE }))
    .option('--reason <reason>', 'recorded on every requeued job', textOption)
    .option('--reset-state', 'clear progress and checkpoint (default: keep them)', false)
    .option('--dry-run', 'only count the matching dead letters', false)
    .action(async (options: Options) => {
      const db = context.db();
      const filter = filterOf(options);
      if (options.dryRun) {
        const preview = await countDeadLetteredJobs(db, { scope: context.scope, filter });
        context.print(`${preview.more ? 'More than ' : ''}${preview.count} dead-lettered job(s) match.`, preview);
        return;
      }
      if (options.limit === undefined) throw new UsageError('--limit is required (or --dry-run to count first).', { field: 'limit' });
      if (options.reason === undefined) throw new UsageError('--reason is required: it is recorded on every requeued job.', { field: 'reason' });
      const result = await requeueDeadLetteredJobs(db, {
        scope: context.scope,
        filter,
        limit: options.limit,
        reason: options.reason,
        statePolicy: options.resetState ? 'reset_progress_and_checkpoint' : 'preserve_progress_and_checkpoint',
      });
      context.print(
        `Requeued ${result.jobIds.length} job(s) as operation ${result.operationId}.${result.more ? ' More still match (the limit was reached).' : ''}`,
        result,
      );
    });
}
