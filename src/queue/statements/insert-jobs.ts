/**
 * The shared job insert (src/queue/insert-jobs.ts builds its batch; every writer of new jobs goes through
 * it but the release cascade's, src/coordination/dependency-release.ts, and a workflow start's root jobs,
 * start-workflow-runs.ts, written by the statement that writes their steps).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { JOB_AVAILABLE_CHANNEL } from '../../model/constants.js';
import { concurrencyLimitWrites } from './concurrency-limits.js';
import { rateLimitWrites } from './rate-limits.js';

/** A keyed row inserted (`id`), or a type the catalog refused (`refused`). */
export interface InsertedRow {
  id: string | null;
  refused: string | null;
}

/**
 * Inserts the batch (one jsonb array of rows, src/queue/insert-jobs.ts's batchEntry) unless the catalog
 * `gate` refuses a type, with the ENQUEUED events that say more than the row, and wakes workers when `notify`.
 */
export function insertJobsStatement(
  batch: string,
  gate: 'off' | 'disabled' | 'strict',
  traceContext: string | null,
  at: string | null,
  notify: boolean,
  concurrency: boolean,
  rate: boolean,
): Sql {
  return sqltag`
    WITH input AS (
      SELECT i.id, i.job_type, i.organization_id, i.payload -> 'v' AS payload, i.priority, i.max_attempts, i.timeout_seconds,
             i.next_run_at, i.delay_ms, i.idempotency_key, i.enqueue_request, i.event_payload, i.event_id, i.workflow_step_id,
             i.resource_key, i.backoff_base_ms, i.backoff_max_ms, i.stage, i.ord, i.concurrency_key, i.concurrency_limit,
             i.rate_key, i.rate_limit, i.rate_period_ms, i.rate_burst, i.fair_key, i.fair_weight
        FROM jsonb_to_recordset(${batch}::jsonb)
             AS i(id uuid, job_type text, organization_id text, payload jsonb, priority int, max_attempts int, timeout_seconds int,
                  next_run_at timestamptz, delay_ms int, idempotency_key text, enqueue_request jsonb, event_payload jsonb,
                  event_id uuid, workflow_step_id uuid, resource_key text, backoff_base_ms int, backoff_max_ms int, stage text,
                  ord int, concurrency_key text, concurrency_limit int, rate_key text, rate_limit int,
                  rate_period_ms int, rate_burst int, fair_key text, fair_weight int)
    ),
    refused AS (
      SELECT DISTINCT i.job_type
        FROM input i
        LEFT JOIN runledger.job_definitions d ON d.job_type = i.job_type
       WHERE ${gate}::text <> 'off'
         AND (NOT d.enabled OR (d.job_type IS NULL AND ${gate}::text = 'strict'))
    ),
    inserted AS (
      INSERT INTO runledger.job_queue
             (id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds, next_run_at,
              idempotency_key, enqueue_request, workflow_step_id, resource_key, backoff_base_ms, backoff_max_ms, stage,
              concurrency_key, rate_key, fair_key, fair_weight, trace_context, created_at, updated_at)
      SELECT id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds,
             CASE WHEN delay_ms IS NOT NULL THEN c.at + delay_ms * interval '1 millisecond'
                  ELSE COALESCE(next_run_at, c.at) END,
             idempotency_key, enqueue_request, workflow_step_id, resource_key, backoff_base_ms, backoff_max_ms, stage,
             concurrency_key, rate_key, fair_key, fair_weight,
             CASE WHEN workflow_step_id IS NULL THEN ${traceContext}::jsonb END, c.at, c.at
        FROM input, (SELECT COALESCE(${at}::timestamptz, now()) AS at) c
       WHERE NOT EXISTS (SELECT 1 FROM refused)
       ORDER BY ord
      ON CONFLICT (job_type, COALESCE(organization_id, ''), idempotency_key)
         WHERE idempotency_key IS NOT NULL
      DO NOTHING
      RETURNING id, job_type, run_number, attempt, next_run_at, created_at, idempotency_key
    ),
    -- Only a batch naming a concurrency (rate) key has these (a statement shape of its own).
    -- The limits of the jobs inserted: a skipped duplicate's key has its row from its first enqueue.
    ${
      concurrency
        ? sqltag`inserted_input AS (SELECT i.concurrency_key, i.concurrency_limit FROM input i JOIN inserted ins ON ins.id = i.id),
    ${concurrencyLimitWrites('inserted_input', sqltag`true`)},`
        : sqltag``
    }
    ${
      rate
        ? sqltag`inserted_rates AS (SELECT i.rate_key, i.rate_limit, i.rate_period_ms, i.rate_burst FROM input i JOIN inserted ins ON ins.id = i.id),
    ${rateLimitWrites('inserted_rates')},`
        : sqltag``
    }
    events AS (
      INSERT INTO runledger.job_events (id, job_id, event_type, run_number, attempt, payload, created_at)
      SELECT i.event_id, ins.id, 'ENQUEUED'::runledger.job_event_type, ins.run_number, ins.attempt, i.event_payload, ins.created_at
        FROM inserted ins
        JOIN input i ON i.id = ins.id
       WHERE i.event_payload IS NOT NULL
    ),
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type))::int AS n
        FROM (SELECT DISTINCT job_type FROM inserted WHERE ${notify}::boolean AND next_run_at <= now()) t
    )
    -- Only keyed rows can be skipped (ON CONFLICT names the idempotency index; any other conflict is an error),
    -- so only their ids come back: a plain bulk enqueue reads back one row, not one per job.
    SELECT ins.id, NULL::text AS refused FROM notified LEFT JOIN inserted ins ON ins.idempotency_key IS NOT NULL
    UNION ALL
    SELECT NULL::uuid, job_type FROM refused`;
}
