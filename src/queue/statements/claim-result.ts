/**
 * What both claim statements (claim-jobs.ts, claim-lean.ts) return: the claimed rows in claim order, each with
 * what its handler needs, read from the statement's snapshot without locks.
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { FUNCTION_STEP_KEY } from '../../model/constants.js';

/**
 * A CTE `numbered` and the final SELECT over CTE `claimed`. `facts` is a one-row SELECT whose columns (the
 * statement's own: the fairness cursor, the lean claim's verdict) come with every row.
 */
export function claimResult(facts: Sql): Sql {
  return sqltag`
      numbered AS (
        SELECT claimed.*, row_number() OVER (ORDER BY priority DESC, next_run_at, id)::int AS n FROM claimed
      )
      -- A workflow job's step and its prerequisites' outcomes, for the handler context. The statement's snapshot
      -- holds them final: a job becomes PENDING in the transaction that made its prerequisites terminal, and
      -- terminal steps do not change.
      -- A direct job pays one probe of the primary key with NULL.
      -- Always one row at least: with no job claimed, one row of NULLs carrying the facts.
      SELECT c.id, c.run_number, c.attempt, c.lease_owner, c.lease_expires_at, c.job_type, c.organization_id, c.payload,
             c.checkpoint, c.progress, c.timeout_seconds, c.max_attempts, c.workflow_managed, c.resource_key, c.concurrency_key, c.rate_key, c.fair_key, c.stage,
             cur.*,
             s.workflow_run_id AS step_run_id, s.step_key, s.prerequisites, s.function_record,
             COALESCE(c.trace_context, s.run_trace_context) AS trace_context,
             (extract(epoch FROM now() - c.next_run_at) * 1000)::float8 AS queue_wait_ms
        FROM (${facts}) cur
        LEFT JOIN numbered c ON true
        LEFT JOIN LATERAL (
          SELECT ws.workflow_run_id, ws.step_key,
                 COALESCE((
                   SELECT jsonb_agg(jsonb_build_object(
                            'key', p.step_key, 'status', p.status, 'releaseMode', d.release_mode, 'jobType', p.job_type,
                            'output', CASE WHEN p.status = 'SUCCEEDED' THEN p.output END) ORDER BY p.step_key)
                     FROM runledger.workflow_step_dependencies d
                     JOIN runledger.workflow_steps p ON p.id = d.prerequisite_step_id
                    WHERE d.dependent_step_id = ws.id), '[]'::jsonb) AS prerequisites,
                 (SELECT wr.trace_context FROM runledger.workflow_runs wr WHERE wr.id = ws.workflow_run_id) AS run_trace_context,
                 -- A durable function's body: the run's recorded steps, so its attempt starts without a read
                 -- (claimed-function-record.ts). Only its own lease writes them, and the lease is this claim's.
                 CASE WHEN ws.step_key = ${FUNCTION_STEP_KEY} THEN (
                   SELECT jsonb_build_object(
                            'now', extract(epoch FROM clock_timestamp()) * 1000,
                            'steps', COALESCE(jsonb_agg(jsonb_build_array(fs.step_key, fs.call_index, fs.output) ORDER BY fs.call_index), '[]'::jsonb))
                     FROM runledger.workflow_steps fs
                    WHERE fs.workflow_run_id = ws.workflow_run_id AND fs.execution_kind = 'FUNCTION'
                 ) END AS function_record
            FROM runledger.workflow_steps ws
           WHERE ws.id = c.workflow_step_id
        ) s ON true
       ORDER BY c.n`;
}
