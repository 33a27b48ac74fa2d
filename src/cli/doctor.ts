/**
 * `runledger doctor`: runs the integrity checker (src/integrity/verify.ts)
 * and lists every violation. Exit 0 when clean, 4 when it found violations
 * (the database disagrees with itself: a conflict), the usual codes for errors.
 */
import type { Command } from 'commander';
import { verifyIntegrity, type IntegrityReport } from '../integrity/verify.js';
import type { IntegrityViolation } from '../integrity/violations.js';
import type { CliContext } from './context.js';
import { integerOption } from './options.js';

export const DOCTOR_VIOLATIONS_EXIT_CODE = 4;

export function registerDoctorCommand(program: Command, context: CliContext): void {
  program
    .command('doctor')
    .description("check runledger's invariants (counters, run statuses, step/job links, leases, replay lineage); read-only")
    .option('--run <workflowRunId...>', 'check only these runs and their jobs')
    .option('--page-size <n>', 'runs or jobs per read transaction', integerOption({ min: 1, max: 5_000 }), 500)
    .option('--max-violations <n>', 'stop after this many', integerOption({ min: 1, max: 1_000_000 }), 1_000)
    .action(async (options: { run?: string[]; pageSize: number; maxViolations: number }) => {
      const report = await verifyIntegrity(context.db(), {
        scope: context.scope,
        pageSize: options.pageSize,
        maxViolations: options.maxViolations,
        ...(options.run ? { workflowRunIds: options.run } : {}),
      });
      context.print(formatReport(report), report);
      if (!report.clean) process.exitCode = DOCTOR_VIOLATIONS_EXIT_CODE;
    });
}

function formatReport(report: IntegrityReport): string {
  const checked = `checked ${report.checked.runs} run(s) and ${report.checked.jobs} job(s)`;
  if (report.clean) return `No violations: ${checked}.`;
  const lines = [
    `${report.violations.length}${report.truncated ? '+' : ''} violation(s): ${checked}${report.truncated ? ' (stopped at --max-violations)' : ''}.`,
  ];
  for (const violation of report.violations) lines.push(formatViolation(violation));
  return lines.join('\n');
}

function formatViolation(v: IntegrityViolation): string {
  const ids = [
    v.workflowRunId ? `run ${v.workflowRunId}` : null,
    v.stepId ? `step ${v.stepId}${v.stepKey ? ` (${v.stepKey})` : ''}` : null,
    v.jobId ? `job ${v.jobId}` : null,
  ].filter((id): id is string => id !== null);
  return `  ${v.kind}  ${ids.join('  ')}\n    ${v.message}\n    expected ${JSON.stringify(v.expected)}\n    found    ${JSON.stringify(v.found)}`;
}
