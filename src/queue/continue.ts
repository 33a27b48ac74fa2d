/**
 * Continuation: a handler ends a slice of a long job and asks for the next
 * (`continueNow` / `continueAfter`, src/job/continuation.ts). One
 * statement for a whole batch of leases, fenced like every lifecycle write:
 *
 *   LEASED -> PENDING   run_number + 1, attempt 0, next_run_at = now + delay,
 *                       checkpoint and progress as given (else kept),
 *                       a REQUEUED event (kind HANDLER_CONTINUATION, run
 *                       number of the new run, the checkpoint and progress),
 *                       the attempt closed CONTINUED, a wake-up when due now.
 *
 * A workflow job's step stays live: RUNNING -> ENQUEUED (status reason
 * `job.continued`), so its dependents stay blocked until a slice ends the
 * job. Only steps that opted in at enqueue (`allow_continuation`); a
 * workflow job whose step did not is left LEASED and reported
 * `not_enabled`, for the worker to fail terminally
 * (`job.workflow_handler_continuation_not_enabled`).
 *
 * A continuation is not a failure: the attempt counter starts again, so the
 * next slice has its whole failure budget, and any number of slices may
 * follow each other. The run number counts slices (the first is run 1) as it
 * counts requeues: both are REQUEUED events (the integrity checker's
 * `run_number = 1 + REQUEUED events`).
 *
 * Lock order: job rows in id order (rung 1), then their step rows (rung 2a,
 * through an InitPlan over the updated jobs); no release lock (nothing is
 * released). The execution resource is released by the status change itself
 * (src/queue/claim.ts: the LEASED row is the reservation).
 */
import { sqltag } from '@prisma/client/runtime/client';
import { withStatement } from '../client/transaction.js';
import type { Db, Tx } from '../client/types.js';
import { JOB_AVAILABLE_CHANNEL } from '../model/constants.js';
import { newIds } from '../db/ids.js';
import type { JsonValue } from '../model/json.js';
import { LIVE_JOB_STEP, stepStartedAt } from '../coordination/step-state.js';
import { ATTEMPT_COLUMNS, CLEAR_ATTEMPT, archiveAttempts } from './attempt-row.js';
import { leaseMismatch, type LeaseIdentity } from './lease.js';
import { ConflictError } from '../errors/runledger-error.js';
import { parseInput } from '../validation/parse.js';
import { continueJobInputSchema, JOB_INVALID_INPUT, type ContinueJobInput } from './inputs.js';
import { jsonParam } from '../model/job-rows.js';
import { CLEAR_LEASE } from '../db/fragments.js';

export const CONTINUED_STEP_REASON = 'job.continued';

export interface ContinueJobItem {
  lease: LeaseIdentity;
  /** 0: runnable at once. */
  delayMs: number;
  /** undefined: keep the stored checkpoint (a `saveCheckpoint` of this slice, or an earlier one's). */
  checkpoint?: JsonValue | null | undefined;
  /** undefined: keep the stored progress. */
  progress?: JsonValue | null | undefined;
}

export type ContinueJobOutcome =
  | { jobId: string; outcome: 'continued'; runNumber: number; nextRunAt: Date }
  | { jobId: string; outcome: 'not_enabled' }
  | { jobId: string; outcome: 'lease_owner_mismatch' };

interface ContinuedRow {
  id: string;
  run_number: number | null;
  next_run_at: Date | null;
  not_enabled: boolean;
}

/** Continues a batch of leases in one statement (autocommit on a root client); outcomes in input order. */
export async function continueJobs(db: Db, items: readonly ContinueJobItem[]): Promise<ContinueJobOutcome[]> {
  if (items.length === 0) return [];
  const rows = await withStatement(db, 'continue jobs', (client) => continueStatement(client, items, newIds(items.length)));
  const byId = new Map(rows.map((row) => [row.id.toLowerCase(), row]));
  return items.map(({ lease }) => {
    const row = byId.get(lease.jobId.toLowerCase());
    if (row?.not_enabled) return { jobId: lease.jobId, outcome: 'not_enabled' };
    if (row && row.run_number !== null && row.next_run_at !== null)
      return { jobId: lease.jobId, outcome: 'continued', runNumber: row.run_number, nextRunAt: row.next_run_at };
    return { jobId: lease.jobId, outcome: 'lease_owner_mismatch' };
  });
}

