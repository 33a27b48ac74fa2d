/**
 * Completing leased jobs, one or a batch: "a batch of job outcomes becomes
 * rows". One statement writes the jobs (their attempts and trail included) and their
 * workflow steps, and takes the release locks of the runs whose steps have
 * dependents; src/coordination/terminal.ts then releases the dependents (one
 * statement per cascade depth, across all runs) and recomputes the statuses of
 * runs that may have ended. Fencing, the lease clock and round trips: see
 * lifecycle.ts; the lock protocol: src/coordination/locking.ts.
 */
import type { z } from 'zod';
import { canAutocommit, withStatement, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { databaseErrorInfo } from '../errors/database-error.js';
import { parseInput } from '../validation/parse.js';
import { ensureReadCommittedForWorkflowJobs } from '../coordination/job-hooks.js';
import { settleTerminalSteps } from '../coordination/terminal.js';
import { RELEASE_LOCK_WAIT_MS, releaseConflict } from '../coordination/locking.js';
import { leaseMismatch, type CompleteJobOutcome } from './lease.js';
import {
  JOB_INVALID_INPUT,
  completeJobInputSchema,
  completeJobsBatchSchema,
  completeJobsInputSchema,
  type CompleteJobInput,
  type CompleteJobsItem,
  type ParsedJobLease,
} from './inputs.js';
import { asTemplate } from '../db/sql-template.js';
import { completeJobsStatement, type CompletedRow } from './statements/complete-jobs.js';

/**
 * Completes one job; a stale or foreign lease is `job.lease_owner_mismatch`.
 *
 * @example await completeJob(prisma, { ...claimed, output: { receiptId } });
 */
export async function completeJob(db: Db, input: CompleteJobInput): Promise<{ jobId: string; finishedAt: Date }> {
  // Parsed here first so a bad field is named `workerId` / `output`, not `0.workerId`.
  const parsed = parseInput(completeJobInputSchema, input, JOB_INVALID_INPUT);
  const [outcome] = await completeParsed(db, [splitLease(parsed)], runOnce, false);
  if (outcome?.outcome === 'error') throw outcome.error;
  if (outcome?.outcome !== 'succeeded') throw leaseMismatch(parsed, 'complete job');
  return { jobId: outcome.jobId, finishedAt: outcome.finishedAt };
}

/** The public item (`{ ...lease, output }`) in the completion path's internal form. */
function splitLease(item: ParsedJobLease & { output?: CompleteJobsItem['output'] }): ParsedCompleteItem {
  const { jobId, runNumber, attempt, workerId, workflowManaged } = item;
  return { lease: { jobId, runNumber, attempt, workerId, ...(workflowManaged === undefined ? {} : { workflowManaged }) }, output: item.output };
}

/**
 * Completes a batch (the way a worker batches completions). Each item
 * succeeds or reports `lease_owner_mismatch` on its own; the others are
 * unaffected. Outcomes are in input order.
 *
 * Round trips, whatever the batch size (see the module comment): a batch of
 * direct jobs on a root client is one autocommit statement. A batch with
 * workflow-managed jobs (known from the claim's `workflowManaged` hint, or
 * left over by the direct statement) is one transaction of a constant number
 * of statements: jobs, events and steps in one, the runs' release locks in
 * one, one per cascade depth, two for the run statuses. If that transaction
 * fails, its error is thrown; `completeJobsSettled` reports it per
 * item instead, after giving each item its own transaction so that one run's
 * trouble does not fail (and re-run) another run's work.
 */
export async function completeJobs(db: Db, items: readonly CompleteJobInput[]): Promise<CompleteJobOutcome[]> {
  const parsed = parseInput(completeJobsBatchSchema, items, JOB_INVALID_INPUT, 'items');
  const outcomes = await completeParsed(db, parsed.map(splitLease), runOnce, false);
  const failed = outcomes.find((outcome) => outcome.outcome === 'error');
  if (failed) throw failed.error;
  return outcomes as CompleteJobOutcome[];
}

/** An item's outcome where an error is reported per item (`completeJobsSettled`). */
export type SettledCompleteOutcome = CompleteJobOutcome | { jobId: string; outcome: 'error'; error: unknown };

/** Wraps each database step; the worker passes its transient-failure retry. */
export type StepRunner = <R>(step: () => Promise<R>) => Promise<R>;

const runOnce: StepRunner = (step) => step();

/**
 * Like `completeJobs`, but never loses an outcome that was committed
 * and isolates failures: `run` wraps each step (each is a whole statement or a
 * whole transaction, so retrying one is safe); if the batch's transaction
 * still fails, each of its items is tried again in a transaction of its own,
 * and only the items that fail alone are reported as `error`. The worker's
 * completion batcher uses it with its transient-failure retry.
 */
export async function completeJobsSettled(db: Db, items: readonly CompleteJobsItem[], run: StepRunner = runOnce): Promise<SettledCompleteOutcome[]> {
  const parsed = parseInput(completeJobsInputSchema, items, JOB_INVALID_INPUT, 'items');
  return completeParsed(db, parsed, run, true);
}

/**
 * `completeJobsSettled` for the worker's completion batcher, whose items are
 * already valid: each lease is one the worker's claim returned, and each output
 * has been through `toStorableJson` (job-execution.ts), the check the schema
 * would repeat, so the second walk of every output is skipped. Not exported
 * publicly: callers with input from elsewhere go through `completeJobsSettled`.
 */
export async function completeTrustedSettled(db: Db, items: readonly ParsedCompleteItem[], run: StepRunner): Promise<SettledCompleteOutcome[]> {
  return completeParsed(db, items, run, true);
}

export type ParsedCompleteItem = z.output<typeof completeJobsInputSchema>[number];

function leaseKey(jobId: string, runNumber: number, attempt: number, workerId: string): string {
  return `${jobId.toLowerCase()}|${runNumber}|${attempt}|${workerId}`;
}

async function completeParsed(db: Db, parsed: readonly ParsedCompleteItem[], run: StepRunner, isolate: boolean): Promise<SettledCompleteOutcome[]> {
  if (parsed.length === 0) return [];
  const outcomes: (SettledCompleteOutcome | undefined)[] = new Array(parsed.length);
  const settle = (indexes: readonly number[], rows: readonly CompletedRow[]): number[] => {
    const done = new Map(rows.map((row) => [leaseKey(row.id, row.run_number, row.attempt, row.worker_id), row.finished_at]));
    return indexes.filter((index) => {
      const l = parsed[index]!.lease;
      const finishedAt = done.get(leaseKey(l.jobId, l.runNumber, l.attempt, l.workerId));
      if (finishedAt) outcomes[index] = { jobId: l.jobId, outcome: 'succeeded', finishedAt };
      return !finishedAt;
    });
  };
  const fail = (indexes: readonly number[], error: unknown): void => {
    for (const index of indexes) outcomes[index] = { jobId: parsed[index]!.lease.jobId, outcome: 'error', error };
  };
  let open = parsed.map((_, index) => index);

  let autocommit: boolean;
  try {
    autocommit = await run(() => canAutocommit(db, 'complete jobs'));
  } catch (error) {
    fail(open, error);
    return outcomes as SettledCompleteOutcome[];
  }
  // Direct jobs only (by the claim's hint): one autocommit statement. A job
  // the hint got wrong is left untouched by it and goes through the
  // transaction below, which re-checks everything.
  if (autocommit && !parsed.some((item) => item.lease.workflowManaged === true)) {
    try {
      const rows = await run(() => withStatement(db, 'complete jobs', (client) => completeStatement(client, parsed, true)));
      open = settle(open, rows);
    } catch (error) {
      fail(open, error);
      return outcomes as SettledCompleteOutcome[];
    }
  }
  const inTransaction = async (indexes: readonly number[]): Promise<CompletedRow[]> => {
    const subset = indexes.map((index) => parsed[index]!);
    return run(() =>
      withTransaction(db, 'complete jobs', async (context) => {
        await ensureReadCommittedForWorkflowJobs(
          context,
          subset.map((item) => item.lease.jobId),
          'workflow.terminal_completion_unsupported_isolation',
          'Workflow job completion',
        );
        const completed = await completeStatementLockingReleases(context.tx, subset);
        const terminal = completed.flatMap((row) =>
          row.step_run_id === null
            ? []
            : [{ stepId: row.workflow_step_id!, workflowRunId: row.step_run_id, status: 'SUCCEEDED' as const, hasDependents: row.has_dependents !== false }],
        );
        const held = new Set(terminal.filter((step) => step.hasDependents).map((step) => step.workflowRunId));
        await settleTerminalSteps(context.tx, terminal, { workflowRunIds: held, mode: 'shared' });
        return completed;
      }),
    );
  };
  if (open.length > 0) {
    try {
      open = settle(open, await inTransaction(open));
    } catch (error) {
      if (!isolate || open.length === 1) {
        fail(open, error);
        open = [];
      } else {
        // One run's trouble stays in that run: each item alone, so the others commit.
        const retried: number[] = [];
        for (const index of open) {
          try {
            retried.push(...settle([index], await inTransaction([index])));
          } catch (itemError) {
            fail([index], itemError);
          }
        }
        open = retried;
      }
    }
  }
  for (const index of open) outcomes[index] = { jobId: parsed[index]!.lease.jobId, outcome: 'lease_owner_mismatch' };
  return outcomes as SettledCompleteOutcome[];
}

/** The completion statement in a transaction: a timed-out release lock is `workflow.release_conflict`. */
async function completeStatementLockingReleases(tx: Tx, items: readonly ParsedCompleteItem[]): Promise<CompletedRow[]> {
  try {
    return await completeStatement(tx, items, false);
  } catch (error) {
    if (databaseErrorInfo(error).sqlState === '55P03') {
      throw releaseConflict(`${items.length} jobs' runs`, `shared release lock not granted within ${RELEASE_LOCK_WAIT_MS} ms`, error);
    }
    throw error;
  }
}

async function completeStatement(client: Tx, items: readonly ParsedCompleteItem[], directOnly: boolean): Promise<CompletedRow[]> {
  return client.$queryRaw<CompletedRow[]>(...asTemplate(completeJobsStatement(items, directOnly)));
}
