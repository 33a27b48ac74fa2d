/**
 * Starting workflow runs (src/workflow/enqueue.ts builds the three jsonb batches): every run (a key that
 * exists already, or twice in the batch, is skipped), and for the runs inserted their steps, their edges and
 * their root jobs, then the wake-up NOTIFY of the root jobs' types, as insert-jobs.ts sends it. One statement,
 * so a single run on a root client autocommits it. Steps and edges of a skipped run are dropped by the join on
 * the runs inserted. Steps that leave a setting to the catalog take their job type's default here
 * (src/workflow/catalog-defaults.ts), on the step and on its root job. Foreign keys: the plain ones are
 * checked at the end of the statement, the job <-> step link at commit; both see every row it wrote. Locks:
 * none beyond the new rows' (and a wait on a concurrent insert of the same idempotency key).
 */
import { sqltag, type Sql } from '@prisma/client/runtime/client';
import { JOB_AVAILABLE_CHANNEL } from '../../model/constants.js';
import { concurrencyLimitWrites } from './concurrency-limits.js';
import { rateLimitWrites } from './rate-limits.js';

/** Returns the ids of the runs inserted. */
export function startWorkflowRunsStatement(
  runs: string,
  steps: string,
  edges: string,
  traceContext: string | null,
  carriedReason: string,
  concurrency: boolean,
  rate: boolean,
  notify: boolean,
): Sql {
  return sqltag`
    WITH run_input AS (
      SELECT * FROM jsonb_to_recordset(${runs}::jsonb)
             AS r(id uuid, workflow_type text, organization_id text, status text, metadata jsonb, idempotency_key text,
                  enqueue_request jsonb, result_step_key text, ord int)
    ),
    runs AS (
      INSERT INTO runledger.workflow_runs
             (id, workflow_type, organization_id, status, metadata, idempotency_key, enqueue_request, result_step_key, trace_context)
      SELECT id, workflow_type, organization_id, status::runledger.workflow_run_status, metadata, idempotency_key, enqueue_request,
             result_step_key, ${traceContext}::jsonb
        FROM run_input
       ORDER BY ord
      ON CONFLICT (workflow_type, COALESCE(organization_id, ''), idempotency_key)
         WHERE idempotency_key IS NOT NULL
      DO NOTHING
      RETURNING id
    ),
    steps AS (
      SELECT s.id, s.run_id, s.organization_id, s.step_key, s.kind, s.job_type, s.payload -> 'v' AS payload,
             CASE WHEN d.job_type IS NOT NULL AND s.inherits ? 'priority' THEN d.default_priority ELSE s.priority END AS priority,
             CASE WHEN d.job_type IS NOT NULL AND s.inherits ? 'maxAttempts' THEN d.default_max_attempts ELSE s.max_attempts END AS max_attempts,
             CASE WHEN d.job_type IS NOT NULL AND s.inherits ? 'timeoutSeconds' THEN d.default_timeout_seconds ELSE s.timeout_seconds END
               AS timeout_seconds,
             s.resource_key, s.concurrency_key, s.concurrency_limit, s.rate_key, s.rate_limit, s.rate_period_ms, s.rate_burst,
             s.fair_key, s.fair_weight, s.backoff_base_ms, s.backoff_max_ms, s.stage,
             COALESCE(s.allow_continuation, false) AS allow_continuation, s.job_id, s.deps, s.pending, COALESCE(s.carried, false) AS carried, s.output, s.ord
        FROM jsonb_to_recordset(${steps}::jsonb)
             AS s(id uuid, run_id uuid, organization_id text, step_key text, kind text, job_type text, payload jsonb, priority int,
                  max_attempts int, timeout_seconds int, resource_key text, concurrency_key text, concurrency_limit int,
                  rate_key text, rate_limit int, rate_period_ms int, rate_burst int, fair_key text, fair_weight int,
                  backoff_base_ms int, backoff_max_ms int, stage text,
                  allow_continuation boolean, job_id uuid, deps int, pending int, carried boolean, output jsonb, inherits jsonb, ord int)
        JOIN runs ON runs.id = s.run_id
        LEFT JOIN runledger.job_definitions d ON s.inherits IS NOT NULL AND d.job_type = s.job_type
    ),
    jobs AS (
      INSERT INTO runledger.job_queue
             (id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds, next_run_at, workflow_step_id,
              resource_key, concurrency_key, rate_key, fair_key, fair_weight, backoff_base_ms, backoff_max_ms, stage, created_at, updated_at)
      SELECT job_id, job_type, organization_id, payload, priority, max_attempts, timeout_seconds, now(), id,
             resource_key, concurrency_key, rate_key, fair_key, fair_weight, backoff_base_ms, backoff_max_ms, stage, now(), now()
        FROM steps
       WHERE job_id IS NOT NULL
       ORDER BY ord
      RETURNING job_type
    ),
    step_rows AS (
      INSERT INTO runledger.workflow_steps
             (id, workflow_run_id, step_key, execution_kind, job_type, organization_id, payload, priority, max_attempts,
              timeout_seconds, resource_key, concurrency_key, rate_key, fair_key, fair_weight, backoff_base_ms, backoff_max_ms, stage, allow_continuation, status,
              job_id, released_at,
              dependency_count_total, dependency_count_pending, output, finished_at, status_reason)
      SELECT id, run_id, step_key, kind::runledger.workflow_step_execution_kind, job_type, organization_id, payload, priority,
             max_attempts, timeout_seconds, resource_key, concurrency_key, rate_key, fair_key, fair_weight, backoff_base_ms, backoff_max_ms, stage,
             allow_continuation,
             CASE WHEN carried THEN 'SUCCEEDED' WHEN pending > 0 THEN 'BLOCKED' WHEN kind = 'EXTERNAL' THEN 'WAITING_FOR_EXTERNAL'
                  ELSE 'ENQUEUED' END::runledger.workflow_step_status,
             job_id, CASE WHEN pending = 0 THEN now() END, deps, pending,
             CASE WHEN carried THEN output END, CASE WHEN carried THEN now() END, CASE WHEN carried THEN ${carriedReason} END
        FROM steps
       ORDER BY ord
    ),
    -- Only a start naming a concurrency (rate) key has these (a statement shape of its own): the rows of every
    -- step's key, a step released later included, so its job finds the row.
    ${concurrency ? sqltag`${concurrencyLimitWrites('steps', sqltag`true`)},` : sqltag``}
    ${rate ? sqltag`${rateLimitWrites('steps')},` : sqltag``}
    edge_rows AS (
      INSERT INTO runledger.workflow_step_dependencies (prerequisite_step_id, dependent_step_id, workflow_run_id, release_mode)
      SELECT e.prerequisite, e.dependent, e.run_id, e.mode::runledger.workflow_dependency_release_mode
        FROM jsonb_to_recordset(${edges}::jsonb) AS e(prerequisite uuid, dependent uuid, run_id uuid, mode text)
        JOIN runs ON runs.id = e.run_id
    ),
    notified AS (
      SELECT count(pg_notify(${JOB_AVAILABLE_CHANNEL}, t.job_type))::int AS n FROM (SELECT DISTINCT job_type FROM jobs WHERE ${notify}::boolean) t
    )
    SELECT runs.id FROM runs CROSS JOIN notified`;
}
