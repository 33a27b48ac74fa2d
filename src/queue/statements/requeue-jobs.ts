/**
 * Requeue: a finished job's next run, PENDING now (src/replay/requeue.ts for one job, compare-and-requeue;
 * src/replay/bulk-requeue.ts for dead letters in bulk).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { CLEAR_LEASE } from '../../db/fragments.js';
import { JOB_AVAILABLE_CHANNEL } from '../../model/constants.js';
import { JOB_ROW_COLUMNS, type JobRow } from '../../model/job-rows.js';

/**
 * The SET list of a requeue (one job here, a batch in bulk-requeue.ts): the
 * next run starts PENDING now, at attempt 0, with no lease, outcome or error;
 * progress and checkpoint are kept unless the request resets them.
 */
export function requeueAssignments(reset: boolean): Sql {
  return sqltag`status = 'PENDING', run_number = jq.run_number + 1, attempt = 0, next_run_at = now(),
             ${CLEAR_LEASE},
             started_at = NULL, finished_at = NULL, output = NULL,
             last_error_code = NULL, last_error_message = NULL,
             progress = CASE WHEN ${reset}::boolean THEN NULL ELSE jq.progress END,
             checkpoint = CASE WHEN ${reset}::boolean THEN NULL ELSE jq.checkpoint END,
             updated_at = now()`;
}

/** Requeues the locked job `previous` (compare-and-requeue: its status and run number still as read), with its event. */
export function requeueJobStatement(previous: JobRow, statePolicy: string, reset: boolean, eventId: string): Sql {
  return sqltag`
    WITH requeued AS (
      UPDATE runledger.job_queue jq
         SET ${requeueAssignments(reset)}
       WHERE jq.id = ${previous.id}::uuid
         AND jq.status = ${previous.status}::runledger.job_status
         AND jq.run_number = ${previous.run_number}::int
      RETURNING ${JOB_ROW_COLUMNS}
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT ${eventId}::uuid, id, 'REQUEUED'::runledger.job_event_type, run_number, attempt,
             jsonb_build_object('previousRunNumber', ${previous.run_number}::int,
                                'previousStatus', ${previous.status}::text,
                                'statePolicy', ${statePolicy}::text,
                                'previousErrorCode', ${previous.last_error_code}::text,
                                'previousErrorMessage', ${previous.last_error_message}::text)
        FROM requeued
    ),
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, job_type))::int AS n FROM requeued
    )
    SELECT requeued.* FROM requeued CROSS JOIN notified`;
}

/** A dead letter a bulk requeue picked: its run and the error it ended with. */
export interface PickedDeadLetter {
  id: string;
  run_number: number;
  last_error_code: string | null;
  last_error_message: string | null;
}

/**
 * Requeues picked dead letters still DEAD_LETTERED at the run they were picked at (src/replay/bulk-requeue.ts),
 * one REQUEUED event each naming the operation, in pick order.
 */
export function requeueDeadLettersStatement(
  picked: readonly PickedDeadLetter[],
  eventIds: readonly string[],
  statePolicy: string,
  reset: boolean,
  operationId: string,
  reason: string,
  filter: string,
): Sql {
  return sqltag`
    WITH input AS (
      SELECT * FROM unnest(${picked.map((p) => p.id)}::uuid[], ${picked.map((p) => p.run_number)}::int[],
                           ${picked.map((p) => p.last_error_code)}::text[], ${picked.map((p) => p.last_error_message)}::text[],
                           ${eventIds as string[]}::uuid[], ${picked.map((_, i) => i)}::int[])
             AS t(id, run_number, error_code, error_message, event_id, ord)
    ),
    requeued AS (
      UPDATE runledger.job_queue jq
         SET ${requeueAssignments(reset)}
        FROM input i
       WHERE jq.id = i.id AND jq.status = 'DEAD_LETTERED' AND jq.run_number = i.run_number
      RETURNING jq.id, jq.job_type, jq.run_number, jq.attempt
    ),
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload)
      SELECT i.event_id, r.id, 'REQUEUED'::runledger.job_event_type, r.run_number, r.attempt,
             jsonb_build_object('previousRunNumber', i.run_number, 'previousStatus', 'DEAD_LETTERED',
                                'statePolicy', ${statePolicy}::text,
                                'previousErrorCode', i.error_code, 'previousErrorMessage', i.error_message,
                                'operationId', ${operationId}::text, 'reason', ${reason}::text,
                                'filter', ${filter}::jsonb)
        FROM requeued r JOIN input i ON i.id = r.id
       ORDER BY i.ord
    ),
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type))::int AS n FROM (SELECT DISTINCT job_type FROM requeued) t
    )
    SELECT r.id FROM requeued r JOIN input i ON i.id = r.id CROSS JOIN notified ORDER BY i.ord`;
}