/**
 * Ends this slice of a long job and schedules the next, for a hand-written
 * loop (a handler returns `continueNow()` / `continueAfter(ms)` instead): the
 * job goes back to PENDING as run number + 1, attempt 0, runnable after
 * `delayMs` (default 0), keeping its checkpoint and progress unless `save`
 * gives new ones (null clears). One fenced statement, as the worker's.
 * `job.lease_owner_mismatch` once the lease is gone;
 * `job.continuation_not_enabled` for a workflow job whose
 * step did not opt in (`allowContinuation`), which stays LEASED for the
 * caller to fail. Nothing is written by a refusal.
 *
 * @example
 * const next = await continueJob(prisma, { ...job, delayMs: 5_000, save: { checkpoint: { cursor } } });
 */
export async function continueJob(db: Db, input: ContinueJobInput): Promise<{ jobId: string; runNumber: number; nextRunAt: Date }> {
  const parsed = parseInput(continueJobInputSchema, input, JOB_INVALID_INPUT);
  const lease = { jobId: parsed.jobId, runNumber: parsed.runNumber, attempt: parsed.attempt, workerId: parsed.workerId };
  const [outcome] = await continueJobs(db, [{ lease, delayMs: parsed.delayMs ?? 0, checkpoint: parsed.save?.checkpoint, progress: parsed.save?.progress }]);
  if (outcome!.outcome === 'continued') return { jobId: parsed.jobId, runNumber: outcome!.runNumber, nextRunAt: outcome!.nextRunAt };
  if (outcome!.outcome === 'not_enabled') {
    throw new ConflictError('job.continuation_not_enabled', "The job's workflow step does not allow continuation.", {
      internalMessage: `continue job: step of job ${lease.jobId} has allow_continuation = false`,
      details: { jobId: lease.jobId },
    });
  }
  throw leaseMismatch(lease, 'continue job');
}

