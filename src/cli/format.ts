/** Human output for the CLI: tables, and a run's DAG drawn level by level. */
import type { Job, WorkflowRun, WorkflowStep, WorkflowStepDependency, WorkflowStepStatus } from '../index.js';
import type { RunCoordination } from '../workflow/coordination-reads.js';
import { RECOVERY_CARRIED } from '../workflow/enqueue.js';
import { inCallOrder } from '../workflow/function-order.js';

const STATUS_MARK: Record<WorkflowStepStatus, string> = {
  BLOCKED: '·',
  ENQUEUED: '○',
  RUNNING: '▶',
  WAITING_FOR_EXTERNAL: '⏸',
  SUCCEEDED: '✔',
  FAILED: '✘',
  CANCELED: '⊘',
};

export function table(rows: string[][]): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatJobList(jobs: readonly Job[]): string {
  if (jobs.length === 0) return 'No jobs.';
  return table([
    ['ID', 'TYPE', 'STATUS', 'RUN', 'ATTEMPT', 'ORGANIZATION', 'CREATED', 'LAST ERROR'],
    ...jobs.map((job) => [
      job.id,
      job.jobType,
      job.state,
      String(job.runNumber),
      `${job.attempt}/${job.maxAttempts}`,
      job.organizationId ?? '-',
      job.createdAt.toISOString(),
      job.lastErrorCode ?? '-',
    ]),
  ]);
}

export function formatRunList(runs: readonly WorkflowRun[]): string {
  if (runs.length === 0) return 'No workflow runs.';
  return table([
    ['ID', 'TYPE', 'STATUS', 'CREATED', 'FINISHED'],
    ...runs.map((run) => [run.id, run.workflowType, run.status, run.createdAt.toISOString(), run.finishedAt?.toISOString() ?? '-']),
  ]);
}

/** Depth of each step = longest prerequisite chain above it; steps are drawn one level per line group. */
export function formatRunDag(
  run: WorkflowRun,
  steps: readonly WorkflowStep[],
  edges: readonly WorkflowStepDependency[],
  coordination: RunCoordination = { activeKey: null, mutations: [] },
): string {
  const prerequisites = new Map<string, WorkflowStepDependency[]>();
  for (const edge of edges) prerequisites.set(edge.dependentStepKey, [...(prerequisites.get(edge.dependentStepKey) ?? []), edge]);
  const depth = new Map<string, number>();
  // Steps arrive in topological (id) order, so prerequisites are always seen first.
  for (const step of steps) {
    const above = (prerequisites.get(step.stepKey) ?? []).map((edge) => (depth.get(edge.prerequisiteStepKey) ?? 0) + 1);
    depth.set(step.stepKey, Math.max(0, ...above));
  }
  const lines = [
    `Run ${run.id}  ${run.workflowType}  ${run.status}`,
    `  created ${run.createdAt.toISOString()}${run.finishedAt ? `  finished ${run.finishedAt.toISOString()}` : ''}${run.statusReason ? `  reason: ${run.statusReason}` : ''}`,
  ];
  if (run.resultStepKey) lines.push(`  result step: ${run.resultStepKey}${run.status === 'SUCCEEDED' ? `  result: ${JSON.stringify(run.result)}` : ''}`);
  lines.push(...coordinationLines(coordination));
  const levels = Math.max(0, ...depth.values());
  // A durable function's recorded steps (all on level 0: no edges) in the order its body called them.
  const ordered = inCallOrder(steps);
  for (let level = 0; level <= levels; level += 1) {
    const atLevel = ordered.filter((step) => depth.get(step.stepKey) === level);
    if (atLevel.length === 0) continue;
    lines.push('', `  level ${level}`);
    for (const step of atLevel) {
      const after = (prerequisites.get(step.stepKey) ?? [])
        .map((edge) => `${edge.prerequisiteStepKey}${edge.releaseMode === 'ON_TERMINAL' ? ' (any outcome)' : ''}`)
        .join(', ');
      // The job id is what `jobs show`, `jobs replay` and `jobs requeue` take, so an operator can go from the DAG to the job.
      const what =
        step.executionKind === 'JOB'
          ? `job ${step.jobType}${step.jobId ? ` (id ${step.jobId})` : ''}`
          : step.executionKind === 'FUNCTION'
            ? `function call ${step.callIndex}${step.statusReason === RECOVERY_CARRIED ? ' (carried)' : ''}`
            : 'external';
      const detail = `${step.stage ? `  stage ${step.stage}${formatProgress(step.progress)}` : formatProgress(step.progress)}${step.lastErrorCode ? `  [${step.lastErrorCode}]` : ''}`;
      lines.push(`    ${STATUS_MARK[step.status]} ${step.stepKey.padEnd(18)} ${step.status.padEnd(21)} ${what}${after ? `  ← ${after}` : ''}${detail}`);
    }
  }
  return lines.join('\n');
}

/** `  3/10` for numeric progress (`ctx.progress`), `  3` without a total; nothing for none or free-form progress. */
export function formatProgress(progress: unknown): string {
  if (typeof progress !== 'object' || progress === null || !('processed' in progress)) return '';
  const { processed, total } = progress as { processed: unknown; total?: unknown };
  if (typeof processed !== 'number') return '';
  return typeof total === 'number' ? `  ${processed}/${total}` : `  ${processed}`;
}

/** The run's active key (held or released) and its appends, one line each: what `runs show` prints under the header. */
function coordinationLines(coordination: RunCoordination): string[] {
  const lines: string[] = [];
  const key = coordination.activeKey;
  if (key) {
    const state = key.releasedAt ? `released ${key.releasedAt.toISOString()}` : 'held';
    lines.push(`  active key: ${JSON.stringify(key.activeKey)} (${key.scope})  claimed ${key.claimedAt.toISOString()}  ${state}`);
  }
  if (coordination.mutations.length > 0) {
    lines.push(`  appends (${coordination.mutations.length}):`);
    for (const m of coordination.mutations) {
      lines.push(`    ${JSON.stringify(m.mutationKey)}  ${m.stepCount} step${m.stepCount === 1 ? '' : 's'}  at ${m.createdAt.toISOString()}`);
    }
  }
  return lines;
}
