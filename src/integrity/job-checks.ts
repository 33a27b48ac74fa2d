/**
 * Integrity checks over one page of jobs (by id): two read-only statements
 * whatever the page size. Jobs are reached by primary key; their events
 * through job_events (job_id, seq); replay lineage through job_replays'
 * unique replay_job_id index and the source's primary key.
 *
 * Lease columns, from the queue's state machine (claim, heartbeat, release,
 * completion, reaping, cancellation):
 *   LEASED      owner and expiry set, attempt >= 1;
 *   otherwise   no owner, no heartbeat; an expiry only on a CANCELED job
 *               (the quiescence marker a canceled lease keeps).
 * A LEASED job has its live lease row (job_leases, by its expiry and id, with
 * its resource key: one primary-key probe); the reverse, a lease row without
 * its job, is lease-checks.ts's.
 * A job's run number is 1 + its REQUEUED events (requeue and a handler's
 * continuation, src/queue/continue.ts, are the only writers of run_number,
 * each with its REQUEUED event). A workflow job's execution resource and backoff are its step's (copied
 * when the job is inserted, never changed); at most one LEASED job per key is
 * the schema's unique index, so it needs no check here.
 *
 * Attempt history (runledger.job_attempt_history: the job row's attempt and
 * job_attempts rows, src/queue/attempt-row.ts): at most one open attempt per
 * job (a job_attempts row left open beside the job row's would be a second);
 * a LEASED job has exactly its lease's attempt open
 * (same run number, attempt and worker) and any other job none (a lease
 * granted before the job_attempts migration has no attempt row and is
 * reported until it ends); no attempt finishes before it starts or belongs to
 * a run the job has not reached. A job finishes no earlier than it was
 * created and started (time follows cause: a cancellation that waited for
 * the row writes the clock it read after the wait).
 */
import type { Tx } from '../client/types.js';
import type { ViolationRow } from './violations.js';

