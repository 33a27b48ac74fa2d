/** `runledger jobs ...`: show, replay a succeeded job, requeue a dead-lettered or canceled one. */
import type { Command } from 'commander';
import { getJob, listJobEvents } from '../queue/reads.js';
import { compareAndReplaySucceededJob } from '../replay/replay.js';
import { compareAndRequeueJob } from '../replay/requeue.js';
import { UsageError, type CliContext } from './context.js';
import { table } from './format.js';
import { integerOption } from './options.js';

const runNumber = integerOption({ min: 1 });

export function registerJobCommands(program: Command, context: CliContext): void {
  const jobs = program.command('jobs').description('inspect, replay and requeue jobs');
  jobs
    .command('show <jobId>')
    .description('show a job and its event history')
    .action(async (jobId: string) => {
      const db = context.db();
      const job = await getJob(db, context.scope, jobId);
      const events = await listJobEvents(db, context.scope, jobId);
      const human = [
        `Job ${job.id}  ${job.jobType}  ${job.status}  run ${job.runNumber}  attempt ${job.attempt}/${job.maxAttempts}`,
        job.lastErrorCode ? `  last error: ${job.lastErrorCode}: ${job.lastErrorMessage ?? ''}` : '',
        '',
        table([['AT', 'EVENT', 'RUN', 'ATTEMPT'], ...events.map((e) => [e.createdAt.toISOString(), e.eventType, String(e.runNumber), String(e.attempt)])]),
      ]
        .filter((line, index) => line !== '' || index === 2)
        .join('\n');
      context.print(human, { job, events });
    });
  jobs
    .command('replay <jobId>')
    .description('run a SUCCEEDED job again as a new job (idempotent per --key)')
    .requiredOption('--key <replayRequestKey>', 'identity of this replay action: retrying with the same key returns the same replay')
    .requiredOption('--reason <reason>', 'why it is replayed (recorded in the lineage)')
    .option('--run <n>', 'the run you expect to replay (default: the current run)', runNumber)
    .action(async (jobId: string, options: { key: string; reason: string; run?: number }) => {
      const db = context.db();
      const expectedRunNumber = options.run ?? (await getJob(db, context.scope, jobId)).runNumber;
      const result = await compareAndReplaySucceededJob(db, { scope: context.scope, sourceJobId: jobId, expectedRunNumber, replayRequestKey: options.key, reason: options.reason });
      if (result.kind === 'replayed') {
        context.print(`Replay ${result.replay.jobId} (${result.replay.disposition}) of job ${result.sourceJobId} run ${result.sourceRunNumber}.`, result);
        return;
      }
      context.print(result.kind === 'not_found' ? `No job ${jobId}.` : `Job ${jobId} is ${result.actual.status} in run ${result.actual.runNumber}; not replayed.`, result);
      process.exitCode = result.kind === 'not_found' ? 3 : 4;
    });
  jobs
    .command('requeue <jobId>')
    .description('start a new run of a DEAD_LETTERED or CANCELED job')
    .option('--reset-state', 'clear progress and checkpoint (default: keep them)', false)
    .option('--run <n>', 'the run you expect to requeue (default: the current run)', runNumber)
    .action(async (jobId: string, options: { resetState: boolean; run?: number }) => {
      const db = context.db();
      const current = await getJob(db, context.scope, jobId);
      if (current.status !== 'DEAD_LETTERED' && current.status !== 'CANCELED') {
        throw new UsageError(`Job ${jobId} is ${current.status}; only DEAD_LETTERED or CANCELED jobs can be requeued.`, { code: 'cli.requeue_status', field: 'jobId' });
      }
      const result = await compareAndRequeueJob(db, {
        scope: context.scope,
        jobId,
        expectedStatus: current.status,
        expectedRunNumber: options.run ?? current.runNumber,
        statePolicy: options.resetState ? 'reset_progress_and_checkpoint' : 'preserve_progress_and_checkpoint',
      });
      const human =
        result.kind === 'requeued'
          ? `Job ${jobId} requeued as run ${result.job.runNumber}.`
          : result.kind === 'cancellation_not_quiesced'
            ? `Job ${jobId} was canceled while running; its handler may still run until ${result.retryAfter.toISOString()}. Retry after that.`
            : result.kind === 'not_found'
              ? `No job ${jobId}.`
              : `Job ${jobId} changed (now ${result.actual.status}, run ${result.actual.runNumber}); not requeued.`;
      context.print(human, result);
      if (result.kind !== 'requeued') process.exitCode = result.kind === 'not_found' ? 3 : 4;
    });
}
