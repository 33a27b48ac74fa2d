/**
 * Lifecycle of a leased job: mark running, heartbeat, complete, fail.
 *
 * Invariants:
 * - Every write is fenced to the exact lease in its WHERE clause: job id, run
 *   number, attempt, owner, `status = 'LEASED'` and a lease unexpired at the
 *   moment the row is written (see "The lease clock" below).
 *   Zero rows means the lease is stale or foreign: `job.lease_owner_mismatch`,
 *   and nothing was changed (the statement matched nothing).
 * - Each transition appends its job_events row in the same statement.
 * - Workflow-managed jobs (RETURNING EXISTS over workflow_steps) move their
 *   steps in the same transaction; direct jobs pay no extra round trip.
 * - Round trips on a root client (`withStatement`, src/client/transaction.ts):
 *   mark running and heartbeat are one statement (mark running folds the
 *   step -> RUNNING hook into it as a data-modifying CTE), sent as one
 *   autocommit statement. Complete and fail first try a statement that only
 *   matches DIRECT jobs (`NOT EXISTS` a step pointing at the job), in
 *   autocommit; whatever it leaves unresolved (a workflow-managed job, whose
 *   hooks need more statements, or a lease the fence refuses) then goes
 *   through the transactional path, which re-checks the fence and reports the
 *   mismatch. A lease the fast path completed is never in that second step,
 *   and could not be completed twice anyway: the fence requires
 *   `status = 'LEASED'`. A step row and its job are committed together, so
 *   the `NOT EXISTS` test cannot misjudge a job the statement can see. On a
 *   joined transaction everything runs in it, in one statement per job set.
 *
 * Lock order: the job rows (batch completion locks them in id order), then
 * the step rows inside the workflow hooks.
 */
