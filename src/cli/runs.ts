/** `runledger runs ...` and `runledger steps complete`. */
import type { Command } from 'commander';
import { cancelWorkflowRun } from '../workflow/cancel.js';
import { completeExternalWorkflowStep } from '../workflow/external.js';
import { recoverWorkflowRun } from '../recovery/recover.js';
import { readRunCoordination } from '../workflow/coordination-reads.js';
import { getWorkflowRun, listWorkflowRuns, listWorkflowStepDependencies, listWorkflowSteps, type WorkflowRunWithLineage } from '../workflow/reads.js';
import type { WorkflowRunStatus } from '../model/workflow-rows.js';
import type { JsonValue } from '../model/json.js';
import { formatRunDag, formatRunList } from './format.js';
import { UsageError, type CliContext } from './context.js';
import { integerOption, textOption } from './options.js';
import { allItems } from './pages.js';

export function registerRunCommands(program: Command, context: CliContext): void {
  const runs = program.command('runs').description('inspect and cancel workflow runs');
  runs
    .command('list')
    .description('list workflow runs, newest first')
    .option('--type <workflowType>', 'only this workflow type', textOption)
    .option('--status <status...>', 'only these statuses (RUNNING, WAITING_FOR_EXTERNAL, SUCCEEDED, COMPLETED_WITH_ERRORS, CANCELED)')
    .option('--waiting', 'only runs waiting on a person: a step WAITING_FOR_EXTERNAL, whatever the run status')
    .option('--limit <n>', 'page size (1 to 500)', integerOption({ min: 1, max: 500 }), 20)
    .option('--cursor <cursor>', 'the cursor printed after the previous page', textOption)
    .action(async (options: { type?: string; status?: WorkflowRunStatus[]; waiting?: boolean; limit: number; cursor?: string }) => {
      const page = await listWorkflowRuns(context.db(), {
        scope: context.scope,
        limit: options.limit,
        ...(options.type === undefined ? {} : { workflowType: options.type }),
        ...(options.status === undefined ? {} : { status: options.status }),
        ...(options.waiting ? { waitingForExternal: true } : {}),
        ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      });
      context.print(`${formatRunList(page.items)}${page.nextCursor ? `\n\nmore: --cursor ${page.nextCursor}` : ''}`, page);
    });
  runs
    .command('show <workflowRunId>')
    .description("show a run, its active key and appends, and draw its DAG with each step's status")
    .action(async (workflowRunId: string) => {
      const db = context.db();
      const ref = { scope: context.scope, workflowRunId };
      const run = await getWorkflowRun(db, ref);
      const [steps, edges, coordination] = await Promise.all([
        allItems((paging) => listWorkflowSteps(db, { ...ref, ...paging })),
        allItems((paging) => listWorkflowStepDependencies(db, { ...ref, ...paging })),
        readRunCoordination(db, { scope: context.scope, workflowRunId: run.id }),
      ]);
      context.print(`${formatRunDag(run, steps, edges, coordination)}${formatLineage(run)}`, {
        run,
        activeKey: coordination.activeKey,
        mutations: coordination.mutations,
        steps,
        dependencies: edges,
      });
    });
  runs
    .command('recover <workflowRunId>')
    .description('run a finished run again as a new run, linked to it (idempotent per --request-key)')
    .requiredOption('--request-key <key>', 'identity of this recovery: retrying with the same key returns the same recovery', textOption)
    .requiredOption('--reason <reason>', 'why it is recovered (recorded in the lineage)', textOption)
    .option('--failed-only', 'carry the succeeded steps over with their outputs; run only the rest', false)
    .option('--again', 'recover a run that was already recovered (otherwise refused, naming its recovery)', false)
    .option(
      '--from-call-index <n>',
      'a durable function run, with --failed-only: reuse only the steps its body called before call n; run the rest again',
      integerOption({ min: 0, max: 2_147_483_647 }),
    )
    .action(async (workflowRunId: string, options: { requestKey: string; reason: string; failedOnly: boolean; again: boolean; fromCallIndex?: number }) => {
      const result = await recoverWorkflowRun(context.db(), {
        sourceRunId: workflowRunId,
        scope: context.scope,
        requestKey: options.requestKey,
        reason: options.reason,
        mode: options.failedOnly ? 'failed_only' : 'full',
        again: options.again,
        ...(options.fromCallIndex === undefined ? {} : { fromCallIndex: options.fromCallIndex }),
      });
      const carried = result.carriedStepKeys.length > 0 ? `; carried over: ${result.carriedStepKeys.join(', ')}` : '';
      context.print(`Recovery ${result.recoveryRunId} (${result.outcome}, ${result.mode}) of run ${result.sourceRunId} is ${result.status}${carried}.`, result);
    });
  runs
    .command('cancel <workflowRunId>')
    .description('cancel a run: every unfinished step and its job')
    .option('--reason <reason>', 'recorded on the run and its steps', textOption)
    .action(async (workflowRunId: string, options: { reason?: string }) => {
      const run = await cancelWorkflowRun(context.db(), {
        workflowRunId,
        scope: context.scope,
        ...(options.reason === undefined ? {} : { reason: options.reason }),
      });
      context.print(`Run ${run.id} is ${run.status}.`, run);
    });

  program
    .command('steps')
    .description('external workflow steps')
    .command('complete <workflowRunId> <stepKey>')
    .description('complete an external step (succeeded by default)')
    .option('--output <json>', 'the step output (success only), as JSON')
    .option('--failed', 'complete it as FAILED', false)
    .option('--canceled', 'complete it as CANCELED', false)
    .option('--reason <statusReason>', 'recorded on the step', textOption)
    .option('--error-code <code>', 'the error code recorded on the step', textOption)
    .option('--error-message <message>', 'the error message recorded on the step', textOption)
    .action(
      async (
        workflowRunId: string,
        stepKey: string,
        options: { output?: string; failed: boolean; canceled: boolean; reason?: string; errorCode?: string; errorMessage?: string },
      ) => {
        if (options.failed && options.canceled)
          throw new UsageError('Choose at most one of --failed and --canceled.', { code: 'cli.conflicting_options', field: '--failed' });
        let output: JsonValue | undefined;
        if (options.output !== undefined) {
          try {
            output = JSON.parse(options.output) as JsonValue;
          } catch {
            throw new UsageError('--output must be valid JSON.', { code: 'cli.invalid_argument', field: '--output' });
          }
        }
        const outcome = options.failed
          ? ({ status: 'failed' } as const)
          : options.canceled
            ? ({ status: 'canceled' } as const)
            : { status: 'succeeded' as const, ...(output === undefined ? {} : { output }) };
        if (output !== undefined && outcome.status !== 'succeeded')
          throw new UsageError('--output is only allowed for a succeeded step.', { code: 'cli.conflicting_options', field: '--output' });
        const step = await completeExternalWorkflowStep(context.db(), {
          workflowRunId,
          stepKey,
          scope: context.scope,
          outcome,
          statusReason: options.reason ?? null,
          errorCode: options.errorCode ?? null,
          errorMessage: options.errorMessage ?? null,
        });
        context.print(`Step ${step.stepKey} of run ${step.workflowRunId} is ${step.status}.`, step);
      },
    );
}

/** The recovery lineage lines of `runs show` (nothing for a run outside any lineage). */
function formatLineage(run: WorkflowRunWithLineage): string {
  const lines: string[] = [];
  if (run.recoveredFrom) {
    const from = run.recoveredFrom;
    lines.push(`  recovered from ${from.sourceRunId}  (${from.mode}, ${from.createdAt.toISOString()}, reason: ${from.reason})`);
  }
  if (run.recoveries.count > 0 && run.recoveries.latest) {
    const latest = run.recoveries.latest;
    lines.push(`  recoveries: ${run.recoveries.count}, latest ${latest.recoveryRunId} ${latest.recoveryStatus} (${latest.mode}, reason: ${latest.reason})`);
  }
  return lines.length === 0 ? '' : `\n\n  lineage\n${lines.join('\n')}`;
}