async function continueStatement(client: Tx, items: readonly ContinueJobItem[], eventIds: readonly string[]): Promise<ContinuedRow[]> {
  const leases = items.map((item) => item.lease);
  return client.$queryRaw<ContinuedRow[]>`
    WITH input AS (
      SELECT *
        FROM unnest(${leases.map((l) => l.jobId)}::uuid[], ${leases.map((l) => l.runNumber)}::int[],
                    ${leases.map((l) => l.attempt)}::int[], ${leases.map((l) => l.workerId)}::text[],
                    ${items.map((i) => i.delayMs)}::bigint[],
                    ${items.map((i) => i.checkpoint !== undefined)}::boolean[], ${items.map((i) => jsonParam(i.checkpoint))}::jsonb[],
                    ${items.map((i) => i.progress !== undefined)}::boolean[], ${items.map((i) => jsonParam(i.progress))}::jsonb[],
                    ${eventIds as string[]}::uuid[])
             AS i(job_id, run_number, attempt, worker_id, delay_ms, set_checkpoint, checkpoint, set_progress, progress, event_id)
    ),
    -- Rung 1: the batch's job rows in id order, one primary-key probe per lease, carrying the lease's input
    -- (as the completion statement, complete.ts, and for the same reason: no join rescans a CTE per row).
    locked AS MATERIALIZED (
      SELECT jq.id, jq.workflow_step_id, ${ATTEMPT_COLUMNS},
             jq.workflow_step_id IS NULL
               OR COALESCE((SELECT ws.allow_continuation FROM runledger.workflow_steps ws WHERE ws.id = jq.workflow_step_id), false) AS allowed,
             i.attempt AS slice_attempt, i.delay_ms, i.set_checkpoint, i.checkpoint AS new_checkpoint,
             i.set_progress, i.progress AS new_progress, i.event_id, i.worker_id
        FROM input i
        JOIN runledger.job_queue jq ON jq.id = i.job_id
       WHERE jq.run_number = i.run_number AND jq.attempt = i.attempt AND jq.lease_owner = i.worker_id
       ORDER BY jq.id
         FOR UPDATE OF jq
    ),
    -- Read once the locks are held (the lease clock, lifecycle.ts).
    clock AS MATERIALIZED (SELECT clock_timestamp() AS at FROM (SELECT count(*) FROM locked) l),
    continued AS (
      UPDATE runledger.job_queue jq
         SET status = 'PENDING', run_number = jq.run_number + 1, attempt = 0,
             next_run_at = c.at + k.delay_ms * interval '1 millisecond',
             checkpoint = CASE WHEN k.set_checkpoint THEN k.new_checkpoint ELSE jq.checkpoint END,
             progress = CASE WHEN k.set_progress THEN k.new_progress ELSE jq.progress END,
             ${CLEAR_LEASE},
             last_error_code = NULL, last_error_message = NULL, updated_at = c.at, ${CLEAR_ATTEMPT}
        FROM locked k, clock c
       -- Locked with the lease matched; what can have changed since is the clock.
       WHERE jq.id = k.id AND k.allowed
         AND jq.status::text = 'LEASED' AND jq.lease_expires_at > c.at
      RETURNING jq.id, jq.job_type, jq.run_number, jq.next_run_at, jq.checkpoint, jq.progress, jq.workflow_step_id,
                k.slice_attempt, k.delay_ms, k.event_id, k.worker_id
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT event_id, id, 'REQUEUED'::runledger.job_event_type, run_number, 0,
             jsonb_build_object('kind', 'HANDLER_CONTINUATION', 'previousRunNumber', run_number - 1,
                                'previousAttempt', slice_attempt, 'workerId', worker_id, 'delayMs', delay_ms,
                                'nextRunAt', next_run_at, 'checkpoint', checkpoint, 'progress', progress)
        FROM continued
       ORDER BY id
    ),
    -- The slice's attempt moves into job_attempts (src/queue/attempt-row.ts), as run_number - 1.
    ended AS (SELECT c.run_number - 1 AS run_number, c.slice_attempt AS attempt, c.next_run_at, k.*
                FROM continued c JOIN locked k ON k.id = c.id),
    attempts AS (${archiveAttempts(sqltag`ended`, {
      finishedAt: sqltag`(SELECT at FROM clock)`,
      outcome: sqltag`'CONTINUED'`,
      nextRunAt: sqltag`o.next_run_at`,
      requestedNextRunAt: sqltag`o.next_run_at`,
    })}),
    -- Rung 2a: the steps stay live, waiting for the next slice.
    steps AS (
      UPDATE runledger.workflow_steps ws
         SET status = 'ENQUEUED', status_reason = ${CONTINUED_STEP_REASON}, last_error_code = NULL, last_error_message = NULL,
             started_at = ${stepStartedAt(sqltag`(SELECT k.attempt_started_at FROM locked k WHERE k.id = ws.job_id)`)},
             output = NULL, updated_at = now()
       WHERE ws.id = ANY(ARRAY(SELECT workflow_step_id FROM continued WHERE workflow_step_id IS NOT NULL))
         AND ws.status IN ${LIVE_JOB_STEP}
    ),
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type)) AS n
        FROM (SELECT DISTINCT job_type FROM continued WHERE delay_ms = 0) t
    )
    SELECT c.id, c.run_number, c.next_run_at, false AS not_enabled FROM continued c CROSS JOIN notified
    UNION ALL
    SELECT l.id, NULL, NULL, true FROM locked l
     WHERE NOT l.allowed
       AND EXISTS (SELECT 1 FROM runledger.job_queue jq JOIN input i ON i.job_id = jq.id
                    WHERE jq.id = l.id AND jq.status = 'LEASED' AND jq.lease_expires_at > (SELECT at FROM clock))`;
}