import type { z } from 'zod';
import type { Db } from '../client/types.js';
import { canAutocommit, withStatement, withTransaction } from '../client/transaction.js';
import type { Tx } from '../client/types.js';
import { newId, newIds } from '../db/ids.js';
import { ConflictError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import type { JsonValue } from '../validation/primitives.js';
import { ensureReadCommittedForWorkflowJobs, settleTerminalSteps } from '../workflow/job-hooks.js';
import { RELEASE_LOCK_NAMESPACE, RELEASE_LOCK_WAIT_MS, releaseConflict } from '../workflow/locking.js';
import { databaseErrorInfo } from '../errors/database-error.js';
import { retryDelayMs } from './retry-policy.js';
import { jsonParam, type JobLease } from './rows.js';
import {
  JOB_INVALID_INPUT,
  completeJobOptionsSchema,
  completeJobsInputSchema,
  failJobOptionsSchema,
  heartbeatOptionsSchema,
  jobLeaseSchema,
  type CompleteJobOptions,
  type CompleteJobsItem,
  type FailJobOptions,
  type HeartbeatOptions,
  type ParsedJobLease,
} from './schemas.js';

/** The lease fields the fence reads; a ClaimedJob or JobLease fits. */
export type LeaseIdentity = Pick<JobLease, 'jobId' | 'runNumber' | 'attempt' | 'workerId'> & {
  /** Routing hint from the claim (ClaimedJob.workflowManaged); optional, never trusted for correctness. */
  workflowManaged?: boolean;
};

export type CompleteJobOutcome =
  | { jobId: string; outcome: 'succeeded'; finishedAt: Date }
  | { jobId: string; outcome: 'lease_owner_mismatch' };

export interface FailJobResult {
  jobId: string;
  status: 'PENDING' | 'DEAD_LETTERED';
  /** When the retry becomes claimable; null once dead-lettered. */
  nextRunAt: Date | null;
}

export function leaseMismatch(lease: ParsedJobLease, operation: string): ConflictError {
  return new ConflictError('job.lease_owner_mismatch', 'The job is no longer leased to this worker.', {
    internalMessage: `${operation}: no live lease for job ${lease.jobId} run ${lease.runNumber} attempt ${lease.attempt} owned by ${lease.workerId}`,
    details: { jobId: lease.jobId, runNumber: lease.runNumber, attempt: lease.attempt, workerId: lease.workerId },
  });
}

/*
 * The lease clock. `now()` is the time the statement (or transaction) started;
 * a fenced write that waited on the job row's lock (a cancellation, a batch,
 * any transaction holding the row) could pass `lease_expires_at > now()` after
 * the lease expired and store a "new" expiry already in the past. Checking
 * `clock_timestamp()` in the UPDATE's WHERE is not enough either: a holder
 * that only locked the row (FOR UPDATE, no change) lets the waiting UPDATE go
 * on without re-evaluating its WHERE clause, which it evaluated before the
 * wait. So a fenced statement first locks the row (`locked`), then reads the
 * clock from that CTE (`clock`, evaluated only once the lock is held), and the
 * UPDATE compares with and computes from that one instant. A holder that did
 * change the row makes the UPDATE re-check its WHERE against the new row
 * version, with the same instant. Cost: one more index probe of a row the
 * statement writes anyway. release.ts does the same.
 */

/**
 * Records that the handler started. Idempotent per attempt: a second call
 * appends no second RUNNING event. `claimJobs({ markRunning: true })` does the
 * same inside the claim.
 */
export async function markJobRunning(db: Db, lease: LeaseIdentity): Promise<void> {
  const l = parseInput(jobLeaseSchema, lease, JOB_INVALID_INPUT);
  const eventId = newId();
  // One statement: the step -> RUNNING hook (the rule in job-hooks.ts's header) is the `steps` CTE,
  // which reads the updated job through an InitPlan, so the job row is locked before any step row.
  await withStatement(db, 'mark job running', async (client) => {
    const rows = await client.$queryRaw<{ workflow_managed: boolean }[]>`
      WITH locked AS MATERIALIZED (
        SELECT jq.id FROM runledger.job_queue jq
         WHERE jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
           AND jq.lease_owner = ${l.workerId}
           FOR UPDATE
      ),
      -- Read after the lock above is held: the fence and the timestamps use the time of the write (module comment).
      clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM locked),
      running AS (
        UPDATE runledger.job_queue jq
           SET started_at = COALESCE(jq.started_at, c.at), heartbeat_at = c.at, updated_at = c.at
          FROM clock c
         WHERE jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
           AND jq.lease_owner = ${l.workerId} AND jq.status = 'LEASED' AND jq.lease_expires_at > c.at
        RETURNING jq.id, jq.run_number, jq.attempt, jq.workflow_step_id,
                  jq.workflow_step_id IS NOT NULL AS workflow_managed,
                  -- Once per lease: a released attempt is claimed again under the same attempt number, so only a
                  -- RUNNING event after this lease's LEASED event counts (the reaper reads "started" the same way).
                  NOT EXISTS (SELECT 1 FROM runledger.job_events e
                               WHERE e.job_id = jq.id AND e.event_type = 'RUNNING'
                                 AND e.seq > (SELECT max(le.seq) FROM runledger.job_events le
                                               WHERE le.job_id = jq.id AND le.event_type = 'LEASED')) AS first_time
      ),
      events AS (
        INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
        SELECT ${eventId}::uuid, id, 'RUNNING'::runledger.job_event_type, run_number, attempt,
               jsonb_build_object('workerId', ${l.workerId}::text)
          FROM running WHERE first_time
      ),
      steps AS (
        UPDATE runledger.workflow_steps ws
           SET status = 'RUNNING',
               started_at = COALESCE(ws.started_at, now()),
               output = NULL,
               updated_at = now()
         WHERE ws.id = ANY(ARRAY(SELECT workflow_step_id FROM running WHERE workflow_step_id IS NOT NULL))
           AND ws.status IN ('ENQUEUED', 'RUNNING')
      )
      SELECT workflow_managed FROM running`;
    if (!rows[0]) throw leaseMismatch(l, 'mark job running');
  });
}

/**
 * Extends the lease from now by `leaseSeconds` (default: the length of the
 * current grant, i.e. what the worker asked for at claim time) and saves
 * progress/checkpoint when given (null clears). Appends no event.
 */
export async function heartbeatJob(db: Db, lease: LeaseIdentity, options: HeartbeatOptions = {}): Promise<JobLease> {
  const l = parseInput(jobLeaseSchema, lease, JOB_INVALID_INPUT);
  const o = parseInput(heartbeatOptionsSchema, options, JOB_INVALID_INPUT);
  return withStatement(db, 'heartbeat job', async (client) => {
    const rows = await client.$queryRaw<{ lease_expires_at: Date }[]>`
      WITH locked AS MATERIALIZED (
        SELECT jq.id FROM runledger.job_queue jq
         WHERE jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
           AND jq.lease_owner = ${l.workerId}
           FOR UPDATE
      ),
      -- Read after the lock above is held: the fence and the new expiry use the time of the write (module comment).
      clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM locked)
      UPDATE runledger.job_queue jq
         SET lease_expires_at = c.at + COALESCE(make_interval(secs => ${o.leaseSeconds ?? null}::int),
                                                jq.lease_expires_at - jq.heartbeat_at,
                                                make_interval(secs => jq.timeout_seconds)),
             heartbeat_at = c.at,
             progress = CASE WHEN ${o.progress !== undefined}::boolean THEN ${jsonParam(o.progress)}::jsonb ELSE jq.progress END,
             checkpoint = CASE WHEN ${o.checkpoint !== undefined}::boolean THEN ${jsonParam(o.checkpoint)}::jsonb ELSE jq.checkpoint END,
             updated_at = c.at
        FROM clock c
       WHERE jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
         AND jq.lease_owner = ${l.workerId} AND jq.status = 'LEASED' AND jq.lease_expires_at > c.at
      RETURNING jq.lease_expires_at`;
    const row = rows[0];
    if (!row) throw leaseMismatch(l, 'heartbeat job');
    return { ...l, leaseExpiresAt: row.lease_expires_at };
  });
}

/** Completes one job; a stale or foreign lease is `job.lease_owner_mismatch`. */
export async function completeJobSuccess(
  db: Db,
  lease: LeaseIdentity,
  options: CompleteJobOptions = {},
): Promise<{ jobId: string; finishedAt: Date }> {
  // Parsed here first so a bad field is named `workerId` / `output`, not `0.lease.workerId`.
  const l = parseInput(jobLeaseSchema, lease, JOB_INVALID_INPUT);
  const o = parseInput(completeJobOptionsSchema, options, JOB_INVALID_INPUT);
  const [outcome] = await completeJobsSuccess(db, [{ lease: l, output: o.output }]);
  if (outcome?.outcome !== 'succeeded') throw leaseMismatch(l, 'complete job');
  return { jobId: outcome.jobId, finishedAt: outcome.finishedAt };
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
 * fails, its error is thrown; `completeJobsSuccessSettled` reports it per
 * item instead, after giving each item its own transaction so that one run's
 * trouble does not fail (and re-run) another run's work.
 */
export async function completeJobsSuccess(db: Db, items: readonly CompleteJobsItem[]): Promise<CompleteJobOutcome[]> {
  const parsed = parseInput(completeJobsInputSchema, items, JOB_INVALID_INPUT);
  const outcomes = await completeParsed(db, parsed, runOnce, false);
  const failed = outcomes.find((outcome) => outcome.outcome === 'error');
  if (failed) throw failed.error;
  return outcomes as CompleteJobOutcome[];
}

/** An item's outcome where an error is reported per item (`completeJobsSuccessSettled`). */
export type SettledCompleteOutcome = CompleteJobOutcome | { jobId: string; outcome: 'error'; error: unknown };

/** Wraps each database step; the worker passes its transient-failure retry. */
export type StepRunner = <R>(step: () => Promise<R>) => Promise<R>;

const runOnce: StepRunner = (step) => step();

/**
 * Like `completeJobsSuccess`, but never loses an outcome that was committed
 * and isolates failures: `run` wraps each step (each is a whole statement or a
 * whole transaction, so retrying one is safe); if the batch's transaction
 * still fails, each of its items is tried again in a transaction of its own,
 * and only the items that fail alone are reported as `error`. The worker's
 * completion batcher uses it with its transient-failure retry.
 */
export async function completeJobsSuccessSettled(
  db: Db,
  items: readonly CompleteJobsItem[],
  run: StepRunner = runOnce,
): Promise<SettledCompleteOutcome[]> {
  const parsed = parseInput(completeJobsInputSchema, items, JOB_INVALID_INPUT);
  return completeParsed(db, parsed, run, true);
}

type ParsedCompleteItem = z.output<typeof completeJobsInputSchema>[number];

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
  const eventIds = newIds(parsed.length);
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
      const rows = await run(() => withStatement(db, 'complete jobs', (client) => completeStatement(client, parsed, eventIds, true)));
      open = settle(open, rows);
    } catch (error) {
      fail(open, error);
      return outcomes as SettledCompleteOutcome[];
    }
  }
  const inTransaction = async (indexes: readonly number[]): Promise<CompletedRow[]> => {
    const subset = indexes.map((index) => parsed[index]!);
    const subsetEventIds = indexes.map((index) => eventIds[index]!);
    return run(() =>
      withTransaction(db, 'complete jobs', async (context) => {
        await ensureReadCommittedForWorkflowJobs(
          context,
          subset.map((item) => item.lease.jobId),
          'workflow.terminal_completion_unsupported_isolation',
          'Workflow job completion',
        );
        const completed = await completeStatementLockingReleases(context.tx, subset, subsetEventIds);
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
async function completeStatementLockingReleases(tx: Tx, items: readonly ParsedCompleteItem[], eventIds: readonly string[]): Promise<CompletedRow[]> {
  try {
    return await completeStatement(tx, items, eventIds, false);
  } catch (error) {
    if (databaseErrorInfo(error).sqlState === '55P03') {
      throw releaseConflict(`${items.length} jobs' runs`, `shared release lock not granted within ${RELEASE_LOCK_WAIT_MS} ms`, error);
    }
    throw error;
  }
}

/**
 * The completion statement for a set of leases: job rows (locked in id
 * order, rung 1), their SUCCEEDED events, and the steps of workflow-managed
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
async function completeStatement(
  client: Tx,
  items: readonly ParsedCompleteItem[],
  eventIds: readonly string[],
  directOnly: boolean,
): Promise<CompletedRow[]> {
  const leases = items.map((item) => item.lease);
  return client.$queryRaw<CompletedRow[]>`
    WITH input AS (
      SELECT *
        FROM unnest(${leases.map((l) => l.jobId)}::uuid[], ${leases.map((l) => l.runNumber)}::int[],
                    ${leases.map((l) => l.attempt)}::int[], ${leases.map((l) => l.workerId)}::text[],
                    ${items.map((item) => jsonParam(item.output))}::jsonb[], ${eventIds as string[]}::uuid[])
             AS i(job_id, run_number, attempt, worker_id, output, event_id)
    ),
    -- Rung 1: the batch's job rows, in id order, so two overlapping batches cannot deadlock.
    locked AS MATERIALIZED (
      SELECT jq.id
        FROM runledger.job_queue jq
        JOIN input i ON jq.id = i.job_id
       WHERE jq.run_number = i.run_number AND jq.attempt = i.attempt AND jq.lease_owner = i.worker_id
         AND jq.status = 'LEASED' AND jq.lease_expires_at > clock_timestamp()
         AND (NOT ${directOnly}::boolean OR jq.workflow_step_id IS NULL)
       ORDER BY jq.id
         FOR UPDATE OF jq
    ),
    -- Read once every lock above is held: a row another transaction only locked is not re-checked after the
    -- wait, so the fence below compares with the time of the write (see markJobRunning).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    done AS (
      UPDATE runledger.job_queue jq
         SET status = 'SUCCEEDED', lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL,
             output = i.output, finished_at = now(), updated_at = now()
        FROM input i
       WHERE jq.id = i.job_id AND jq.id IN (SELECT id FROM locked)
         AND jq.run_number = i.run_number AND jq.attempt = i.attempt AND jq.lease_owner = i.worker_id
         AND jq.status = 'LEASED' AND jq.lease_expires_at > (SELECT at FROM clock)
      RETURNING jq.id, jq.run_number, jq.attempt, i.worker_id, jq.finished_at, jq.output, i.event_id, jq.workflow_step_id
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT event_id, id, 'SUCCEEDED'::runledger.job_event_type, run_number, attempt, NULL FROM done
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
             output = d.output, updated_at = now()
        FROM done d
       WHERE ws.id = d.workflow_step_id AND ws.id IN (SELECT id FROM steps_locked)
         AND ws.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED')
      RETURNING ws.id, ws.workflow_run_id,
                EXISTS (SELECT 1 FROM runledger.workflow_step_dependencies e WHERE e.prerequisite_step_id = ws.id) AS has_dependents
    ),
    -- Rung 3 in the same statement: the release locks (shared) of the runs whose new terminal steps have
    -- dependents, in run id order, after every job and step lock above (\`prev\` reads \`steps\` whole), with
    -- a bounded wait (see src/workflow/locking.ts); the caller's lock_timeout is read first and restored
    -- last (\`restored\` is the outer side of the final join, so it always runs).
    prev AS MATERIALIZED (SELECT current_setting('lock_timeout') AS previous, (SELECT count(*) FROM steps) AS n),
    bounded AS MATERIALIZED (SELECT previous, set_config('lock_timeout', ${`${RELEASE_LOCK_WAIT_MS}ms`}, true) AS bound FROM prev),
    granted AS MATERIALIZED (
      SELECT count(pg_advisory_xact_lock_shared(${RELEASE_LOCK_NAMESPACE}::int, hashtext(r.id::text)) IS NULL) AS n
        FROM bounded, (SELECT DISTINCT workflow_run_id AS id FROM steps WHERE has_dependents ORDER BY 1) r
    ),
    restored AS MATERIALIZED (SELECT set_config('lock_timeout', bounded.previous, true) AS v FROM bounded, granted)
    SELECT x.* FROM restored LEFT JOIN (
      SELECT d.id, d.run_number, d.attempt, d.worker_id, d.finished_at, d.workflow_step_id, s.workflow_run_id AS step_run_id,
             s.has_dependents
        FROM done d LEFT JOIN steps s ON s.id = d.workflow_step_id
    ) x ON true
     WHERE x.id IS NOT NULL`;
}

/**
 * Records a failed attempt. Retryable with attempts left: back to PENDING
 * after an exponential, jittered backoff, never before `retryNotBefore`
 * (RETRY_SCHEDULED). Otherwise DEAD_LETTERED.
 */
export async function failJob(db: Db, lease: LeaseIdentity, options: FailJobOptions): Promise<FailJobResult> {
  const l = parseInput(jobLeaseSchema, lease, JOB_INVALID_INPUT);
  const o = parseInput(failJobOptionsSchema, options, JOB_INVALID_INPUT);
  // The fence pins attempt = l.attempt, so the backoff can be computed here.
  const backoffMs = retryDelayMs(l.attempt);
  const eventId = newId();
  const result = (row: FailedRow): FailJobResult => ({ jobId: l.jobId, status: row.status, nextRunAt: row.status === 'PENDING' ? row.next_run_at : null });
  if (l.workflowManaged !== true && (await canAutocommit(db, 'fail job'))) {
    // Fast path: a direct job in one autocommit statement. Nothing matched: workflow-managed or refused, see below.
    const [row] = await withStatement(db, 'fail job', (client) => failStatement(client, l, o, backoffMs, eventId, true));
    if (row) return result(row);
  }
  return withTransaction(db, 'fail job', async (context) => {
    await ensureReadCommittedForWorkflowJobs(context, [l.jobId], 'workflow.terminal_completion_unsupported_isolation', 'Workflow job failure');
    const [row] = await failStatement(context.tx, l, o, backoffMs, eventId, false);
    if (!row) throw leaseMismatch(l, 'fail job');
    if (row.step_run_id !== null && row.status === 'DEAD_LETTERED') {
      await settleTerminalSteps(context.tx, [{ stepId: row.workflow_step_id!, workflowRunId: row.step_run_id, status: 'FAILED' }]);
    }
    return result(row);
  });
}

interface FailedRow {
  status: 'PENDING' | 'DEAD_LETTERED';
  next_run_at: Date;
  workflow_step_id: string | null;
  /** Set when the job's step became terminal (FAILED) in this statement. */
  step_run_id: string | null;
}

/**
 * The failure statement: the job row (fenced at the time of the write), its
 * event, and for a workflow-managed job its step (rung 2a): back to ENQUEUED
 * with the error when a retry is scheduled, FAILED when dead-lettered (a step
 * already terminal stays). `directOnly` leaves workflow-managed jobs
 * untouched (the fast path).
 */
async function failStatement(
  client: Tx,
  l: ParsedJobLease,
  o: z.output<typeof failJobOptionsSchema>,
  backoffMs: number,
  eventId: string,
  directOnly: boolean,
): Promise<FailedRow[]> {
  return client.$queryRaw<FailedRow[]>`
    WITH locked AS MATERIALIZED (
      SELECT jq.id FROM runledger.job_queue jq
       WHERE jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
         AND jq.lease_owner = ${l.workerId}
         AND (NOT ${directOnly}::boolean OR jq.workflow_step_id IS NULL)
         FOR UPDATE
    ),
    -- Read after the lock above is held (see markJobRunning).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    failed AS (
      UPDATE runledger.job_queue jq
         SET status = CASE WHEN ${o.retryable}::boolean AND jq.attempt < jq.max_attempts
                           THEN 'PENDING'::runledger.job_status ELSE 'DEAD_LETTERED'::runledger.job_status END,
             next_run_at = CASE WHEN ${o.retryable}::boolean AND jq.attempt < jq.max_attempts
                                THEN GREATEST(now() + ${backoffMs}::int * interval '1 millisecond', ${o.retryNotBefore ?? null}::timestamptz)
                                ELSE jq.next_run_at END,
             finished_at = CASE WHEN ${o.retryable}::boolean AND jq.attempt < jq.max_attempts THEN NULL ELSE now() END,
             lease_owner = NULL, lease_expires_at = NULL, heartbeat_at = NULL,
             last_error_code = ${o.code}, last_error_message = ${o.message}, updated_at = now()
       WHERE jq.id = ${l.jobId}::uuid AND jq.run_number = ${l.runNumber}::int AND jq.attempt = ${l.attempt}::int
         AND jq.lease_owner = ${l.workerId} AND jq.status = 'LEASED' AND jq.lease_expires_at > (SELECT at FROM clock)
         AND jq.id IN (SELECT id FROM locked)
      RETURNING jq.id, jq.status, jq.next_run_at, jq.run_number, jq.attempt, jq.max_attempts, jq.workflow_step_id
    ),
    steps AS (
      UPDATE runledger.workflow_steps ws
         SET status = CASE WHEN f.status = 'PENDING' THEN 'ENQUEUED' ELSE 'FAILED' END::runledger.workflow_step_status,
             finished_at = CASE WHEN f.status = 'PENDING' THEN NULL ELSE COALESCE(ws.finished_at, now()) END,
             status_reason = CASE WHEN f.status = 'PENDING' THEN 'job.retry_scheduled' ELSE NULL END,
             last_error_code = ${o.code}, last_error_message = ${o.message},
             output = NULL, updated_at = now()
        FROM failed f
       WHERE ws.id = f.workflow_step_id
         AND (CASE WHEN f.status = 'PENDING' THEN ws.status = 'RUNNING' ELSE ws.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELED') END)
      RETURNING ws.id, ws.workflow_run_id, ws.status
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT ${eventId}::uuid, id,
             CASE WHEN status = 'PENDING' THEN 'RETRY_SCHEDULED'::runledger.job_event_type
                  ELSE 'DEAD_LETTERED'::runledger.job_event_type END,
             run_number, attempt,
             CASE WHEN status = 'PENDING'
                  THEN jsonb_build_object('code', ${o.code}::text, 'message', ${o.message}::text,
                                          'delayMs', round(EXTRACT(EPOCH FROM (next_run_at - now())) * 1000)::bigint,
                                          'nextRunAt', next_run_at)
                  ELSE jsonb_build_object('code', ${o.code}::text, 'message', ${o.message}::text,
                                          'reason', CASE WHEN ${o.retryable}::boolean THEN 'attempts_exhausted' ELSE 'terminal' END)
             END
        FROM failed
    )
    SELECT f.status, f.next_run_at, f.workflow_step_id,
           CASE WHEN s.status = 'FAILED' THEN s.workflow_run_id END AS step_run_id
      FROM failed f LEFT JOIN steps s ON s.id = f.workflow_step_id`;
}