export async function checkJobs(tx: Tx, jobIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    WITH jobs AS MATERIALIZED (
      SELECT j.id, j.status, j.attempt, j.run_number, j.workflow_step_id, j.resource_key, s.resource_key AS step_resource_key,
             j.backoff_base_ms, j.backoff_max_ms, s.backoff_base_ms AS step_backoff_base_ms, s.backoff_max_ms AS step_backoff_max_ms,
             j.lease_owner, j.lease_expires_at, j.heartbeat_at,
             j.output IS NOT NULL AS has_output, j.finished_at IS NOT NULL AS has_finished_at,
             j.created_at, j.started_at, j.finished_at,
             s.id AS step_id, s.job_id AS step_job_id, s.workflow_run_id, s.step_key,
             ev.requeues, ev.replayed_from, lr.replay_job_id AS lineage_job_id,
             att.open_attempts, att.open_attempt, att.bad_attempts,
             EXISTS (SELECT 1 FROM runledger.job_leases l
                      WHERE l.expires_at = j.lease_expires_at AND l.job_id = j.id AND NOT l.canceled
                        AND l.resource_key IS NOT DISTINCT FROM j.resource_key) AS has_lease_row
        FROM unnest(${jobIds}::uuid[]) AS page(id)
        JOIN runledger.job_queue j ON j.id = page.id
        LEFT JOIN runledger.workflow_steps s ON s.id = j.workflow_step_id
        LEFT JOIN LATERAL (
          SELECT (count(*) FILTER (WHERE e.event_type = 'REQUEUED'))::int AS requeues,
                 (array_agg(e.payload ->> 'replayedFromJobId' ORDER BY e.seq) FILTER (WHERE e.event_type = 'ENQUEUED'))[1] AS replayed_from
            FROM runledger.job_events e
           WHERE e.job_id = j.id
        ) ev ON true
        LEFT JOIN runledger.job_replays lr ON lr.replay_job_id = j.id
        LEFT JOIN LATERAL (
          SELECT (count(*) FILTER (WHERE a.finished_at IS NULL))::int AS open_attempts,
                 (array_agg(jsonb_build_object('runNumber', a.run_number, 'attempt', a.attempt, 'workerId', a.worker_id) ORDER BY a.seq)
                    FILTER (WHERE a.finished_at IS NULL))[1] AS open_attempt,
                 jsonb_agg(jsonb_build_object('seq', a.seq, 'runNumber', a.run_number, 'startedAt', a.started_at, 'finishedAt', a.finished_at)
                           ORDER BY a.seq) FILTER (WHERE a.finished_at < a.started_at OR a.run_number > j.run_number) AS bad_attempts
            FROM runledger.job_attempt_history a
           WHERE a.job_id = j.id
        ) att ON true
    )
    SELECT 'job.lease_columns' AS kind, workflow_run_id, step_id, step_key, id AS job_id,
           CASE WHEN status = 'LEASED'
                THEN jsonb_build_object('leaseOwner', 'set', 'leaseExpiresAt', 'set', 'attempt', '>= 1')
                ELSE jsonb_build_object('leaseOwner', NULL, 'heartbeatAt', NULL,
                                        'leaseExpiresAt', CASE WHEN status = 'CANCELED' THEN 'null or the canceled lease''s expiry' END) END AS expected,
           jsonb_build_object('status', status, 'leaseOwner', lease_owner, 'leaseExpiresAt', lease_expires_at,
                              'heartbeatAt', heartbeat_at, 'attempt', attempt) AS found
      FROM jobs
     WHERE CASE WHEN status = 'LEASED' THEN lease_owner IS NULL OR lease_expires_at IS NULL OR attempt < 1
                ELSE lease_owner IS NOT NULL OR heartbeat_at IS NOT NULL
                     OR (lease_expires_at IS NOT NULL AND status <> 'CANCELED') END
    UNION ALL
    SELECT 'job.lease_row_missing', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('leaseRow', jsonb_build_object('expiresAt', lease_expires_at, 'resourceKey', resource_key)),
           jsonb_build_object('leaseRow', NULL)
      FROM jobs WHERE status = 'LEASED' AND NOT has_lease_row
    UNION ALL
    SELECT 'job.output_not_succeeded', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('output', NULL), jsonb_build_object('status', status, 'hasOutput', true)
      FROM jobs WHERE has_output AND status <> 'SUCCEEDED'
    UNION ALL
    SELECT 'job.finished_at', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('finishedAt', CASE WHEN status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED') THEN 'set' ELSE 'null' END),
           jsonb_build_object('status', status, 'finishedAt', CASE WHEN has_finished_at THEN 'set' ELSE 'null' END)
      FROM jobs WHERE has_finished_at <> (status IN ('SUCCEEDED', 'DEAD_LETTERED', 'CANCELED'))
    UNION ALL
    SELECT 'job.step_link_mismatch', workflow_run_id, workflow_step_id, step_key, id,
           jsonb_build_object('stepJobId', id),
           jsonb_build_object('workflowStepId', workflow_step_id, 'stepExists', step_id IS NOT NULL, 'stepJobId', step_job_id)
      FROM jobs WHERE workflow_step_id IS NOT NULL AND step_job_id IS DISTINCT FROM id
    UNION ALL
    SELECT 'job.resource_mismatch', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('resourceKey', step_resource_key), jsonb_build_object('resourceKey', resource_key)
      FROM jobs WHERE step_id IS NOT NULL AND resource_key IS DISTINCT FROM step_resource_key
    UNION ALL
    SELECT 'job.backoff_mismatch', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('backoffBaseMs', step_backoff_base_ms, 'backoffMaxMs', step_backoff_max_ms),
           jsonb_build_object('backoffBaseMs', backoff_base_ms, 'backoffMaxMs', backoff_max_ms)
      FROM jobs
     WHERE step_id IS NOT NULL
       AND (backoff_base_ms IS DISTINCT FROM step_backoff_base_ms OR backoff_max_ms IS DISTINCT FROM step_backoff_max_ms)
    UNION ALL
    SELECT 'job.run_number_mismatch', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('runNumber', 1 + requeues), jsonb_build_object('runNumber', run_number)
      FROM jobs WHERE run_number <> 1 + requeues
    UNION ALL
    SELECT 'job.attempt_open_count', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('openAttempts', '<= 1'), jsonb_build_object('openAttempts', open_attempts)
      FROM jobs WHERE open_attempts > 1
    UNION ALL
    SELECT 'job.attempt_lease_mismatch', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('openAttempt', CASE WHEN status = 'LEASED'
                                                  THEN jsonb_build_object('runNumber', run_number, 'attempt', attempt, 'workerId', lease_owner) END),
           jsonb_build_object('status', status, 'openAttempt', open_attempt)
      FROM jobs
     WHERE open_attempts <= 1
       AND open_attempt IS DISTINCT FROM CASE WHEN status = 'LEASED'
                                              THEN jsonb_build_object('runNumber', run_number, 'attempt', attempt, 'workerId', lease_owner) END
    UNION ALL
    SELECT 'job.finished_before_started', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('finishedAt', 'no earlier than createdAt and startedAt'),
           jsonb_build_object('createdAt', created_at, 'startedAt', started_at, 'finishedAt', finished_at)
      FROM jobs WHERE finished_at < created_at OR finished_at < started_at
    UNION ALL
    SELECT 'job.attempt_history', workflow_run_id, step_id, step_key, id,
           jsonb_build_object('attempts', 'finished no earlier than started, of a run the job reached'),
           jsonb_build_object('runNumber', run_number, 'attempts', bad_attempts)
      FROM jobs WHERE bad_attempts IS NOT NULL
    UNION ALL
    SELECT 'replay.lineage_missing', NULL, NULL, NULL, id,
           jsonb_build_object('lineage', jsonb_build_object('replayJobId', id, 'sourceJobId', replayed_from)),
           jsonb_build_object('lineage', NULL)
      FROM jobs WHERE replayed_from IS NOT NULL AND lineage_job_id IS NULL`;
}

/** job_replays rows whose replay job is in the page, against both jobs and the replay's ENQUEUED event. */
export async function checkReplayLineage(tx: Tx, jobIds: readonly string[]): Promise<ViolationRow[]> {
  return tx.$queryRaw<ViolationRow[]>`
    -- Each lookup is a LATERAL ... LIMIT 1 by a unique key, so it stays an index probe per row: as plain
    -- joins the planner merge-joined the whole job_queue primary key against the lineage table.
    WITH lineage AS (
      SELECT lr.source_job_id, lr.source_run_number, lr.replay_request_key, lr.replay_job_id,
             src.id AS src_id, src.job_type AS src_type, src.organization_id::text AS src_org, src.run_number AS src_run,
             src.workflow_step_id IS NOT NULL AS src_workflow,
             rj.job_type AS replay_type, rj.organization_id::text AS replay_org, rj.workflow_step_id IS NOT NULL AS replay_workflow,
             ev.payload AS event
        FROM unnest(${jobIds}::uuid[]) AS page(id)
        JOIN LATERAL (SELECT * FROM runledger.job_replays r WHERE r.replay_job_id = page.id LIMIT 1) lr ON true
        LEFT JOIN LATERAL (SELECT * FROM runledger.job_queue j WHERE j.id = lr.source_job_id LIMIT 1) src ON true
        LEFT JOIN LATERAL (SELECT * FROM runledger.job_queue j WHERE j.id = lr.replay_job_id LIMIT 1) rj ON true
        LEFT JOIN LATERAL (
          SELECT e.payload FROM runledger.job_events e
           WHERE e.job_id = lr.replay_job_id AND e.event_type = 'ENQUEUED'
           ORDER BY e.seq LIMIT 1
        ) ev ON true
    )
    SELECT 'replay.lineage' AS kind, NULL::uuid AS workflow_run_id, NULL::uuid AS step_id, NULL::text AS step_key,
           replay_job_id AS job_id,
           jsonb_build_object('sourceJobId', source_job_id, 'sourceRunNumber', source_run_number,
                              'replayRequestKey', replay_request_key, 'bothDirect', true, 'sameTypeAndOrganization', true,
                              'sourceRunNumberAtLeast', source_run_number) AS expected,
           jsonb_build_object('sourceExists', src_id IS NOT NULL, 'sourceRunNumber', src_run,
                              'sourceWorkflowManaged', src_workflow, 'replayWorkflowManaged', replay_workflow,
                              'sourceType', src_type, 'replayType', replay_type,
                              'sameOrganization', src_org IS NOT DISTINCT FROM replay_org,
                              'enqueuedEvent', event) AS found
      FROM lineage
     WHERE src_id IS NULL OR src_workflow OR replay_workflow
        OR src_type IS DISTINCT FROM replay_type OR src_org IS DISTINCT FROM replay_org
        OR src_run < source_run_number
        OR event IS NULL
        OR event ->> 'replayedFromJobId' IS DISTINCT FROM source_job_id::text
        OR event ->> 'replayedFromRunNumber' IS DISTINCT FROM source_run_number::text
        OR event ->> 'replayRequestKey' IS DISTINCT FROM replay_request_key`;
}
