/** Terminal output for the demo: live step changes and a timeline. */
import type { WorkflowStep, WorkflowStepStatus } from 'runledger';

const MARK: Record<WorkflowStepStatus, string> = {
  BLOCKED: '·',
  ENQUEUED: '○',
  RUNNING: '▶',
  WAITING_FOR_EXTERNAL: '⏸',
  SUCCEEDED: '✔',
  FAILED: '✘',
  CANCELED: '⊘',
};

export function elapsed(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(2).padStart(5)}s`;
}

/** Prints every step whose status changed since the last call. */
export function stepChanges(previous: Map<string, string>, steps: readonly WorkflowStep[], since: number): string[] {
  const lines: string[] = [];
  for (const step of steps) {
    const before = previous.get(step.stepKey);
    if (before === step.status) continue;
    previous.set(step.stepKey, step.status);
    const detail = step.lastErrorCode && step.status !== 'SUCCEEDED' ? `  (${step.lastErrorCode})` : '';
    lines.push(`  ${elapsed(since)}  ${MARK[step.status]} ${step.stepKey.padEnd(16)} ${before ? `${before} → ` : ''}${step.status}${detail}`);
  }
  return lines;
}

/** A Gantt-style bar per step, from released to finished, on one time axis. */
export function timeline(steps: readonly WorkflowStep[], runCreatedAt: Date, width = 48): string[] {
  const start = runCreatedAt.getTime();
  const end = Math.max(...steps.map((s) => (s.finishedAt ?? new Date()).getTime()), start + 1);
  const column = (at: Date) => Math.round(((at.getTime() - start) / (end - start)) * width);
  return steps.map((step) => {
    const from = column(step.releasedAt ?? runCreatedAt);
    const ran = column(step.startedAt ?? step.releasedAt ?? runCreatedAt);
    const to = Math.max(column(step.finishedAt ?? new Date(end)), ran + 1);
    const bar = ' '.repeat(from) + '░'.repeat(Math.max(0, ran - from)) + '█'.repeat(Math.max(1, to - ran));
    // Two numbers, named: how long the step ran, and when it finished counted from the run's start.
    const ranFor = step.finishedAt && step.startedAt ? `ran ${seconds(step.finishedAt.getTime() - step.startedAt.getTime())}, ` : '';
    const finished = step.finishedAt ? `finished at +${seconds(step.finishedAt.getTime() - start)}` : '';
    return `  ${step.stepKey.padEnd(16)} |${bar.padEnd(width + 1)}| ${MARK[step.status]} ${ranFor}${finished}`;
  });
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)}s`;

/**
 * A `runledger` CLI command as it runs where the demo runs: in a clone of this
 * repository, where `npx runledger` finds no binary (only an app that installed
 * the package has one), so through the `cli` npm script, which runs the CLI
 * from source. Returned as argv so a test runs exactly what the demo prints.
 */
export function cliCommand(...args: string[]): string[] {
  return ['npm', 'run', 'cli', '--', ...args];
}

/** The command as a shell line (the demo's arguments need no quoting). */
export function shellLine(argv: readonly string[]): string {
  return argv.join(' ');
}
