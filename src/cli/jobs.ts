/** `runledger jobs ...`: list, show, cancel, replay a succeeded job, requeue a dead-lettered or canceled one. */
import type { Command } from 'commander';
import { cancelJob } from '../queue/cancel.js';
import { listJobAttempts } from '../queue/attempts.js';
import { getJob, listJobEvents, listJobs } from '../queue/reads.js';
import type { JobStatus } from '../model/job-rows.js';
import { compareAndReplaySucceededJob } from '../replay/replay.js';
import { compareAndRequeueJob } from '../replay/requeue.js';
import { UsageError, type CliContext } from './context.js';
import { registerDeadLetterCommands } from './dead-letters.js';
import { formatJobList, formatProgress, table } from './format.js';
import { integerOption, textOption } from './options.js';
import { allItems } from './pages.js';

const runNumber = integerOption({ min: 1 });

export function registerJobCommands(program: Command, context: CliContext): void {
  const jobs = program.command('jobs').description('list, inspect, cancel, replay and requeue jobs');
  jobs
    .command('list')
    .description('list jobs, newest first (--org / --without-org for one organization or none)')
    .option('--type <jobType>', 'only this job type', textOption)
    .option('--status <status...>', 'only these statuses (PENDING, LEASED, SUCCEEDED, DEAD_LETTERED, CANCELED; LEASED includes RUNNING)')
    .option('--limit <n>', 'page size (1 to 500)', integerOption({ min: 1, max: 500 }), 20)
    .option('--cursor <cursor>', 'the cursor printed after the previous page', textOption)
    .action(async (options: { type?: string; status?: JobStatus[]; limit: number; cursor?: string }) => {
      const page = await listJobs(context.db(), {
        scope: context.scope,
        limit: options.limit,
        ...(options.type === undefined ? {} : { jobType: options.type }),
        ...(options.status === undefined ? {} : { status: options.status }),
        ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      });
      context.print(`${formatJobList(page.items)}${page.nextCursor ? `\n\nmore: --cursor ${page.nextCursor}` : ''}`, page);
    });
  jobs
    .command('cancel <jobId>')
    .description('cancel a PENDING or LEASED job (a running handler keeps its lease until it expires)')
    .option('--reason <reason>', 'recorded on the job', textOption)
    .action(async (jobId: string, options: { reason?: string }) => {
      const job = await cancelJob(context.db(), { jobId, scope: context.scope, ...(options.reason === undefined ? {} : { reason: options.reason }) });
      context.print(`Job ${job.id} is ${job.status}.`, job);
    });
  jobs
    .command('show <jobId>')
    .description('show a job, its event history and its attempts')
    .action(async (jobId: string) => {
      const db = context.db();
      const ref = { scope: context.scope, jobId };
      const job = await getJob(db, ref);
      const events = await allItems((paging) => listJobEvents(db, { ...ref, ...paging }));
      const attempts = await allItems((paging) => listJobAttempts(db, { ...ref, ...paging }));
      const header = [
        `Job ${job.id}  ${job.jobType}  ${job.state}  run ${job.runNumber}  attempt ${job.attempt}/${job.maxAttempts}${job.stage ? `  stage ${job.stage}` : ''}${formatProgress(job.progress)}`,
        `  organization: ${job.organizationId ?? '(none)'}  next run: ${job.nextRunAt.toISOString()}`,
        job.lastErrorCode ? `  last error: ${job.lastErrorCode}: ${job.lastErrorMessage ?? ''}` : '',
        // Why a PENDING job waits: the debounce or throttle window it is the job of (key quoted: it is the host's text).
        job.enqueueWindow
          ? `  ${job.enqueueWindow.kind} key: ${JSON.stringify(job.enqueueWindow.key)}${job.enqueueWindow.closesAt ? `  ${job.enqueueWindow.kind === 'debounce' ? 'runs by' : 'window ends'}: ${job.enqueueWindow.closesAt.toISOString()}` : ''}`
          : '',
        jsonLine('payload', job.payload),
        job.checkpoint === null ? '' : jsonLine('checkpoint', job.checkpoint),
        job.output === null ? '' : jsonLine('output', job.output),
      ].filter((line) => line !== '');
      const human = [
        ...header,
        '',
        table([['AT', 'EVENT', 'RUN', 'ATTEMPT'], ...events.map((e) => [e.createdAt.toISOString(), e.eventType, String(e.runNumber), String(e.attempt)])]),
        '',
        attempts.length === 0
          ? 'No attempts.'
          : table([
              ['STARTED', 'FINISHED', 'RUN', 'ATTEMPT', 'WORKER', 'OUTCOME', 'ERROR', 'NEXT RUN'],
              ...attempts.map((a) => [
                a.startedAt.toISOString(),
                a.finishedAt?.toISOString() ?? '-',
                String(a.runNumber),
                String(a.attempt),
                a.workerId,
                a.outcome ?? 'RUNNING',
                a.errorCode ?? '-',
                a.nextRunAt ? `${a.nextRunAt.toISOString()}${a.retryDelaySource ? ` (${a.retryDelaySource})` : ''}` : '-',
              ]),
            ]),
      ].join('\n');
      context.print(human, { job, events, attempts });
    });
  jobs
    .command('replay <jobId>')
    .description('run a SUCCEEDED job again as a new job (idempotent per --key)')
    .requiredOption('--key <replayRequestKey>', 'identity of this replay action: retrying with the same key returns the same replay', textOption)
    .requiredOption('--reason <reason>', 'why it is replayed (recorded in the lineage)', textOption)
    .option('--run <n>', 'the run you expect to replay (default: the current run)', runNumber)
    .action(async (jobId: string, options: { key: string; reason: string; run?: number }) => {
      const db = context.db();
      const expectedRunNumber = options.run ?? (await getJob(db, { scope: context.scope, jobId })).runNumber;
      const result = await compareAndReplaySucceededJob(db, {
        scope: context.scope,
        sourceJobId: jobId,
        expectedRunNumber,
        replayRequestKey: options.key,
        reason: options.reason,
      });
      if (result.kind === 'replayed') {
        context.print(`Replay ${result.replay.jobId} (${result.replay.disposition}) of job ${result.sourceJobId} run ${result.sourceRunNumber}.`, result);
        return;
      }
      context.print(
        result.kind === 'not_found' ? `No job ${jobId}.` : `Job ${jobId} is ${result.actual.status} in run ${result.actual.runNumber}; not replayed.`,
        result,
      );
      process.exitCode = result.kind === 'not_found' ? 3 : 4;
    });
  jobs
    .command('requeue <jobId>')
    .description('start a new run of a DEAD_LETTERED or CANCELED job')
    .option('--reset-state', 'clear progress and checkpoint (default: keep them)', false)
    .option('--run <n>', 'the run you expect to requeue (default: the current run)', runNumber)
    .action(async (jobId: string, options: { resetState: boolean; run?: number }) => {
      const db = context.db();
      const current = await getJob(db, { scope: context.scope, jobId });
      if (current.status !== 'DEAD_LETTERED' && current.status !== 'CANCELED') {
        throw new UsageError(`Job ${jobId} is ${current.status}; only DEAD_LETTERED or CANCELED jobs can be requeued.`, {
          code: 'cli.requeue_status',
          field: 'jobId',
        });
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
  registerDeadLetterCommands(jobs, context);
}

/** Longer values are cut here in the text output; --json prints them whole. */
const JSON_LINE_MAX = 2_000;

/** `  payload: {...}` on one line, cut at JSON_LINE_MAX characters. */
function jsonLine(label: string, value: unknown): string {
  const text = JSON.stringify(value);
  const cut = text.length > JSON_LINE_MAX ? `${text.slice(0, JSON_LINE_MAX)}… (${text.length - JSON_LINE_MAX} more characters: --json shows all)` : text;
  return `  ${label}: ${cut}`;
}
