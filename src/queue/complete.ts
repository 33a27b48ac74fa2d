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
import { sqltag } from '@prisma/client/runtime/client';
import { canAutocommit, withStatement, withTransaction } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { databaseErrorInfo } from '../errors/database-error.js';
import { parseInput } from '../validation/parse.js';
import { ensureReadCommittedForWorkflowJobs } from '../coordination/job-hooks.js';
import { settleTerminalSteps } from '../coordination/terminal.js';
import { stepStartedAt } from '../coordination/step-state.js';
import { RELEASE_LOCK_WAIT_MS, boundedReleaseLocksShared, releaseConflict } from '../coordination/locking.js';
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
import { CLEAR_LEASE } from '../db/fragments.js';

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
 * would repeat. Skipping the second walk of every output saved ~5% of a
 * draining worker's Node time (CPU profile, issue 26). Not exported publicly:
 * callers with input from elsewhere go through `completeJobsSettled`.
 */
export async function completeTrustedSettled(db: Db, items: readonly ParsedCompleteItem[], run: StepRunner): Promise<SettledCompleteOutcome[]> {
  return completeParsed(db, items, run, true);
}

export type ParsedCompleteItem = z.output<typeof completeJobsInputSchema>[number];

interface CompletedRow {
  id: string;
  run_number: number;
  attempt: number;
  worker_id: string;
  finished_at: Date;
  workflow_step_id: string | null;
  /** Set when the job's step became terminal in this statement. */
  step_run_id: string | null;
  has_dependents: boolean | null;
}

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

/**
 * The completion statement for a set of leases: job rows (locked in id
 * order, rung 1; each keeps its attempt, closed: src/queue/attempt-row.ts), and the steps of workflow-managed
 * ones (locked in id order, rung 2a) moved to SUCCEEDED with the output, all
 * in one statement, which then takes the release locks (rung 3) of the runs
 * whose new terminal steps have dependents. A step already terminal (a
 * cancellation got there first) is left as it is. `directOnly` leaves workflow-managed jobs untouched (not
 * even locked): the autocommit path, whose result needs no release.
 *
 * The fence compares with `clock_timestamp()` read once the rows are locked,
 * the moment of the write, not the statement's start: a write that waited for
 * a row past the lease's expiry is refused.
 */
async function completeStatement(client: Tx, items: readonly ParsedCompleteItem[], directOnly: boolean): Promise<CompletedRow[]> {
  const batch = JSON.stringify(
    items.map(({ lease: l, output }) => ({ job_id: l.jobId, run_number: l.runNumber, attempt: l.attempt, worker_id: l.workerId, output: output ?? null })),
  );
  return client.$queryRaw<CompletedRow[]>`
    -- One jsonb parameter for the batch (as enqueue's insertJobsTx: cheaper to send than an array per column).
    -- A JSON null output reads as SQL NULL, as it is stored.
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${batch}::jsonb) AS i(job_id uuid, run_number int, attempt int, worker_id text, output jsonb)
    ),
    -- Rung 1: the batch's job rows, in id order, so two overlapping batches cannot deadlock. Driven by the
    -- input, one primary-key probe per lease (the planner sees one small input and no other index it could
    -- use): the status and direct-only tests are written so no partial index matches them. A bitmap of
    -- job_queue_lease_expiry_idx ANDed with the primary key read every entry of that index, dead ones
    -- included (120,000 of them, 19 ms per batch of 250, before a vacuum), and a join that rescanned the
    -- input for every job row cost 62,500 comparisons per batch (auto_explain, PostgreSQL 15).
    locked AS MATERIALIZED (
      SELECT jq.id, i.worker_id, i.output
        FROM input i
        JOIN runledger.job_queue jq ON jq.id = i.job_id
       WHERE jq.run_number = i.run_number AND jq.attempt = i.attempt AND jq.lease_owner = i.worker_id
         AND jq.status::text = 'LEASED' AND jq.lease_expires_at > clock_timestamp()
         AND (jq.workflow_step_id IS NULL OR NOT ${directOnly}::boolean) IS TRUE
       ORDER BY jq.id
         FOR UPDATE OF jq
    ),
    -- Read once every lock above is held: a row another transaction only locked is not re-checked after the
    -- wait, so the fence below compares with the time of the write (see markJobRunning).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    done AS (
      UPDATE runledger.job_queue jq
         SET status = 'SUCCEEDED', ${CLEAR_LEASE},
             output = k.output, finished_at = now(), updated_at = now(),
             -- The attempt stays on the job row, closed: its number is the trail's SUCCEEDED event
             -- (src/queue/attempt-row.ts). No attempt or event row is written.
             attempt_closed_seq = CASE WHEN jq.attempt_seq IS NOT NULL THEN nextval('runledger.job_events_seq_seq') END
        FROM locked k
       -- The rows are locked with their lease matched; what can have changed since is the clock.
       WHERE jq.id = k.id AND jq.status::text = 'LEASED' AND jq.lease_expires_at > (SELECT at FROM clock)
      RETURNING jq.id, jq.run_number, jq.attempt, k.worker_id, jq.finished_at, jq.output, jq.workflow_step_id, jq.attempt_started_at
    ),
    -- Rung 2a: the steps of the workflow-managed jobs, in id order.
    steps_locked AS MATERIALIZED (
      SELECT ws.id FROM runledger.workflow_steps ws
       WHERE ws.id IN (SELECT workflow_step_id FROM done WHERE workflow_step_id IS NOT NULL)
       ORDER BY ws.id
         FOR UPDATE
    ),
    steps AS (
      UPDATE runledger.workflow_steps ws
         SET status = 'SUCCEEDED', finished_at = COALESCE(ws.finished_at, now()),
             status_reason = NULL, last_error_code = NULL, last_error_message = NULL,
             started_at = ${stepStartedAt(sqltag`d.attempt_started_at`)},
             output = d.output, updated_at = now()
        FROM done d
       WHERE ws.id = d.workflow_step_id AND ws.id IN (SELECT id FROM steps_locked)
         AND ws.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED')
      RETURNING ws.id, ws.workflow_run_id,
                EXISTS (SELECT 1 FROM runledger.workflow_step_dependencies e WHERE e.prerequisite_step_id = ws.id) AS has_dependents
    ),
    -- Rung 3 in the same statement: the release locks (shared) of the runs whose new terminal steps have
    -- dependents, in run id order, after every job and step lock above (\`prev\` reads \`steps\` whole), with
    -- a bounded wait (see src/coordination/locking.ts); the caller's lock_timeout is read first and restored
    -- last (\`restored\` is the outer side of the final join, so it always runs).
    ${boundedReleaseLocksShared(sqltag`SELECT DISTINCT workflow_run_id AS id FROM steps WHERE has_dependents ORDER BY 1`, sqltag`, (SELECT count(*) FROM steps) AS n`)}
    SELECT x.* FROM restored LEFT JOIN (
      SELECT d.id, d.run_number, d.attempt, d.worker_id, d.finished_at, d.workflow_step_id, s.workflow_run_id AS step_run_id,
             s.has_dependents
        FROM done d LEFT JOIN steps s ON s.id = d.workflow_step_id
    ) x ON true
     WHERE x.id IS NOT NULL`;
}
