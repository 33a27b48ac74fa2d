/**
 * `runledger purge --older-than 30d [--dry-run]`: retention from the command
 * line (src/retention/purge.ts). Acts on every organization, like the
 * workers that made the rows, so --org and --without-org are refused.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { purgeFinished } from '../retention/purge.js';
import { MAX_PURGE_BATCH, PURGEABLE_JOB_STATUSES, type PurgeableJobStatus } from '../retention/inputs.js';
import { UsageError, type CliContext } from './context.js';
import { integerOption } from './options.js';

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30d`, `12h`, `90m`, `2w`: a plain positive integer and one unit. */
export function parseAge(value: string): number {
  const match = /^([1-9][0-9]{0,6})([mhdw])$/.exec(value);
  if (!match) throw new InvalidArgumentError('Expected an age such as 30d, 12h, 90m or 2w.');
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

function parseStatuses(value: string): PurgeableJobStatus[] {
  const statuses = value.split(',').map((s) => s.trim().toUpperCase());
  const bad = statuses.find((s) => !(PURGEABLE_JOB_STATUSES as readonly string[]).includes(s));
  if (bad !== undefined) throw new InvalidArgumentError(`Expected a comma-separated list of ${PURGEABLE_JOB_STATUSES.join(', ')}.`);
  return statuses as PurgeableJobStatus[];
}

export function registerPurgeCommand(program: Command, context: CliContext): void {
  program
    .command('purge')
    .description('delete finished jobs and workflow runs older than an age, in small batches (replay lineages whole)')
    .requiredOption('--older-than <age>', 'finished longer ago than this: 30d, 12h, 90m, 2w', parseAge)
    .option('--statuses <list>', `direct job statuses to purge (default ${PURGEABLE_JOB_STATUSES.join(',')})`, parseStatuses)
    .option('--batch-size <n>', `rows per transaction (1-${MAX_PURGE_BATCH}, default 500)`, integerOption({ min: 1, max: MAX_PURGE_BATCH }))
    .option('--dry-run', 'count what would be deleted; delete nothing', false)
    .action(async (options: { olderThan: number; statuses?: PurgeableJobStatus[]; batchSize?: number; dryRun: boolean }) => {
      const scope = context.scope;
      if (scope.kind !== 'admin') {
        throw new UsageError('purge acts on every organization; --org and --without-org do not apply.', {
          code: 'cli.scope_not_supported',
          field: scope.kind === 'no_organization' ? '--without-org' : '--org',
        });
      }
      const olderThan = new Date(Date.now() - options.olderThan);
      const result = await purgeFinished(context.db(), {
        olderThan,
        dryRun: options.dryRun,
        ...(options.statuses === undefined ? {} : { statuses: options.statuses }),
        ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
      });
      const verb = result.dryRun ? 'Would delete' : 'Deleted';
      context.print(
        `${verb} ${result.jobs} job(s) and ${result.workflowRuns} workflow run(s) (${result.workflowJobs} step job(s)) finished before ${olderThan.toISOString()}.`,
        { ...result, olderThan: olderThan.toISOString() },
      );
    });
}
